/* __consumer_offsets records on a real partition log: offset commits (value
 * version 3, or 1 with an expire timestamp), group metadata with dynamic
 * and static members, tombstones; their bytes against Kafka's layout;
 * loading them back in order, also after a reopen and across several
 * reads; and records the loader must skip (unknown key or value versions,
 * missing or short keys, malformed keys, control batches) without stopping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "group/offsets_topic.h"
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"
#include "support/log_fixture.h"

typedef struct fixture {
    kiq_test_log_dir_t *ld;
    kiq_partition_log_t *log; /* opened on ld->dir */
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    /* the fixture turns the log down: skipped records warn on purpose */
    if (!f || !(f->ld = kiq_test_log_dir_new("offsets", "__consumer_offsets-7"))) {
        free(f);
        return -1;
    }
    f->log = kiq_partition_log_open(f->ld->dir, &f->ld->cfg);
    if (!f->log) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kiq_partition_log_free(f->log);
    kiq_test_log_dir_free(f->ld);
    free(f);
    return 0;
}

/* ---- what the loader hands over, copied out of its short-lived views ---- */

static char *dup_str(kiq_str_t s) { return s.p ? strndup(s.p, (size_t)s.len) : NULL; }

typedef struct bytes_copy {
    uint8_t *p;
    int32_t len; /* -1: null */
} bytes_copy_t;

static bytes_copy_t dup_bytes(kiq_bytes_t b)
{
    bytes_copy_t c = {NULL, -1};
    if (!b.p) return c;
    c.len = b.len;
    c.p = malloc((size_t)b.len + 1);
    memcpy(c.p, b.p, (size_t)b.len);
    return c;
}

typedef struct member_seen {
    char *id, *instance_id, *client_id, *client_host;
    int32_t rebalance_timeout, session_timeout;
    bytes_copy_t subscription, assignment;
} member_seen_t;

typedef struct event {
    char kind; /* 'O' offset, 'G' group */
    bool deleted;
    char *group;
    /* 'O' */
    char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    char *metadata;
    int64_t commit_ts, expire_ts;
    /* 'G' */
    char *protocol_type, *protocol, *leader;
    int32_t generation;
    int64_t state_ts;
    int nmembers;
    member_seen_t *members;
} event_t;

typedef struct recorder {
    event_t *ev;
    int n, cap;
} recorder_t;

static event_t *push(recorder_t *r)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->ev = realloc(r->ev, (size_t)r->cap * sizeof *r->ev);
    }
    event_t *e = &r->ev[r->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static void on_offset(void *ctx, kiq_str_t group, kiq_str_t topic, int32_t partition, const kiq_offset_commit_value_t *v,
                      int64_t txn_producer)
{
    assert_int_equal(txn_producer, -1); /* plain commits only here */
    event_t *e = push(ctx);
    e->kind = 'O';
    e->group = dup_str(group);
    e->topic = dup_str(topic);
    e->partition = partition;
    e->deleted = v == NULL;
    if (v) {
        e->offset = v->offset;
        e->leader_epoch = v->leader_epoch;
        e->metadata = dup_str(v->metadata);
        e->commit_ts = v->commit_timestamp;
        e->expire_ts = v->expire_timestamp;
    }
}

static void on_group(void *ctx, kiq_str_t group, const kiq_group_metadata_value_t *v)
{
    event_t *e = push(ctx);
    e->kind = 'G';
    e->group = dup_str(group);
    e->deleted = v == NULL;
    if (!v) return;
    e->protocol_type = dup_str(v->protocol_type);
    e->protocol = dup_str(v->protocol);
    e->leader = dup_str(v->leader);
    e->generation = v->generation;
    e->state_ts = v->current_state_timestamp;
    e->nmembers = v->members_n;
    e->members = calloc((size_t)(v->members_n > 0 ? v->members_n : 1), sizeof *e->members);
    for (int i = 0; i < v->members_n; i++) {
        const kiq_group_metadata_value_members_t *m = &v->members[i];
        e->members[i] = (member_seen_t){dup_str(m->member_id), dup_str(m->group_instance_id),
                                        dup_str(m->client_id), dup_str(m->client_host),
                                        m->rebalance_timeout, m->session_timeout,
                                        dup_bytes(m->subscription), dup_bytes(m->assignment)};
    }
}

static void recorder_free(recorder_t *r)
{
    for (int i = 0; i < r->n; i++) {
        event_t *e = &r->ev[i];
        free(e->group);
        free(e->topic);
        free(e->metadata);
        free(e->protocol_type);
        free(e->protocol);
        free(e->leader);
        for (int j = 0; j < e->nmembers; j++) {
            member_seen_t *m = &e->members[j];
            free(m->id);
            free(m->instance_id);
            free(m->client_id);
            free(m->client_host);
            free(m->subscription.p);
            free(m->assignment.p);
        }
        free(e->members);
    }
    free(r->ev);
    memset(r, 0, sizeof *r);
}

static int load(kiq_partition_log_t *log, recorder_t *r)
{
    kiq_offsets_loader_t ld = {.ctx = r, .offset = on_offset, .group = on_group};
    return kiq_offsets_topic_load(log, &ld);
}

/* ---- building the model objects ---- */

static kiq_group_offset_t offset_of(const char *topic, int32_t partition, int64_t off, int32_t epoch, const char *md,
                                    int64_t commit_ts, int64_t expire_ts)
{
    return (kiq_group_offset_t){(char *)topic, partition, off, epoch, md ? KIQ_STR(md) : KIQ_STR_NULL, commit_ts,
                                expire_ts};
}

static void add_member(kiq_group_t *g, const char *id, const char *instance_id, const char *sub_range,
                       const char *assignment)
{
    kiq_group_member_t *m = calloc(1, sizeof *m);
    m->id = strdup(id);
    m->instance_id = instance_id ? strdup(instance_id) : NULL;
    m->client_id = strdup(id[0] == 'a' ? "app-a" : "app-b");
    m->client_host = strdup("/10.0.0.1");
    m->session_timeout_ms = 45000;
    m->rebalance_timeout_ms = 300000;
    /* range is the chosen protocol; the other one's metadata must not be
     * what is stored */
    kiq_group_protocol_t p[2] = {
        {(char *)"roundrobin", (uint8_t *)"RR-IGNORED", 10},
        {(char *)"range", (uint8_t *)sub_range, (int32_t)strlen(sub_range)},
    };
    assert_int_equal(kiq_group_member_set_protocols(m, p, 2), 0);
    if (assignment) {
        m->assignment_len = (int32_t)strlen(assignment);
        m->assignment = malloc((size_t)m->assignment_len);
        memcpy(m->assignment, assignment, (size_t)m->assignment_len);
    }
    kiq_group_member_t **pp = &g->members;
    while (*pp) pp = &(*pp)->next;
    *pp = m;
    g->nmembers++;
}

/* Group "g1": generation 4 of "consumer"/"range", led by a dynamic member,
 * with a static one that has no assignment yet. */
static kiq_group_t *make_group(void)
{
    kiq_group_t *g = kiq_group_new("g1", 2, 7);
    g->protocol_type = strdup("consumer");
    g->protocol = strdup("range");
    g->generation = 4;
    g->leader = strdup("a-1");
    g->state = KIQ_GROUP_STABLE;
    g->state_ts_ms = 1700000000777;
    add_member(g, "a-1", NULL, "SUB-A", "ASSIGN-A");
    add_member(g, "b-2", "instance-b", "SUB-B", NULL);
    return g;
}

static const int64_t NOW = 1700000001000;

/* Appends the standard set: 3 commits (v3 with metadata, v3 without, v1
 * with expiry), the group, a commit tombstone, a group tombstone. */
static void append_standard(kiq_partition_log_t *log, int32_t leader_epoch)
{
    kiq_group_t *g = make_group();
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, NOW);
    kiq_group_offset_t o0 = offset_of("orders", 0, 42, 5, "hello", NOW - 10, -1);
    kiq_group_offset_t o1 = offset_of("orders", 1, 7, -1, NULL, NOW - 20, -1);
    kiq_group_offset_t o2 = offset_of("orders", 2, 9, 3, "m", NOW - 30, NOW + 5000);
    assert_int_equal(kiq_offsets_records_add_commit(&rs, "g1", &o0), 0);
    assert_int_equal(kiq_offsets_records_add_commit(&rs, "g1", &o1), 0);
    assert_int_equal(kiq_offsets_records_add_commit(&rs, "g1", &o2), 0);
    assert_int_equal(kiq_offsets_records_add_group(&rs, g), 0);
    assert_int_equal(kiq_offsets_records_add_commit_tombstone(&rs, "g1", "orders", 1), 0);
    assert_int_equal(kiq_offsets_records_add_group_tombstone(&rs, "g-old"), 0);
    assert_int_equal(rs.k.count, 6);
    assert_int_equal(kiq_offsets_records_append(&rs, log, leader_epoch), 0);
    kiq_offsets_records_free(&rs);
    kiq_group_free(g);
}

static void check_commit(const event_t *e, const char *group, const char *topic, int32_t partition, int64_t off,
                         int32_t epoch, const char *md, int64_t commit_ts, int64_t expire_ts)
{
    assert_int_equal(e->kind, 'O');
    assert_false(e->deleted);
    assert_string_equal(e->group, group);
    assert_string_equal(e->topic, topic);
    assert_int_equal(e->partition, partition);
    assert_int_equal(e->offset, off);
    assert_int_equal(e->leader_epoch, epoch);
    assert_non_null(e->metadata);
    assert_string_equal(e->metadata, md);
    assert_int_equal(e->commit_ts, commit_ts);
    assert_int_equal(e->expire_ts, expire_ts);
}

static void check_bytes(const bytes_copy_t *b, const char *want)
{
    assert_int_equal(b->len, (int32_t)strlen(want));
    assert_memory_equal(b->p, want, strlen(want));
}

/* What append_standard wrote, as the loader reports it. */
static void check_standard(const recorder_t *r, int first)
{
    const event_t *e = &r->ev[first];
    check_commit(&e[0], "g1", "orders", 0, 42, 5, "hello", NOW - 10, -1);
    /* a null metadata is stored as Kafka stores it: "" (the field is not
     * nullable) */
    check_commit(&e[1], "g1", "orders", 1, 7, -1, "", NOW - 20, -1);
    /* value version 1 carries the expiry but no leader epoch */
    check_commit(&e[2], "g1", "orders", 2, 9, -1, "m", NOW - 30, NOW + 5000);

    const event_t *ge = &e[3];
    assert_int_equal(ge->kind, 'G');
    assert_false(ge->deleted);
    assert_string_equal(ge->group, "g1");
    assert_string_equal(ge->protocol_type, "consumer");
    assert_string_equal(ge->protocol, "range");
    assert_string_equal(ge->leader, "a-1");
    assert_int_equal(ge->generation, 4);
    assert_int_equal(ge->state_ts, 1700000000777);
    assert_int_equal(ge->nmembers, 2);
    const member_seen_t *a = &ge->members[0], *b = &ge->members[1];
    assert_string_equal(a->id, "a-1");
    assert_null(a->instance_id);
    assert_string_equal(a->client_id, "app-a");
    assert_string_equal(a->client_host, "/10.0.0.1");
    assert_int_equal(a->session_timeout, 45000);
    assert_int_equal(a->rebalance_timeout, 300000);
    check_bytes(&a->subscription, "SUB-A");
    check_bytes(&a->assignment, "ASSIGN-A");
    assert_string_equal(b->id, "b-2");
    assert_non_null(b->instance_id);
    assert_string_equal(b->instance_id, "instance-b");
    assert_string_equal(b->client_id, "app-b");
    check_bytes(&b->subscription, "SUB-B");
    /* no assignment yet: empty bytes, as Kafka writes them */
    check_bytes(&b->assignment, "");

    assert_int_equal(e[4].kind, 'O');
    assert_true(e[4].deleted);
    assert_string_equal(e[4].group, "g1");
    assert_string_equal(e[4].topic, "orders");
    assert_int_equal(e[4].partition, 1);
    assert_null(e[4].metadata);

    assert_int_equal(e[5].kind, 'G');
    assert_true(e[5].deleted);
    assert_string_equal(e[5].group, "g-old");
    assert_int_equal(e[5].nmembers, 0);
}

static void test_roundtrip_and_reopen(void **state)
{
    fixture_t *f = *state;
    /* nothing added: nothing appended */
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, NOW);
    assert_int_equal(kiq_offsets_records_append(&rs, f->log, 3), 0);
    kiq_offsets_records_free(&rs);
    assert_int_equal(kiq_partition_log_end_offset(f->log), 0);

    append_standard(f->log, 3);
    assert_int_equal(kiq_partition_log_end_offset(f->log), 6);
    /* a second batch, for another group */
    kiq_offsets_records_init(&rs, NOW);
    kiq_group_offset_t o = offset_of("payments", 11, 1234567890123, 2, "x", NOW, -1);
    assert_int_equal(kiq_offsets_records_add_commit(&rs, "g2", &o), 0);
    assert_int_equal(kiq_offsets_records_append(&rs, f->log, 3), 0);
    kiq_offsets_records_free(&rs);
    assert_int_equal(kiq_partition_log_end_offset(f->log), 7);

    recorder_t r = {0};
    assert_int_equal(load(f->log, &r), 7);
    assert_int_equal(r.n, 7);
    check_standard(&r, 0);
    check_commit(&r.ev[6], "g2", "payments", 11, 1234567890123, 2, "x", NOW, -1);
    recorder_free(&r);

    /* the same after a clean close and reopen */
    kiq_partition_log_free(f->log);
    f->log = kiq_partition_log_open(f->ld->dir, &f->ld->cfg);
    assert_non_null(f->log);
    assert_int_equal(kiq_partition_log_end_offset(f->log), 7);
    assert_int_equal(load(f->log, &r), 7);
    assert_int_equal(r.n, 7);
    check_standard(&r, 0);
    check_commit(&r.ev[6], "g2", "payments", 11, 1234567890123, 2, "x", NOW, -1);
    recorder_free(&r);
}

static void test_empty_log(void **state)
{
    fixture_t *f = *state;
    recorder_t r = {0};
    assert_int_equal(load(f->log, &r), 0);
    assert_int_equal(r.n, 0);
}

/* ---- the bytes, against Kafka's layout ---- */

typedef struct raw_record {
    int64_t offset;
    int64_t timestamp;
    bytes_copy_t key, value;
} raw_record_t;

typedef struct raw_batch {
    raw_record_t rec[16];
    int n;
} raw_batch_t;

static int collect(const kiq_record_t *rec, void *arg)
{
    raw_batch_t *rb = arg;
    assert_true(rb->n < 16);
    raw_record_t *x = &rb->rec[rb->n++];
    x->offset = rec->offset;
    x->timestamp = rec->timestamp;
    x->key = dup_bytes(rec->key);
    x->value = dup_bytes(rec->value);
    return 0;
}

/* A hand-written big-endian encoder, independent of the project's writer. */
typedef struct expect {
    uint8_t b[512];
    size_t n;
} expect_t;

static void e_i16(expect_t *e, int16_t v)
{
    e->b[e->n++] = (uint8_t)((uint16_t)v >> 8);
    e->b[e->n++] = (uint8_t)v;
}
static void e_i32(expect_t *e, int32_t v)
{
    for (int s = 24; s >= 0; s -= 8) e->b[e->n++] = (uint8_t)((uint32_t)v >> s);
}
static void e_i64(expect_t *e, int64_t v)
{
    for (int s = 56; s >= 0; s -= 8) e->b[e->n++] = (uint8_t)((uint64_t)v >> s);
}
static void e_str(expect_t *e, const char *s)
{
    if (!s) {
        e_i16(e, -1);
        return;
    }
    e_i16(e, (int16_t)strlen(s));
    memcpy(e->b + e->n, s, strlen(s));
    e->n += strlen(s);
}
static void e_bytes(expect_t *e, const char *s)
{
    e_i32(e, (int32_t)strlen(s));
    memcpy(e->b + e->n, s, strlen(s));
    e->n += strlen(s);
}

static void assert_raw(const bytes_copy_t *got, const expect_t *want)
{
    assert_int_equal(got->len, (int32_t)want->n);
    assert_memory_equal(got->p, want->b, want->n);
}

static void commit_key(expect_t *e, const char *group, const char *topic, int32_t partition)
{
    e->n = 0;
    e_i16(e, 1); /* key version 1: an offset commit */
    e_str(e, group);
    e_str(e, topic);
    e_i32(e, partition);
}

static void test_kafka_layout(void **state)
{
    fixture_t *f = *state;
    append_standard(f->log, 3);

    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_true(kiq_partition_log_read(f->log, 0, 1 << 20, kiq_partition_log_end_offset(f->log), &w) > 0);
    kiq_batch_iter_t it;
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    kiq_batch_iter_init(&it, w.buf, w.len, false);
    assert_int_equal(kiq_batch_iter_next(&it, &batch, &blen, &h), 1);
    /* one well-formed batch, the leader epoch stamped, no producer, not
     * compressed: what Kafka's coordinator writes */
    assert_int_equal(kiq_batch_check(batch, blen, NULL), 0);
    assert_int_equal(h.base_offset, 0);
    assert_int_equal(h.record_count, 6);
    assert_int_equal(h.partition_leader_epoch, 3);
    assert_int_equal(h.producer_id, -1);
    assert_int_equal(kiq_batch_codec(&h), KIQ_CODEC_NONE);
    assert_false(kiq_batch_is_control(&h));
    assert_false(kiq_batch_is_transactional(&h));
    assert_int_equal(kiq_batch_iter_next(&it, &batch, &blen, &h), 0);

    raw_batch_t rb = {0};
    kiq_batch_iter_init(&it, w.buf, w.len, false);
    assert_int_equal(kiq_batch_iter_next(&it, &batch, &blen, &h), 1);
    assert_int_equal(kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, collect, &rb), 0);
    assert_int_equal(rb.n, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(rb.rec[i].offset, i);
        assert_int_equal(rb.rec[i].timestamp, NOW);
    }

    expect_t e;
    /* commit, value version 3: offset, leader epoch, metadata, commit ts */
    commit_key(&e, "g1", "orders", 0);
    assert_raw(&rb.rec[0].key, &e);
    e.n = 0;
    e_i16(&e, 3);
    e_i64(&e, 42);
    e_i32(&e, 5);
    e_str(&e, "hello");
    e_i64(&e, NOW - 10);
    assert_raw(&rb.rec[0].value, &e);

    /* no metadata: an empty string, not a null one */
    commit_key(&e, "g1", "orders", 1);
    assert_raw(&rb.rec[1].key, &e);
    e.n = 0;
    e_i16(&e, 3);
    e_i64(&e, 7);
    e_i32(&e, -1);
    e_str(&e, "");
    e_i64(&e, NOW - 20);
    assert_raw(&rb.rec[1].value, &e);

    /* with an expiry, value version 1: offset, metadata, commit ts, expire ts */
    commit_key(&e, "g1", "orders", 2);
    assert_raw(&rb.rec[2].key, &e);
    e.n = 0;
    e_i16(&e, 1);
    e_i64(&e, 9);
    e_str(&e, "m");
    e_i64(&e, NOW - 30);
    e_i64(&e, NOW + 5000);
    assert_raw(&rb.rec[2].value, &e);

    /* group metadata: key version 2; value version 3 */
    e.n = 0;
    e_i16(&e, 2);
    e_str(&e, "g1");
    assert_raw(&rb.rec[3].key, &e);
    e.n = 0;
    e_i16(&e, 3);
    e_str(&e, "consumer");
    e_i32(&e, 4);
    e_str(&e, "range");
    e_str(&e, "a-1");
    e_i64(&e, 1700000000777);
    e_i32(&e, 2);
    /* member: id, instance id, client id, host, rebalance and session
     * timeouts, subscription, assignment */
    e_str(&e, "a-1");
    e_str(&e, NULL);
    e_str(&e, "app-a");
    e_str(&e, "/10.0.0.1");
    e_i32(&e, 300000);
    e_i32(&e, 45000);
    e_bytes(&e, "SUB-A");
    e_bytes(&e, "ASSIGN-A");
    e_str(&e, "b-2");
    e_str(&e, "instance-b");
    e_str(&e, "app-b");
    e_str(&e, "/10.0.0.1");
    e_i32(&e, 300000);
    e_i32(&e, 45000);
    e_bytes(&e, "SUB-B");
    e_bytes(&e, "");
    assert_raw(&rb.rec[3].value, &e);

    /* tombstones: the key, a null value */
    commit_key(&e, "g1", "orders", 1);
    assert_raw(&rb.rec[4].key, &e);
    assert_int_equal(rb.rec[4].value.len, -1);
    e.n = 0;
    e_i16(&e, 2);
    e_str(&e, "g-old");
    assert_raw(&rb.rec[5].key, &e);
    assert_int_equal(rb.rec[5].value.len, -1);

    for (int i = 0; i < rb.n; i++) {
        free(rb.rec[i].key.p);
        free(rb.rec[i].value.p);
    }
    kiq_wr_free(&w);
}

/* ---- records the loader must skip ---- */

static void add_raw(kiq_batch_builder_t *b, const expect_t *key, const expect_t *value)
{
    assert_int_equal(kiq_batch_builder_add(b, key ? key->b : NULL, key ? (int32_t)key->n : -1,
                                           value ? value->b : NULL, value ? (int32_t)value->n : -1, NULL, 0, NOW),
                     0);
}

static void append_builder(kiq_partition_log_t *log, kiq_batch_builder_t *b)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(b, &w), 0);
    assert_int_equal(kiq_partition_log_append(log, w.buf, w.len, 0, NULL, NULL), 0);
    kiq_wr_free(&w);
    kiq_batch_builder_free(b);
}

static void v3_value(expect_t *e, int64_t off)
{
    e->n = 0;
    e_i16(e, 3);
    e_i64(e, off);
    e_i32(e, -1);
    e_str(e, "");
    e_i64(e, NOW);
}

static void test_skips_unknown_and_malformed(void **state)
{
    fixture_t *f = *state;
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, NOW);
    kiq_group_offset_t o = offset_of("t", 0, 100, -1, NULL, NOW, -1);
    assert_int_equal(kiq_offsets_records_add_commit(&rs, "g", &o), 0);
    assert_int_equal(kiq_offsets_records_append(&rs, f->log, 0), 0);
    kiq_offsets_records_free(&rs);

    /* a batch as a newer or broken writer might leave it */
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, NOW);
    expect_t key, value;
    /* key version 9: unknown, skipped */
    key.n = 0;
    e_i16(&key, 9);
    e_str(&key, "g");
    e_str(&key, "t");
    e_i32(&key, 1);
    v3_value(&value, 101);
    add_raw(&b, &key, &value);
    /* a known key with value version 7: unknown, skipped even though the
     * body after the version would read as version 3 */
    commit_key(&key, "g", "t", 2);
    v3_value(&value, 102);
    value.b[1] = 7;
    add_raw(&b, &key, &value);
    /* no key; a key too short for its version; a commit key cut short; a
     * value too short for its version */
    add_raw(&b, NULL, &value);
    key.n = 1;
    key.b[0] = 0;
    add_raw(&b, &key, &value);
    commit_key(&key, "g", "t", 3);
    key.n -= 2;
    v3_value(&value, 103);
    add_raw(&b, &key, &value);
    commit_key(&key, "g", "t", 4);
    value.n = 1;
    add_raw(&b, &key, &value);
    /* then a good record in the same batch: applied */
    commit_key(&key, "g", "t", 5);
    v3_value(&value, 105);
    add_raw(&b, &key, &value);
    /* Kafka's oldest formats: key version 0 with value version 0 (offset,
     * metadata, commit ts): applied */
    key.n = 0;
    e_i16(&key, 0);
    e_str(&key, "g");
    e_str(&key, "t");
    e_i32(&key, 6);
    value.n = 0;
    e_i16(&value, 0);
    e_i64(&value, 106);
    e_str(&value, "old");
    e_i64(&value, NOW - 1);
    add_raw(&b, &key, &value);
    append_builder(f->log, &b);

    /* a control batch holding what would otherwise be a valid commit:
     * markers are not offsets, skipped whole */
    kiq_batch_builder_init(&b, KIQ_CODEC_NONE, NOW);
    b.control = true;
    commit_key(&key, "g", "t", 7);
    v3_value(&value, 107);
    add_raw(&b, &key, &value);
    append_builder(f->log, &b);

    /* and a later batch still loads */
    kiq_group_t *g = kiq_group_new("g", 1, 7);
    kiq_offsets_records_init(&rs, NOW);
    assert_int_equal(kiq_offsets_records_add_group(&rs, g), 0);
    assert_int_equal(kiq_offsets_records_append(&rs, f->log, 0), 0);
    kiq_offsets_records_free(&rs);
    kiq_group_free(g);
    assert_int_equal(kiq_partition_log_end_offset(f->log), 1 + 8 + 1 + 1);

    recorder_t r = {0};
    assert_int_equal(load(f->log, &r), 4);
    assert_int_equal(r.n, 4);
    check_commit(&r.ev[0], "g", "t", 0, 100, -1, "", NOW, -1);
    check_commit(&r.ev[1], "g", "t", 5, 105, -1, "", NOW, -1);
    check_commit(&r.ev[2], "g", "t", 6, 106, -1, "old", NOW - 1, -1);
    /* an empty group (a standalone committer): no protocol, leader or
     * members */
    assert_int_equal(r.ev[3].kind, 'G');
    assert_false(r.ev[3].deleted);
    assert_string_equal(r.ev[3].group, "g");
    assert_string_equal(r.ev[3].protocol_type, "");
    assert_null(r.ev[3].protocol);
    assert_null(r.ev[3].leader);
    assert_int_equal(r.ev[3].nmembers, 0);
    recorder_free(&r);
}

/* Loading reads the log in pieces of at most 1 MiB: batches past the first
 * read must come too, in order. */
static void test_load_spans_reads(void **state)
{
    fixture_t *f = *state;
    char md[3001];
    memset(md, 'm', 3000);
    md[3000] = 0;
    for (int b = 0; b < 6; b++) {
        kiq_offsets_records_t rs;
        kiq_offsets_records_init(&rs, NOW);
        for (int i = 0; i < 100; i++) {
            kiq_group_offset_t o = offset_of("big", b * 100 + i, b * 100 + i, 1, md, NOW, -1);
            assert_int_equal(kiq_offsets_records_add_commit(&rs, "g", &o), 0);
        }
        assert_int_equal(kiq_offsets_records_append(&rs, f->log, 1), 0);
        kiq_offsets_records_free(&rs);
    }
    assert_int_equal(kiq_partition_log_end_offset(f->log), 600);
    recorder_t r = {0};
    assert_int_equal(load(f->log, &r), 600);
    assert_int_equal(r.n, 600);
    for (int i = 0; i < 600; i++) {
        assert_int_equal(r.ev[i].partition, i);
        assert_int_equal(r.ev[i].offset, i);
        assert_int_equal(strlen(r.ev[i].metadata), 3000);
    }
    recorder_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kafka_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skips_unknown_and_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_spans_reads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
