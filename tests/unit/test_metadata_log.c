/* The controller's metadata: KRaft metadata records (every type at every
 * version round-trips through Kafka's framing; bytes by hand for the
 * tagged PartitionChangeRecord; unknown and malformed values), the
 * metadata log on a real directory (one batch per append, replay in order
 * across close and reopen, a torn tail cut on reopen), the image built
 * from records (every record type, epochs on ISR shrink and leader
 * change, refusals leaving it unchanged), Kafka's rack-unaware replica
 * placement against its documented example, and leader election. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "controller/metadata_image.h"
#include "controller/metadata_record.h"
#include "controller/quorum_log.h"
#include "core/error.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "support/log_fixture.h"

static const int16_t all_types[] = {
    KIQ_MR_REGISTER_BROKER, KIQ_MR_TOPIC,         KIQ_MR_PARTITION,       KIQ_MR_CONFIG,
    KIQ_MR_PARTITION_CHANGE, KIQ_MR_FENCE_BROKER, KIQ_MR_UNFENCE_BROKER, KIQ_MR_REMOVE_TOPIC,
    KIQ_MR_PRODUCER_IDS,    KIQ_MR_UNREGISTER_BROKER,
};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static kiq_uuid_t uuid_of(uint8_t seed)
{
    kiq_uuid_t u;
    for (int i = 0; i < 16; i++) u.b[i] = (uint8_t)(seed + i);
    return u;
}

/* ---- records ---- */

static void test_every_record_round_trips(void **state)
{
    (void)state;
    for (size_t i = 0; i < NTYPES; i++) {
        const char *name = kiq_metadata_record_name(all_types[i]);
        assert_non_null(name);
        const kiq_data_codec_t *c = kiq_data_codec(name);
        assert_non_null(c);
        for (int16_t v = c->min_version; v <= c->max_version; v++) {
            kiq_arena_t a;
            kiq_arena_init(&a);
            kiq_metadata_record_t r, back;
            assert_int_equal(kiq_metadata_record_init(&r, all_types[i]), 0);
            r.version = v;
            kiq_data_sample(name)(&r.m, v, &a, 5);
            kiq_wr_t w1, w2;
            kiq_wr_init(&w1);
            kiq_wr_init(&w2);
            assert_int_equal(kiq_metadata_record_encode(&w1, &r), 0);
            /* Kafka's frame: version 1, type, version, as unsigned varints */
            assert_int_equal(w1.buf[0], KIQ_METADATA_FRAME_VERSION);
            assert_int_equal(w1.buf[1], all_types[i]);
            assert_int_equal(w1.buf[2], v);
            if (kiq_metadata_record_decode(w1.buf, w1.len, &a, &back) != 0)
                fail_msg("%s v%d: %s", name, v, kiq_error_get());
            assert_int_equal(back.type, all_types[i]);
            assert_int_equal(back.version, v);
            assert_int_equal(kiq_metadata_record_encode(&w2, &back), 0);
            assert_int_equal(w1.len, w2.len);
            assert_memory_equal(w1.buf, w2.buf, w1.len);
            /* every shorter value is refused */
            for (size_t n = 0; n < w1.len; n++)
                assert_int_equal(kiq_metadata_record_decode(w1.buf, n, &a, &back), -1);
            kiq_wr_free(&w1);
            kiq_wr_free(&w2);
            kiq_arena_reset(&a);
        }
    }
    assert_null(kiq_metadata_record_name(6));
    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, 6), -1);
}

/* PartitionChangeRecord keeps every changed field in a tagged field: an
 * ISR shrink with a new leader is two tags, the rest left out. */
static void test_partition_change_bytes_by_hand(void **state)
{
    (void)state;
    kiq_uuid_t id = uuid_of(0x40);
    uint8_t want[64];
    size_t n = 0;
    want[n++] = 1; /* frame version */
    want[n++] = 5; /* PartitionChangeRecord */
    want[n++] = 0; /* version */
    const uint8_t part[] = {0, 0, 0, 2};
    memcpy(want + n, part, 4);
    n += 4;
    memcpy(want + n, id.b, 16);
    n += 16;
    const uint8_t tags[] = {
        2,                                   /* two tagged fields */
        0, 9, 3, 0, 0, 0, 1, 0, 0, 0, 3,      /* tag 0 isr: compact array [1, 3] */
        1, 4, 0, 0, 0, 3,                    /* tag 1 leader: 3 */
    };
    memcpy(want + n, tags, sizeof tags);
    n += sizeof tags;

    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_PARTITION_CHANGE), 0);
    assert_int_equal(r.version, 0);
    assert_int_equal(r.m.partition_change.leader, KIQ_NO_LEADER_CHANGE);
    assert_int_equal(r.m.partition_change.isr_n, -1);
    assert_int_equal(r.m.partition_change.leader_recovery_state, -1);
    int32_t isr[] = {1, 3};
    r.m.partition_change.partition_id = 2;
    r.m.partition_change.topic_id = id;
    r.m.partition_change.isr = isr;
    r.m.partition_change.isr_n = 2;
    r.m.partition_change.leader = 3;
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_metadata_record_encode(&w, &r), 0);
    assert_int_equal(w.len, n);
    assert_memory_equal(w.buf, want, n);
    kiq_wr_free(&w);

    /* only the leader tag: the ISR decodes as unchanged (null) */
    const uint8_t leader_only[] = {1, 5, 0, 0, 0, 0, 7, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
                                   0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 1, 1, 4, 0xff, 0xff, 0xff, 0xff};
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t d;
    assert_int_equal(kiq_metadata_record_decode(leader_only, sizeof leader_only, &a, &d), 0);
    assert_int_equal(d.type, KIQ_MR_PARTITION_CHANGE);
    assert_int_equal(d.m.partition_change.partition_id, 7);
    assert_memory_equal(d.m.partition_change.topic_id.b, id.b, 16);
    assert_int_equal(d.m.partition_change.leader, KIQ_NO_LEADER);
    assert_int_equal(d.m.partition_change.isr_n, -1);
    assert_int_equal(d.m.partition_change.replicas_n, -1);
    kiq_arena_reset(&a);
}

static void test_topic_record_bytes_by_hand(void **state)
{
    (void)state;
    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_TOPIC), 0);
    r.m.topic.name = KIQ_STR("orders");
    r.m.topic.topic_id = uuid_of(1);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_metadata_record_encode(&w, &r), 0);
    /* frame, compact string (length + 1), uuid, empty tag section */
    assert_int_equal(w.len, 3 + 1 + 6 + 16 + 1);
    const uint8_t head[] = {1, 2, 0, 7, 'o', 'r', 'd', 'e', 'r', 's', 1, 2};
    assert_memory_equal(w.buf, head, sizeof head);
    assert_int_equal(w.buf[w.len - 1], 0);
    kiq_wr_free(&w);
}

static void test_unknown_and_malformed_values(void **state)
{
    (void)state;
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t r;
    /* type 6 (no record of Kafka's): framed well, not known here */
    const uint8_t unknown_type[] = {1, 6, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    assert_int_equal(kiq_metadata_record_decode(unknown_type, sizeof unknown_type, &a, &r),
                     KIQ_METADATA_RECORD_UNKNOWN);
    /* a TopicRecord version from the future */
    const uint8_t unknown_version[] = {1, 2, 9, 1, 0};
    assert_int_equal(kiq_metadata_record_decode(unknown_version, sizeof unknown_version, &a, &r),
                     KIQ_METADATA_RECORD_UNKNOWN);
    /* another frame version */
    const uint8_t frame2[] = {2, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    assert_int_equal(kiq_metadata_record_decode(frame2, sizeof frame2, &a, &r), -1);
    /* FenceBrokerRecord with a byte too many */
    const uint8_t extra[] = {1, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
    assert_int_equal(kiq_metadata_record_decode(extra, sizeof extra, &a, &r), -1);
    assert_int_equal(kiq_metadata_record_decode(extra, sizeof extra - 1, &a, &r), 0);
    assert_int_equal(r.m.fence_broker.id, 1);
    assert_int_equal(r.m.fence_broker.epoch, 1);
    /* an unterminated varint */
    const uint8_t bad_varint[] = {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(kiq_metadata_record_decode(bad_varint, sizeof bad_varint, &a, &r), -1);
    /* a version the encoder does not have */
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_TOPIC), 0);
    r.version = 1;
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_metadata_record_encode(&w, &r), -1);
    kiq_wr_free(&w);
    kiq_arena_reset(&a);
}

/* ---- records the tests build ---- */

typedef struct rec_buf {
    kiq_metadata_record_t r[16];
    size_t n;
    kiq_register_broker_record_end_points_t eps[2]; /* every broker's, the same */
    int32_t ids[16][8];
} rec_buf_t;

static kiq_metadata_record_t *add(rec_buf_t *b, int16_t type)
{
    assert_true(b->n < 16);
    kiq_metadata_record_t *r = &b->r[b->n++];
    assert_int_equal(kiq_metadata_record_init(r, type), 0);
    return r;
}

static void add_broker(rec_buf_t *b, int32_t id, int64_t epoch, bool fenced)
{
    kiq_metadata_record_t *r = add(b, KIQ_MR_REGISTER_BROKER);
    r->m.register_broker.broker_id = id;
    r->m.register_broker.broker_epoch = epoch;
    r->m.register_broker.incarnation_id = uuid_of((uint8_t)(id * 3 + epoch));
    b->eps[0] = (kiq_register_broker_record_end_points_t){
        .name = KIQ_STR("PLAINTEXT"), .host = KIQ_STR("localhost"), .port = 9092, .security_protocol = 0};
    b->eps[1] = (kiq_register_broker_record_end_points_t){
        .name = KIQ_STR("CONTROLLER"), .host = KIQ_STR("127.0.0.1"), .port = 9093, .security_protocol = 0};
    r->m.register_broker.end_points = b->eps;
    r->m.register_broker.end_points_n = 2;
    r->m.register_broker.rack = id == 2 ? KIQ_STR("rack-b") : KIQ_STR_NULL;
    r->m.register_broker.fenced = fenced;
}

static void add_topic(rec_buf_t *b, const char *name, uint8_t id)
{
    kiq_metadata_record_t *r = add(b, KIQ_MR_TOPIC);
    r->m.topic.name = KIQ_STR(name);
    r->m.topic.topic_id = uuid_of(id);
}

/* A partition with replicas r0..r2 all in the ISR, led by r0. */
static void add_partition(rec_buf_t *b, uint8_t topic, int32_t p, int32_t r0, int32_t r1, int32_t r2)
{
    kiq_metadata_record_t *r = add(b, KIQ_MR_PARTITION);
    int32_t *ids = b->ids[b->n - 1];
    ids[0] = r0, ids[1] = r1, ids[2] = r2;
    r->m.partition.partition_id = p;
    r->m.partition.topic_id = uuid_of(topic);
    r->m.partition.replicas = ids;
    r->m.partition.replicas_n = 3;
    r->m.partition.isr = ids;
    r->m.partition.isr_n = 3;
    r->m.partition.leader = r0;
    r->m.partition.leader_epoch = 0;
    r->m.partition.partition_epoch = 0;
}

/* ---- the metadata log ---- */

typedef struct seen {
    int64_t offset[32];
    int16_t type[32];
    int n;
    int stop_at; /* return 7 from this record on; -1 never */
    kiq_metadata_image_t *img;
} seen_t;

static int collect(void *ctx, int64_t offset, const kiq_metadata_record_t *r)
{
    seen_t *s = ctx;
    if (s->n == s->stop_at) return 7;
    assert_true(s->n < 32);
    s->offset[s->n] = offset;
    s->type[s->n] = r->type;
    s->n++;
    if (s->img && kiq_metadata_image_apply(s->img, offset, r) != 0) fail_msg("apply: %s", kiq_error_get());
    return 0;
}

static int replay(kiq_quorum_log_t *st, seen_t *s, kiq_metadata_image_t *img)
{
    memset(s, 0, sizeof *s);
    s->stop_at = -1;
    s->img = img;
    return kiq_quorum_log_replay(st, 0, kiq_quorum_log_end(st), collect, s);
}

/* The log of a lone voter, as the controller's quorum opens it. */
static kiq_quorum_log_t *open_log(const kiq_test_log_dir_t *ld)
{
    static const int32_t voter = 0;
    return kiq_quorum_log_open(ld->root, &voter, 1);
}

/* records[0..n) as one batch of epoch 1 at the log end (none when n is
 * 0); *last (if asked) gets the log's last offset. */
static int append(kiq_quorum_log_t *st, const kiq_metadata_record_t *records, size_t n, int64_t *last)
{
    int rc = 0;
    if (n > 0) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        rc = kiq_quorum_log_batch(records, n, &w);
        kiq_raft_entry_t e = { 1, (int32_t)n, w.buf, w.len, NULL };
        if (rc == 0) rc = kiq_quorum_log_append(st, kiq_quorum_log_end(st), &e, 1);
        kiq_wr_free(&w);
    }
    if (last) *last = kiq_quorum_log_end(st) - 1;
    return rc;
}

static void segment_path(const kiq_test_log_dir_t *ld, char *out, size_t n)
{
    snprintf(out, n, "%s/" KIQ_METADATA_PARTITION_DIR "/00000000000000000000.log", ld->root);
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

typedef struct record_check {
    int count;
    bool all_keys_null;
    bool all_framed;
} record_check_t;

static int check_record(const kiq_record_t *r, void *ctx)
{
    record_check_t *c = ctx;
    c->count++;
    if (r->key.p) c->all_keys_null = false;
    if (!r->value.p || r->value.len < 3 || r->value.p[0] != KIQ_METADATA_FRAME_VERSION) c->all_framed = false;
    return 0;
}

static void test_append_replay_across_reopen(void **state)
{
    kiq_test_log_dir_t *ld = kiq_test_log_dir_new("metadata", NULL);
    assert_non_null(ld);
    *state = ld;
    kiq_quorum_log_t *st = open_log(ld);
    assert_non_null(st);
    assert_int_equal(kiq_quorum_log_end(st), 0);
    seen_t s;
    assert_int_equal(replay(st, &s, NULL), 0);
    assert_int_equal(s.n, 0);

    /* a topic created with its partitions in one append */
    rec_buf_t b = {0};
    add_broker(&b, 1, 10, false);
    add_broker(&b, 2, 11, false);
    add_broker(&b, 3, 12, false);
    add_topic(&b, "orders", 1);
    add_partition(&b, 1, 0, 1, 2, 3);
    add_partition(&b, 1, 1, 2, 3, 1);
    int64_t last = -5;
    assert_int_equal(append(st, b.r, 3, &last), 0);
    assert_int_equal(last, 2);
    assert_int_equal(append(st, b.r + 3, 3, &last), 0);
    assert_int_equal(last, 5);
    assert_int_equal(append(st, b.r, 0, &last), 0); /* nothing */
    assert_int_equal(last, 5);
    assert_int_equal(kiq_quorum_log_end(st), 6);
    kiq_quorum_log_free(st);

    /* on disk: two batches (one per append), null keys, Kafka's framing */
    char path[256];
    segment_path(ld, path, sizeof path);
    size_t len;
    uint8_t *file = read_file(path, &len);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, file, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int batches = 0;
    record_check_t rc = {0, true, true};
    while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
        assert_int_equal(kiq_batch_check(batch, blen, NULL), 0);
        assert_int_equal(h.base_offset, batches * 3);
        assert_int_equal(h.record_count, 3);
        assert_int_equal(kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, check_record, &rc), 0);
        batches++;
    }
    assert_int_equal(batches, 2);
    assert_int_equal(rc.count, 6);
    assert_true(rc.all_keys_null);
    assert_true(rc.all_framed);
    free(file);

    /* reopened: every record in order, applied to a fresh image */
    st = open_log(ld);
    assert_non_null(st);
    assert_int_equal(kiq_quorum_log_end(st), 6);
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    assert_int_equal(replay(st, &s, img), 0);
    assert_int_equal(s.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(s.offset[i], i);
        assert_int_equal(s.type[i], b.r[i].type);
    }
    assert_int_equal(kiq_metadata_image_offset(img), 5);
    assert_int_equal(kiq_metadata_image_broker_count(img), 3);
    const kiq_broker_registration_t *br = kiq_metadata_image_broker(img, 2);
    assert_non_null(br);
    assert_int_equal(br->epoch, 11);
    assert_int_equal(br->nendpoints, 2);
    assert_string_equal(br->endpoints[1].name, "CONTROLLER");
    assert_string_equal(br->endpoints[1].host, "127.0.0.1");
    assert_int_equal(br->endpoints[1].port, 9093);
    assert_string_equal(br->rack, "rack-b");
    assert_null(kiq_metadata_image_broker(img, 1)->rack);
    const kiq_topic_image_t *t = kiq_metadata_image_topic(img, "orders", 6);
    assert_non_null(t);
    assert_int_equal(t->npartitions, 2);
    assert_int_equal(t->partitions[1].leader, 2);
    assert_int_equal(t->partitions[1].replicas[2], 1);

    /* appends go on after the replayed ones; a stopped replay says so */
    kiq_metadata_record_t *fence = add(&b, KIQ_MR_FENCE_BROKER);
    fence->m.fence_broker.id = 3;
    fence->m.fence_broker.epoch = 12;
    assert_int_equal(append(st, fence, 1, &last), 0);
    assert_int_equal(last, 6);
    memset(&s, 0, sizeof s);
    s.stop_at = 4;
    assert_int_equal(kiq_quorum_log_replay(st, 0, kiq_quorum_log_end(st), collect, &s), 7);
    assert_int_equal(s.n, 4);
    kiq_quorum_log_free(st);

    st = open_log(ld);
    assert_non_null(st);
    kiq_metadata_image_free(img);
    img = kiq_metadata_image_new();
    assert_int_equal(replay(st, &s, img), 0);
    assert_int_equal(s.n, 7);
    assert_true(kiq_metadata_image_broker(img, 3)->fenced);
    kiq_metadata_image_free(img);
    kiq_quorum_log_free(st);
}

/* An unclean stop tore the last append: reopening cuts it whole, replay
 * ends cleanly before it and new appends take its offsets. */
static void test_torn_tail_is_cut(void **state)
{
    kiq_test_log_dir_t *ld = kiq_test_log_dir_new("metadata-torn", NULL);
    assert_non_null(ld);
    *state = ld;
    kiq_quorum_log_t *st = open_log(ld);
    assert_non_null(st);
    rec_buf_t b = {0};
    add_broker(&b, 1, 1, false);
    add_topic(&b, "a", 1);
    add_partition(&b, 1, 0, 1, 1, 1);
    add_topic(&b, "b", 2);
    add_partition(&b, 2, 0, 1, 1, 1);
    assert_int_equal(append(st, b.r, 3, NULL), 0);
    assert_int_equal(append(st, b.r + 3, 2, NULL), 0);
    kiq_quorum_log_free(st);

    char path[256];
    segment_path(ld, path, sizeof path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    /* the second batch loses its last bytes, as a crash mid-write leaves it */
    assert_int_equal(truncate(path, sb.st_size - 5), 0);

    st = open_log(ld);
    assert_non_null(st);
    assert_int_equal(kiq_quorum_log_end(st), 3);
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    seen_t s;
    assert_int_equal(replay(st, &s, img), 0);
    assert_int_equal(s.n, 3);
    assert_non_null(kiq_metadata_image_topic(img, "a", 1));
    assert_null(kiq_metadata_image_topic(img, "b", 1));
    int64_t last;
    assert_int_equal(append(st, b.r + 3, 2, &last), 0);
    assert_int_equal(last, 4);
    kiq_quorum_log_free(st);

    /* garbage after the last batch (a header cut short) goes the same way */
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    const uint8_t junk[] = {0, 0, 0, 0, 0, 0, 0, 5, 0, 0};
    assert_int_equal(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    fclose(f);
    st = open_log(ld);
    assert_non_null(st);
    assert_int_equal(kiq_quorum_log_end(st), 5);
    kiq_metadata_image_free(img);
    img = kiq_metadata_image_new();
    assert_int_equal(replay(st, &s, img), 0);
    assert_int_equal(s.n, 5);
    assert_non_null(kiq_metadata_image_topic(img, "b", 1));
    kiq_metadata_image_free(img);
    kiq_quorum_log_free(st);
}

/* A record that passed the CRC but does not decode stops the replay: the
 * controller must not start on a partial image. */
static void test_replay_refuses_malformed_record(void **state)
{
    kiq_test_log_dir_t *ld = kiq_test_log_dir_new("metadata-bad", NULL);
    assert_non_null(ld);
    *state = ld;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/" KIQ_METADATA_PARTITION_DIR, ld->root);
    kiq_partition_log_t *l = kiq_partition_log_open(dir, &ld->cfg);
    assert_non_null(l);
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, 0, 0);
    const uint8_t ok_value[] = {1, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    const uint8_t unknown_value[] = {1, 6, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0};
    const uint8_t bad_value[] = {1, 7, 0, 0, 0};
    assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, ok_value, sizeof ok_value, NULL, 0, 0), 0);
    assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, unknown_value, sizeof unknown_value, NULL, 0, 0), 0);
    assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, bad_value, sizeof bad_value, NULL, 0, 0), 0);
    assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, ok_value, sizeof ok_value, NULL, 0, 0), 0);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(&bb, &w), 0);
    assert_int_equal(kiq_partition_log_append(l, w.buf, w.len, 0, NULL, NULL), 0);
    kiq_wr_free(&w);
    kiq_batch_builder_free(&bb);
    kiq_partition_log_free(l);

    kiq_quorum_log_t *st = open_log(ld);
    assert_non_null(st);
    seen_t s;
    assert_int_equal(replay(st, &s, NULL), -1);
    assert_non_null(strstr(kiq_error_get(), "offset 2"));
    /* the unknown type was skipped, not handed over */
    assert_int_equal(s.n, 1);
    assert_int_equal(s.type[0], KIQ_MR_FENCE_BROKER);
    kiq_quorum_log_free(st);
}

/* ---- the image ---- */

static kiq_metadata_image_t *image_of(rec_buf_t *b)
{
    kiq_metadata_image_t *img = kiq_metadata_image_new();
    assert_non_null(img);
    for (size_t i = 0; i < b->n; i++)
        if (kiq_metadata_image_apply(img, (int64_t)i, &b->r[i]) != 0) fail_msg("record %zu: %s", i, kiq_error_get());
    return img;
}

static int apply_one(kiq_metadata_image_t *img, const kiq_metadata_record_t *r)
{
    return kiq_metadata_image_apply(img, 100, r);
}

static void test_image_brokers(void **state)
{
    (void)state;
    rec_buf_t b = {0};
    add_broker(&b, 3, 1, true);
    add_broker(&b, 1, 2, true);
    add_broker(&b, 2, 3, false);
    kiq_metadata_image_t *img = image_of(&b);
    assert_int_equal(kiq_metadata_image_broker_count(img), 3);
    for (size_t i = 0; i < 3; i++) assert_int_equal(kiq_metadata_image_broker_at(img, i)->id, (int32_t)i + 1);
    assert_null(kiq_metadata_image_broker_at(img, 3));
    assert_null(kiq_metadata_image_broker(img, 4));
    int32_t live[4];
    assert_int_equal(kiq_metadata_image_live_brokers(img, live, 4), 1);
    assert_int_equal(live[0], 2);

    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_UNFENCE_BROKER), 0);
    r.m.unfence_broker.id = 1;
    r.m.unfence_broker.epoch = 2;
    assert_int_equal(apply_one(img, &r), 0);
    assert_false(kiq_metadata_image_broker(img, 1)->fenced);
    assert_int_equal(kiq_metadata_image_offset(img), 100);
    /* a stale epoch or an unknown broker is refused */
    r.m.unfence_broker.id = 3;
    r.m.unfence_broker.epoch = 7;
    assert_int_equal(apply_one(img, &r), -1);
    assert_true(kiq_metadata_image_broker(img, 3)->fenced);
    r.m.unfence_broker.id = 9;
    assert_int_equal(apply_one(img, &r), -1);

    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_FENCE_BROKER), 0);
    r.m.fence_broker.id = 2;
    r.m.fence_broker.epoch = 3;
    assert_int_equal(apply_one(img, &r), 0);
    assert_true(kiq_metadata_image_broker(img, 2)->fenced);
    assert_int_equal(kiq_metadata_image_live_brokers(img, live, 4), 1);
    assert_int_equal(live[0], 1);

    /* a restarted broker registers again: the old registration is replaced */
    rec_buf_t b2 = {0};
    add_broker(&b2, 2, 40, false);
    b2.r[0].m.register_broker.end_points_n = 1;
    b2.r[0].m.register_broker.rack = KIQ_STR_NULL;
    /* its log directories stay with the registration: a restarted controller
     * tells the broker's own restart from a second process by them */
    kiq_uuid_t dirs[2] = {uuid_of(71), uuid_of(72)};
    b2.r[0].m.register_broker.log_dirs = dirs;
    b2.r[0].m.register_broker.log_dirs_n = 2;
    assert_int_equal(kiq_metadata_image_broker(img, 2)->nlog_dirs, 0);
    assert_int_equal(apply_one(img, &b2.r[0]), 0);
    assert_int_equal(kiq_metadata_image_broker_count(img), 3);
    const kiq_broker_registration_t *br = kiq_metadata_image_broker(img, 2);
    assert_int_equal(br->epoch, 40);
    assert_false(br->fenced);
    assert_int_equal(br->nendpoints, 1);
    assert_null(br->rack);
    kiq_uuid_t inc = uuid_of(2 * 3 + 40);
    assert_memory_equal(br->incarnation_id.b, inc.b, 16);
    assert_int_equal(br->nlog_dirs, 2);
    assert_memory_equal(br->log_dirs[1].b, dirs[1].b, 16);
    /* and fencing the old epoch no longer applies */
    assert_int_equal(apply_one(img, &r), -1);
    assert_int_equal(kiq_metadata_image_live_brokers(img, live, 1), 2);
    assert_int_equal(live[0], 1);
    /* unregistered (UnregisterBroker): only at its current epoch; gone after */
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_UNREGISTER_BROKER), 0);
    r.m.unregister_broker.broker_id = 2;
    r.m.unregister_broker.broker_epoch = 3;
    assert_int_equal(apply_one(img, &r), -1);
    r.m.unregister_broker.broker_epoch = 40;
    assert_int_equal(apply_one(img, &r), 0);
    assert_null(kiq_metadata_image_broker(img, 2));
    assert_int_equal(kiq_metadata_image_broker_count(img), 2);
    assert_int_equal(kiq_metadata_image_broker_at(img, 1)->id, 3);
    assert_int_equal(apply_one(img, &r), -1);
    kiq_metadata_image_free(img);
}

static void test_image_topics_and_partitions(void **state)
{
    (void)state;
    rec_buf_t b = {0};
    add_topic(&b, "zeta", 9);
    add_topic(&b, "alpha", 1);
    add_partition(&b, 1, 0, 1, 2, 3);
    add_partition(&b, 1, 1, 2, 3, 1);
    add_partition(&b, 9, 0, 3, 1, 2);
    kiq_metadata_image_t *img = image_of(&b);
    assert_int_equal(kiq_metadata_image_topic_count(img), 2);
    assert_string_equal(kiq_metadata_image_topic_at(img, 0)->name, "alpha");
    assert_string_equal(kiq_metadata_image_topic_at(img, 1)->name, "zeta");
    kiq_uuid_t alpha = uuid_of(1), zeta = uuid_of(9), none = uuid_of(50);
    assert_ptr_equal(kiq_metadata_image_topic_by_id(img, &alpha), kiq_metadata_image_topic(img, "alpha", 5));
    assert_null(kiq_metadata_image_topic(img, "alph", 4));
    assert_null(kiq_metadata_image_topic_by_id(img, &none));
    assert_null(kiq_metadata_image_partition(img, &alpha, 2));

    /* refusals leave the image as it was */
    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_TOPIC), 0);
    r.m.topic.name = KIQ_STR("alpha");
    r.m.topic.topic_id = uuid_of(77);
    assert_int_equal(apply_one(img, &r), -1); /* name taken */
    r.m.topic.name = KIQ_STR("beta");
    r.m.topic.topic_id = zeta;
    assert_int_equal(apply_one(img, &r), -1); /* id taken */
    assert_int_equal(kiq_metadata_image_topic_count(img), 2);
    rec_buf_t bad = {0};
    add_partition(&bad, 1, 3, 1, 2, 3); /* a gap after partition 1 */
    add_partition(&bad, 50, 0, 1, 2, 3); /* no such topic */
    assert_int_equal(apply_one(img, &bad.r[0]), -1);
    assert_int_equal(apply_one(img, &bad.r[1]), -1);
    assert_int_equal(kiq_metadata_image_topic(img, "alpha", 5)->npartitions, 2);

    /* a PartitionRecord for an existing partition replaces it whole */
    rec_buf_t again = {0};
    add_partition(&again, 1, 1, 3, 2, 1);
    again.r[0].m.partition.leader_epoch = 4;
    again.r[0].m.partition.partition_epoch = 6;
    assert_int_equal(apply_one(img, &again.r[0]), 0);
    const kiq_partition_registration_t *p = kiq_metadata_image_partition(img, &alpha, 1);
    assert_int_equal(p->leader, 3);
    assert_int_equal(p->leader_epoch, 4);
    assert_int_equal(p->partition_epoch, 6);
    assert_int_equal(p->replicas[0], 3);

    /* configs: set, replace, delete; a removed topic takes its configs */
    const char *keys[][3] = {{"alpha", "retention.ms", "1000"},
                             {"alpha", "cleanup.policy", "compact"},
                             {"zeta", "retention.ms", "5"},
                             {"alpha", "retention.ms", "2000"}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_CONFIG), 0);
        r.m.config.resource_type = KIQ_CONFIG_RESOURCE_TOPIC;
        r.m.config.resource_name = KIQ_STR(keys[i][0]);
        r.m.config.name = KIQ_STR(keys[i][1]);
        r.m.config.value = KIQ_STR(keys[i][2]);
        assert_int_equal(apply_one(img, &r), 0);
    }
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_CONFIG), 0);
    r.m.config.resource_type = KIQ_CONFIG_RESOURCE_BROKER;
    r.m.config.resource_name = KIQ_STR("1");
    r.m.config.name = KIQ_STR("log.retention.ms");
    r.m.config.value = KIQ_STR("9");
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(kiq_metadata_image_config_count(img), 4);
    assert_string_equal(kiq_metadata_image_config(img, KIQ_CONFIG_RESOURCE_TOPIC, "alpha", "retention.ms"), "2000");
    assert_string_equal(kiq_metadata_image_config(img, KIQ_CONFIG_RESOURCE_BROKER, "1", "log.retention.ms"), "9");
    assert_null(kiq_metadata_image_config(img, KIQ_CONFIG_RESOURCE_BROKER, "alpha", "retention.ms"));
    r.m.config.value = KIQ_STR_NULL;
    assert_int_equal(apply_one(img, &r), 0);
    assert_null(kiq_metadata_image_config(img, KIQ_CONFIG_RESOURCE_BROKER, "1", "log.retention.ms"));
    assert_int_equal(kiq_metadata_image_config_count(img), 3);

    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_REMOVE_TOPIC), 0);
    r.m.remove_topic.topic_id = alpha;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(apply_one(img, &r), -1); /* gone already */
    assert_int_equal(kiq_metadata_image_topic_count(img), 1);
    assert_null(kiq_metadata_image_topic(img, "alpha", 5));
    assert_null(kiq_metadata_image_topic_by_id(img, &alpha));
    assert_null(kiq_metadata_image_config(img, KIQ_CONFIG_RESOURCE_TOPIC, "alpha", "cleanup.policy"));
    assert_int_equal(kiq_metadata_image_config_count(img), 1);
    assert_string_equal(kiq_metadata_image_config_at(img, 0)->resource_name, "zeta");
    /* the name and id are free again */
    rec_buf_t re = {0};
    add_topic(&re, "alpha", 1);
    assert_int_equal(apply_one(img, &re.r[0]), 0);
    assert_int_equal(kiq_metadata_image_topic(img, "alpha", 5)->npartitions, 0);
    kiq_metadata_image_free(img);
}

static kiq_metadata_record_t change(uint8_t topic, int32_t partition)
{
    kiq_metadata_record_t r;
    assert_int_equal(kiq_metadata_record_init(&r, KIQ_MR_PARTITION_CHANGE), 0);
    r.m.partition_change.topic_id = uuid_of(topic);
    r.m.partition_change.partition_id = partition;
    return r;
}

static void test_image_partition_changes_and_epochs(void **state)
{
    (void)state;
    rec_buf_t b = {0};
    add_topic(&b, "t", 1);
    add_partition(&b, 1, 0, 1, 2, 3);
    kiq_metadata_image_t *img = image_of(&b);
    kiq_uuid_t id = uuid_of(1);
    const kiq_partition_registration_t *p = kiq_metadata_image_partition(img, &id, 0);

    /* ISR shrink: the partition epoch moves, the leader and its epoch stay */
    int32_t isr[] = {1, 3};
    kiq_metadata_record_t r = change(1, 0);
    r.m.partition_change.isr = isr;
    r.m.partition_change.isr_n = 2;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->nisr, 2);
    assert_int_equal(p->isr[1], 3);
    assert_int_equal(p->leader, 1);
    assert_int_equal(p->leader_epoch, 0);
    assert_int_equal(p->partition_epoch, 1);
    assert_int_equal(p->nreplicas, 3);

    /* the leader goes: new leader, both epochs move */
    int32_t isr3[] = {3};
    r = change(1, 0);
    r.m.partition_change.isr = isr3;
    r.m.partition_change.isr_n = 1;
    r.m.partition_change.leader = 3;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->leader, 3);
    assert_int_equal(p->leader_epoch, 1);
    assert_int_equal(p->partition_epoch, 2);
    assert_int_equal(p->nisr, 1);

    /* naming the same leader still bumps its epoch */
    r = change(1, 0);
    r.m.partition_change.leader = 3;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->leader_epoch, 2);
    assert_int_equal(p->partition_epoch, 3);
    assert_int_equal(p->nisr, 1);

    /* no leader left: offline */
    r = change(1, 0);
    r.m.partition_change.leader = KIQ_NO_LEADER;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->leader, KIQ_NO_LEADER);
    assert_int_equal(p->leader_epoch, 3);

    /* an unclean election: leader, whole ISR and recovery state at once */
    int32_t isr2[] = {2};
    r = change(1, 0);
    r.m.partition_change.leader = 2;
    r.m.partition_change.isr = isr2;
    r.m.partition_change.isr_n = 1;
    r.m.partition_change.leader_recovery_state = KIQ_LEADER_RECOVERING;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->leader, 2);
    assert_int_equal(p->leader_recovery_state, KIQ_LEADER_RECOVERING);
    assert_int_equal(p->leader_epoch, 4);
    assert_int_equal(p->partition_epoch, 5);

    /* a reassignment: replicas and adding/removing replicas, nothing else */
    int32_t replicas[] = {2, 4, 5, 1};
    int32_t adding[] = {4, 5};
    int32_t empty[1];
    r = change(1, 0);
    r.m.partition_change.replicas = replicas;
    r.m.partition_change.replicas_n = 4;
    r.m.partition_change.adding_replicas = adding;
    r.m.partition_change.adding_replicas_n = 2;
    r.m.partition_change.removing_replicas = empty;
    r.m.partition_change.removing_replicas_n = 0;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->nreplicas, 4);
    assert_int_equal(p->replicas[3], 1);
    assert_int_equal(p->nadding, 2);
    assert_int_equal(p->nremoving, 0);
    assert_int_equal(p->leader, 2);
    assert_int_equal(p->leader_recovery_state, KIQ_LEADER_RECOVERING);
    assert_int_equal(p->leader_epoch, 4);
    assert_int_equal(p->partition_epoch, 6);

    /* its completion: the target alone, adding and removing cleared */
    int32_t target[] = {2, 4};
    r = change(1, 0);
    r.m.partition_change.replicas = target;
    r.m.partition_change.replicas_n = 2;
    r.m.partition_change.adding_replicas = empty;
    r.m.partition_change.adding_replicas_n = 0;
    r.m.partition_change.removing_replicas = empty;
    r.m.partition_change.removing_replicas_n = 0;
    assert_int_equal(apply_one(img, &r), 0);
    assert_int_equal(p->nreplicas, 2);
    assert_int_equal(p->replicas[1], 4);
    assert_int_equal(p->nadding, 0);
    assert_int_equal(p->nremoving, 0);
    assert_int_equal(p->leader, 2);
    assert_int_equal(p->partition_epoch, 7);

    /* a change to a partition or topic that does not exist */
    r = change(1, 1);
    assert_int_equal(apply_one(img, &r), -1);
    r = change(2, 0);
    assert_int_equal(apply_one(img, &r), -1);
    assert_int_equal(p->partition_epoch, 7);
    kiq_metadata_image_free(img);
}

/* ---- placement and election ---- */

static kiq_metadata_image_t *cluster(int n, const int32_t *ids)
{
    rec_buf_t b = {0};
    for (int i = 0; i < n; i++) add_broker(&b, ids[i], 1, false);
    return image_of(&b);
}

/* Kafka's AdminUtils doc comment: 5 brokers, 10 partitions, 3 replicas,
 * start index 0 (and shift 0):
 *   broker-0  broker-1  broker-2  broker-3  broker-4
 *   p0        p1        p2        p3        p4       (1st replica)
 *   p5        p6        p7        p8        p9       (1st replica)
 *   p4        p0        p1        p2        p3       (2nd replica)
 *   p8        p9        p5        p6        p7       (2nd replica)
 *   p3        p4        p0        p1        p2       (3nd replica)
 *   p7        p8        p9        p5        p6       (3nd replica) */
static void test_assignment_matches_kafka_example(void **state)
{
    (void)state;
    static const int32_t want[10][3] = {
        {0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
        {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
    };
    /* registered out of order: placement goes by sorted id */
    const int32_t ids[] = {3, 0, 4, 1, 2};
    kiq_metadata_image_t *img = cluster(5, ids);
    int32_t out[30];
    assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 10, 3, 0, out), 0);
    assert_memory_equal(out, want, sizeof want);

    /* partitions added later continue the pattern */
    int32_t more[15];
    assert_int_equal(kiq_metadata_image_assign_replicas(img, 5, 5, 3, 0, more), 0);
    assert_memory_equal(more, want[5], sizeof more);

    /* another start index rotates the leaders */
    assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 1, 3, 2, out), 0);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 0); /* shift 2: first follower 1 + 2 % 4 = 3 away */
    assert_int_equal(out[2], 1);

    /* fenced brokers are left out; ids map through the sorted live list */
    kiq_metadata_record_t f;
    assert_int_equal(kiq_metadata_record_init(&f, KIQ_MR_FENCE_BROKER), 0);
    f.m.fence_broker.id = 2;
    f.m.fence_broker.epoch = 1;
    assert_int_equal(apply_one(img, &f), 0);
    assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 4, 2, 0, out), 0);
    const int32_t want4[] = {0, 1, 1, 3, 3, 4, 4, 0};
    assert_memory_equal(out, want4, sizeof want4);

    assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 3, 5, 0, out), KIQ_ERR_INVALID_REPLICATION_FACTOR);
    assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 3, 0, 0, out), KIQ_ERR_INVALID_REPLICATION_FACTOR);
    assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 0, 1, 0, out), KIQ_ERR_INVALID_PARTITIONS);
    const int32_t sorted[] = {1, 2, 3};
    assert_int_equal(kiq_assign_replicas_rack_unaware(sorted, 3, 0, 1, 1, -1, 0, out), -1);
    kiq_metadata_image_free(img);
}

/* With a random start every partition still gets distinct live brokers,
 * and leaders spread evenly over a full round. */
static void test_random_assignment_is_sound(void **state)
{
    (void)state;
    const int32_t ids[] = {7, 11, 13, 17, 19, 23};
    kiq_metadata_image_t *img = cluster(6, ids);
    for (int run = 0; run < 20; run++) {
        int32_t out[12 * 3];
        assert_int_equal(kiq_metadata_image_assign_replicas(img, 0, 12, 3, -1, out), 0);
        int leaders[6] = {0};
        for (int p = 0; p < 12; p++) {
            const int32_t *row = &out[p * 3];
            for (int j = 0; j < 3; j++) {
                int k = 0;
                while (k < 6 && ids[k] != row[j]) k++;
                assert_true(k < 6);
                if (j == 0) leaders[k]++;
                for (int m = 0; m < j; m++) assert_int_not_equal(row[m], row[j]);
            }
        }
        for (int k = 0; k < 6; k++) assert_int_equal(leaders[k], 2);
    }
    kiq_metadata_image_free(img);
}

static void test_leader_election(void **state)
{
    (void)state;
    int32_t replicas[] = {1, 2, 3};
    int32_t isr[] = {3, 2};
    kiq_partition_registration_t p = {.replicas = replicas, .nreplicas = 3, .isr = isr, .nisr = 2, .leader = 1};
    bool unclean = true;
    /* replica order decides, not ISR order */
    const int32_t all[] = {3, 2, 1};
    assert_int_equal(kiq_metadata_image_elect_leader(&p, all, 3, false, &unclean), 2);
    assert_false(unclean);
    /* the preferred replica is out of the ISR: skipped */
    const int32_t live13[] = {1, 3};
    assert_int_equal(kiq_metadata_image_elect_leader(&p, live13, 2, false, NULL), 3);
    /* no live ISR member: offline, unless unclean election is allowed */
    const int32_t live1[] = {1};
    assert_int_equal(kiq_metadata_image_elect_leader(&p, live1, 1, false, &unclean), KIQ_NO_LEADER);
    assert_false(unclean);
    assert_int_equal(kiq_metadata_image_elect_leader(&p, live1, 1, true, &unclean), 1);
    assert_true(unclean);
    assert_int_equal(kiq_metadata_image_elect_leader(&p, NULL, 0, true, &unclean), KIQ_NO_LEADER);
    assert_false(unclean);
    /* an empty ISR with unclean election takes the first live replica */
    p.nisr = 0;
    const int32_t live32[] = {3, 2};
    assert_int_equal(kiq_metadata_image_elect_leader(&p, live32, 2, true, &unclean), 2);
    assert_true(unclean);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_record_round_trips),
        cmocka_unit_test(test_partition_change_bytes_by_hand),
        cmocka_unit_test(test_topic_record_bytes_by_hand),
        cmocka_unit_test(test_unknown_and_malformed_values),
        cmocka_unit_test_teardown(test_append_replay_across_reopen, kiq_test_log_dir_teardown),
        cmocka_unit_test_teardown(test_torn_tail_is_cut, kiq_test_log_dir_teardown),
        cmocka_unit_test_teardown(test_replay_refuses_malformed_record, kiq_test_log_dir_teardown),
        cmocka_unit_test(test_image_brokers),
        cmocka_unit_test(test_image_topics_and_partitions),
        cmocka_unit_test(test_image_partition_changes_and_epochs),
        cmocka_unit_test(test_assignment_matches_kafka_example),
        cmocka_unit_test(test_random_assignment_is_sound),
        cmocka_unit_test(test_leader_election),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
