/* Metadata snapshots (controller/metadata_snapshot.h): an image written as
 * a snapshot file (Kafka's name, header and footer control batches) and
 * rebuilt from it the same; the leader's chunks and its errors; a fetched
 * snapshot assembled from chunks; a damaged or cut-short file refused with
 * its reason; the quorum log starting after a snapshot, its segments
 * below deleted, and a fetched one replacing the whole log; the voter set
 * a snapshot carries under kraft.version 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "controller/metadata_image.h"
#include "controller/metadata_snapshot.h"
#include "controller/quorum_log.h"
#include "core/error.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "support/log_fixture.h"

static const int32_t VOTERS[] = { 0, 1, 2 };

static int apply(void *ctx, int64_t offset, const kiq_metadata_record_t *r)
{
    return kiq_metadata_image_apply(ctx, offset, r);
}

/* An image of two brokers (one fenced), a topic of three partitions and
 * a config, with producer ids given out. */
static kiq_metadata_image_t *sample_image(void)
{
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    kiq_metadata_record_t r;
    int64_t at = 0;
    for (int32_t id = 1; id <= 2; id++) {
        kiq_metadata_record_init(&r, KIQ_MR_REGISTER_BROKER);
        r.m.register_broker.broker_id = id;
        r.m.register_broker.broker_epoch = 10 + id;
        kiq_register_broker_record_end_points_t ep;
        kiq_register_broker_record_end_points_init(&ep);
        ep.name = KIQ_STR("PLAINTEXT");
        ep.host = KIQ_STR("127.0.0.1");
        ep.port = (uint16_t)(9000 + id);
        r.m.register_broker.end_points = &ep;
        r.m.register_broker.end_points_n = 1;
        r.m.register_broker.rack = id == 1 ? KIQ_STR("r1") : KIQ_STR_NULL;
        r.m.register_broker.fenced = id == 2;
        assert_int_equal(kiq_metadata_image_apply(img, at++, &r), 0);
    }
    kiq_metadata_record_init(&r, KIQ_MR_TOPIC);
    r.m.topic.name = KIQ_STR("orders");
    r.m.topic.topic_id.b[3] = 7;
    assert_int_equal(kiq_metadata_image_apply(img, at++, &r), 0);
    int32_t replicas[] = { 1, 2 }, isr[] = { 1 };
    for (int32_t p = 0; p < 3; p++) {
        kiq_metadata_record_init(&r, KIQ_MR_PARTITION);
        r.m.partition.partition_id = p;
        r.m.partition.topic_id.b[3] = 7;
        r.m.partition.replicas = replicas;
        r.m.partition.replicas_n = 2;
        r.m.partition.isr = isr;
        r.m.partition.isr_n = 1;
        r.m.partition.leader = 1;
        r.m.partition.leader_epoch = p + 3;
        r.m.partition.partition_epoch = p + 5;
        assert_int_equal(kiq_metadata_image_apply(img, at++, &r), 0);
    }
    kiq_metadata_record_init(&r, KIQ_MR_CONFIG);
    r.m.config.resource_type = 2;
    r.m.config.resource_name = KIQ_STR("orders");
    r.m.config.name = KIQ_STR("retention.ms");
    r.m.config.value = KIQ_STR("1000");
    assert_int_equal(kiq_metadata_image_apply(img, at++, &r), 0);
    kiq_metadata_record_init(&r, KIQ_MR_PRODUCER_IDS);
    r.m.producer_ids.next_producer_id = 5000;
    assert_int_equal(kiq_metadata_image_apply(img, at++, &r), 0);
    return img;
}

/* Both images hold the same brokers, topics, partitions and configs. */
static void assert_same_image(const kiq_metadata_image_t *a, const kiq_metadata_image_t *b)
{
    assert_int_equal(kiq_metadata_image_broker_count(a), kiq_metadata_image_broker_count(b));
    for (size_t i = 0; i < kiq_metadata_image_broker_count(a); i++) {
        const kiq_broker_registration_t *x = kiq_metadata_image_broker_at(a, i), *y = kiq_metadata_image_broker_at(b, i);
        assert_true(x->id == y->id && x->epoch == y->epoch && x->fenced == y->fenced);
        assert_int_equal(x->nendpoints, y->nendpoints);
        assert_string_equal(x->endpoints[0].host, y->endpoints[0].host);
        assert_int_equal(x->endpoints[0].port, y->endpoints[0].port);
        assert_true((x->rack == NULL) == (y->rack == NULL));
    }
    assert_int_equal(kiq_metadata_image_topic_count(a), kiq_metadata_image_topic_count(b));
    const kiq_topic_image_t *ta = kiq_metadata_image_topic_at(a, 0), *tb = kiq_metadata_image_topic_at(b, 0);
    assert_string_equal(ta->name, tb->name);
    assert_memory_equal(&ta->id, &tb->id, sizeof ta->id);
    assert_int_equal(ta->npartitions, tb->npartitions);
    for (int32_t p = 0; p < ta->npartitions; p++) {
        const kiq_partition_registration_t *x = &ta->partitions[p], *y = &tb->partitions[p];
        assert_true(x->leader == y->leader && x->leader_epoch == y->leader_epoch &&
                    x->partition_epoch == y->partition_epoch && x->nreplicas == y->nreplicas && x->nisr == y->nisr);
        assert_memory_equal(x->replicas, y->replicas, (size_t)x->nreplicas * sizeof *x->replicas);
    }
    assert_int_equal(kiq_metadata_image_config_count(a), kiq_metadata_image_config_count(b));
    assert_string_equal(kiq_metadata_image_config(b, 2, "orders", "retention.ms"), "1000");
    assert_int_equal(kiq_metadata_image_next_producer_id(a), kiq_metadata_image_next_producer_id(b));
}

static void write_image(const char *dir, kiq_raft_epoch_end_t id, const kiq_metadata_image_t *img)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    if (kiq_snapshot_write(dir, id, 1234, NULL, rs, n) != 0)
        fail_msg("write: %s", kiq_error_get());
    kiq_arena_reset(&a);
}

static uint8_t *file_bytes(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc(*len + 1);
    assert_int_equal(fread(buf, 1, *len, fp), *len);
    fclose(fp);
    return buf;
}

static void put_bytes(const char *path, const uint8_t *p, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(p, 1, len, fp), len);
    fclose(fp);
}

static void test_round_trip(void **state)
{
    char dir[128], path[512];
    assert_int_equal(kiq_test_temp_dir(dir, sizeof dir, "snapshot"), 0);
    kiq_metadata_image_t *img = sample_image();
    kiq_raft_epoch_end_t id = { 3, 42 };
    write_image(dir, id, img);
    /* Kafka's name */
    snprintf(path, sizeof path, "%s/00000000000000000042-0000000003.checkpoint", dir);
    assert_int_equal(access(path, F_OK), 0);
    kiq_raft_epoch_end_t ids[4];
    assert_int_equal(kiq_snapshot_list(dir, ids, 4), 1);
    assert_true(ids[0].end_offset == 42 && ids[0].epoch == 3);

    /* header first and footer last, as control batches stamped with the epoch */
    size_t len;
    uint8_t *bytes = file_bytes(path, &len);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, bytes, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int batches = 0, last_type = -1;
    while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
        assert_int_equal(h.partition_leader_epoch, 3);
        int type = kiq_batch_is_control(&h) ? kiq_batch_control_type(batch, blen) : -1;
        if (batches++ == 0)
            assert_int_equal(type, KIQ_CONTROL_SNAPSHOT_HEADER);
        last_type = type;
    }
    assert_int_equal(last_type, KIQ_CONTROL_SNAPSHOT_FOOTER);
    assert_true(batches >= 3);

    kiq_metadata_image_t *back = kiq_metadata_image_new();
    if (kiq_snapshot_load(dir, id, apply, back) != 0)
        fail_msg("load: %s", kiq_error_get());
    assert_same_image(img, back);
    /* the rebuilt image stands at the snapshot's end */
    assert_int_equal(kiq_metadata_image_offset(back), 41);

    /* the leader's chunks put together again by a follower, elsewhere */
    char dir2[128];
    assert_int_equal(kiq_test_temp_dir(dir2, sizeof dir2, "snapshot-fetched"), 0);
    kiq_arena_t a;
    kiq_arena_init(&a);
    int64_t pos = 0, size = 0;
    while (pos < (int64_t)len) {
        const uint8_t *data;
        int32_t n;
        assert_int_equal(kiq_snapshot_read_chunk(dir, id, pos, 50, &a, &data, &n, &size), 0);
        assert_int_equal(size, (int64_t)len);
        assert_true(n > 0 && n <= 50);
        assert_int_equal(kiq_snapshot_part_write(dir2, id, pos, data, (size_t)n), 0);
        pos += n;
    }
    assert_int_equal(kiq_snapshot_part_finish(dir2, id, size), 0);
    kiq_metadata_image_t *fetched = kiq_metadata_image_new();
    assert_int_equal(kiq_snapshot_load(dir2, id, apply, fetched), 0);
    assert_same_image(img, fetched);

    /* the leader's errors */
    const uint8_t *data;
    int32_t n;
    kiq_raft_epoch_end_t other = { 3, 43 };
    assert_int_equal(kiq_snapshot_read_chunk(dir, other, 0, 50, &a, &data, &n, &size), KIQ_ERR_SNAPSHOT_NOT_FOUND);
    assert_int_equal(kiq_snapshot_read_chunk(dir, id, (int64_t)len, 50, &a, &data, &n, &size),
                     KIQ_ERR_POSITION_OUT_OF_RANGE);
    assert_int_equal(kiq_snapshot_read_chunk(dir, id, -1, 50, &a, &data, &n, &size), KIQ_ERR_POSITION_OUT_OF_RANGE);
    /* a fetch whose size is not the leader's is refused and leaves nothing */
    assert_int_equal(kiq_snapshot_part_write(dir2, other, 0, bytes, len - 1), 0);
    assert_int_equal(kiq_snapshot_part_finish(dir2, other, (int64_t)len), -1);
    assert_non_null(strstr(kiq_error_get(), "bytes"));
    assert_int_equal(kiq_snapshot_list(dir2, ids, 4), 1);

    kiq_arena_reset(&a);
    free(bytes);
    kiq_metadata_image_free(img);
    kiq_metadata_image_free(back);
    kiq_metadata_image_free(fetched);
    kiq_test_remove_tree(dir);
    kiq_test_remove_tree(dir2);
}

static void test_damaged_refused(void **state)
{
    char dir[128], path[512];
    assert_int_equal(kiq_test_temp_dir(dir, sizeof dir, "snapshot-damaged"), 0);
    kiq_metadata_image_t *img = sample_image();
    kiq_raft_epoch_end_t id = { 1, 9 };
    write_image(dir, id, img);
    assert_int_equal(kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX), 0);
    size_t len;
    uint8_t *bytes = file_bytes(path, &len);
    kiq_metadata_image_t *back = kiq_metadata_image_new();

    /* cut short: the footer missing */
    put_bytes(path, bytes, len - 5);
    assert_int_equal(kiq_snapshot_load(dir, id, apply, back), -1);
    assert_non_null(strstr(kiq_error_get(), "not a whole snapshot"));
    assert_non_null(strstr(kiq_error_get(), "00000000000000000009-0000000001.checkpoint"));
    /* cut at a batch boundary: no footer */
    kiq_batch_header_t h;
    assert_int_equal(kiq_batch_header_parse(bytes, len, &h), 0);
    put_bytes(path, bytes, kiq_batch_size(&h));
    assert_int_equal(kiq_snapshot_parse(bytes, kiq_batch_size(&h), id, NULL, NULL), -1);
    assert_non_null(strstr(kiq_error_get(), "SnapshotFooter"));
    /* a flipped byte in a record: its CRC */
    uint8_t *bad = malloc(len);
    memcpy(bad, bytes, len);
    bad[len / 2] ^= 0xff;
    assert_int_equal(kiq_snapshot_parse(bad, len, id, NULL, NULL), -1);
    assert_non_null(strstr(kiq_error_get(), "CRC"));
    /* no header: the body alone */
    assert_int_equal(kiq_snapshot_parse(bytes + kiq_batch_size(&h), len - kiq_batch_size(&h), id, NULL, NULL), -1);
    /* empty */
    assert_int_equal(kiq_snapshot_parse(bytes, 0, id, NULL, NULL), -1);
    assert_non_null(strstr(kiq_error_get(), "empty"));
    /* whole again: loads (into a new image: a failed load may have applied a part) */
    put_bytes(path, bytes, len);
    kiq_metadata_image_free(back);
    back = kiq_metadata_image_new();
    assert_int_equal(kiq_snapshot_load(dir, id, apply, back), 0);
    assert_same_image(img, back);
    free(bad);
    free(bytes);
    kiq_metadata_image_free(img);
    kiq_metadata_image_free(back);
    kiq_test_remove_tree(dir);
}

/* A batch of one TopicRecord at offset `at`. */
static void append_topic(kiq_quorum_log_t *l, int64_t at, int32_t epoch)
{
    kiq_metadata_record_t r;
    kiq_metadata_record_init(&r, KIQ_MR_TOPIC);
    char name[32];
    snprintf(name, sizeof name, "topic-with-a-long-name-%lld", (long long)at);
    r.m.topic.name = (kiq_str_t){ name, (int32_t)strlen(name) };
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_quorum_log_batch(&r, 1, &w), 0);
    kiq_raft_entry_t e = { epoch, 1, w.buf, w.len, NULL };
    assert_int_equal(kiq_quorum_log_append(l, at, &e, 1), 0);
    kiq_wr_free(&w);
}

typedef struct count_ctx {
    int64_t *offsets;
    int *n;
} count_ctx_t;

static int count(void *ctx, int64_t offset, const kiq_metadata_record_t *r)
{
    count_ctx_t *c = ctx;
    c->offsets[(*c->n)++] = offset;
    return 0;
}

static void test_log_start_moves(void **state)
{
    char root[128];
    assert_int_equal(kiq_test_temp_dir(root, sizeof root, "snapshot-log"), 0);
    kiq_quorum_log_t *l = kiq_quorum_log_open(root, VOTERS, 3);
    assert_non_null(l);
    assert_int_equal(kiq_quorum_log_set_segment_bytes(l, 200), 0);
    for (int64_t at = 0; at < 20; at++)
        append_topic(l, at, at < 10 ? 1 : 2);
    assert_int_equal(kiq_quorum_log_epoch_before(l, 10), 1);
    assert_int_equal(kiq_quorum_log_epoch_before(l, 11), 2);
    kiq_metadata_image_t *img = sample_image();
    kiq_raft_epoch_end_t id = { 2, 15 };
    write_image(kiq_quorum_log_dir(l), id, img);
    assert_int_equal(kiq_quorum_log_snapshot_taken(l, id), 0);
    kiq_quorum_log_free(l);

    /* reopened: it starts after the snapshot; what is left replays */
    l = kiq_quorum_log_open(root, VOTERS, 3);
    assert_non_null(l);
    kiq_raft_config_t c = { 0 };
    kiq_quorum_log_fill(l, &c);
    assert_true(c.snapshot.end_offset == 15 && c.snapshot.epoch == 2);
    assert_int_equal(c.log_end, 20);
    /* the segments wholly below it were deleted */
    int64_t *bases;
    size_t nb;
    assert_int_equal(kiq_log_segment_bases(kiq_quorum_log_dir(l), KIQ_LOG_SUFFIX, &bases, &nb), 0);
    assert_true(nb >= 1 && bases[0] > 0 && bases[0] <= 15);
    free(bases);
    int64_t seen[8];
    int nseen = 0;
    count_ctx_t cc = { seen, &nseen };
    assert_int_equal(kiq_quorum_log_replay(l, 15, 20, count, &cc), 0);
    assert_int_equal(nseen, 5);
    assert_true(seen[0] == 15 && seen[4] == 19);

    /* a fetched snapshot replaces the whole log */
    kiq_raft_epoch_end_t fetched = { 4, 100 };
    write_image(kiq_quorum_log_dir(l), fetched, img);
    assert_int_equal(kiq_quorum_log_reset_to(l, fetched), 0);
    assert_int_equal(kiq_quorum_log_end(l), 100);
    append_topic(l, 100, 4);
    kiq_quorum_log_free(l);
    l = kiq_quorum_log_open(root, VOTERS, 3);
    assert_non_null(l);
    kiq_quorum_log_fill(l, &c);
    assert_true(c.snapshot.end_offset == 100 && c.log_end == 101);
    kiq_raft_epoch_end_t ids[4];
    assert_int_equal(kiq_snapshot_list(kiq_quorum_log_dir(l), ids, 4), 1);
    kiq_quorum_log_free(l);
    kiq_metadata_image_free(img);
    kiq_test_remove_tree(root);
}

/* Under kraft.version 1 the header batch carries the voter set (Kafka's
 * KRaftVersionRecord and VotersRecord after the SnapshotHeaderRecord): read
 * back with its endpoints, the metadata records after it the same. */
static void test_voters_kept(void **state)
{
    char dir[128];
    assert_int_equal(kiq_test_temp_dir(dir, sizeof dir, "snapshot-voters"), 0);
    kiq_metadata_image_t *img = sample_image();
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *rs;
    size_t n;
    assert_int_equal(kiq_metadata_image_records(img, &a, &rs, &n), 0);
    kiq_snapshot_voters_t v;
    memset(&v, 0, sizeof v);
    v.set.n = 2;
    for (int i = 0; i < 2; i++) {
        v.set.voters[i].id = 7 + i;
        memset(v.set.voters[i].dir, 0x10 + i, sizeof v.set.voters[i].dir);
        snprintf(v.eps[i].name, sizeof v.eps[i].name, "CONTROLLER");
        snprintf(v.eps[i].host, sizeof v.eps[i].host, "127.0.0.%d", i + 1);
        v.eps[i].port = 9093 + i;
    }
    kiq_raft_epoch_end_t id = { 2, 30 };
    assert_int_equal(kiq_snapshot_write(dir, id, 1234, &v, rs, n), 0);
    kiq_snapshot_voters_t back;
    assert_int_equal(kiq_snapshot_voters(dir, id, &back), 1);
    assert_int_equal(back.set.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(back.set.voters[i].id, 7 + i);
        assert_memory_equal(back.set.voters[i].dir, v.set.voters[i].dir, sizeof back.set.voters[i].dir);
        assert_string_equal(back.eps[i].host, v.eps[i].host);
        assert_int_equal(back.eps[i].port, 9093 + i);
    }
    kiq_metadata_image_t *loaded = kiq_metadata_image_new();
    if (kiq_snapshot_load(dir, id, apply, loaded) != 0)
        fail_msg("load: %s", kiq_error_get());
    assert_same_image(img, loaded);
    /* none written: none read */
    kiq_raft_epoch_end_t plain = { 2, 31 };
    assert_int_equal(kiq_snapshot_write(dir, plain, 1234, NULL, rs, n), 0);
    assert_int_equal(kiq_snapshot_voters(dir, plain, &back), 0);
    kiq_arena_reset(&a);
    kiq_metadata_image_free(loaded);
    kiq_metadata_image_free(img);
    kiq_test_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_damaged_refused),
        cmocka_unit_test(test_log_start_moves),
        cmocka_unit_test(test_voters_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
