/* Every API and version declared in engine/proto/schema: a message with every
 * field set encodes, decodes to the same bytes, and consumes exactly what was
 * written; defaults survive a round trip too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "proto/header.h"
#include "proto/messages.h"

static void roundtrip(const kiq_api_codec_t *c, int16_t v, bool request, bool sample)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    size_t size = request ? c->request_size : c->response_size;
    kiq_decode_fn dec = request ? c->request_decode : c->response_decode;
    kiq_encode_fn enc = request ? c->request_encode : c->response_encode;
    void *m = kiq_arena_alloc(&a, size);
    void *back = kiq_arena_alloc(&a, size);
    if (sample)
        (request ? kiq_api_request_sample(c->key) : kiq_api_response_sample(c->key))(m, v, &a, 7);
    else
        dec(&(kiq_rd_t){0}, v, &a, m); /* an empty reader fails but leaves defaults */

    kiq_wr_t w1, w2;
    kiq_wr_init(&w1);
    kiq_wr_init(&w2);
    assert_int_equal(enc(&w1, v, m), 0);
    kiq_rd_t r;
    kiq_rd_init(&r, w1.buf, w1.len);
    if (dec(&r, v, &a, back) != 0)
        fail_msg("%s %s v%d: decode failed at %zu: %s", c->name, request ? "request" : "response",
                 v, kiq_rd_offset(&r), r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(enc(&w2, v, back), 0);
    assert_int_equal(w1.len, w2.len);
    assert_memory_equal(w1.buf, w2.buf, w1.len);
    kiq_wr_free(&w1);
    kiq_wr_free(&w2);
    kiq_arena_reset(&a);
}

static void test_every_api_every_version(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        const kiq_api_codec_t *c = &kiq_api_codecs[i];
        for (int16_t v = c->min_version; v <= c->max_version; v++) {
            for (int dir = 0; dir < 2; dir++) {
                roundtrip(c, v, dir == 0, true);
                roundtrip(c, v, dir == 0, false);
                checked++;
            }
        }
    }
    assert_true(checked > 100);
}

/* A version change must change the bytes where the schema says fields
 * differ: Produce v8 vs v9 switch to compact lengths and tagged sections. */
static void test_flexible_versions_differ(void **state)
{
    (void)state;
    const kiq_api_codec_t *c = kiq_api_codec(KIQ_API_PRODUCE);
    assert_non_null(c);
    assert_int_equal(c->flexible_min, 9);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_produce_request_t m;
    kiq_api_request_sample(KIQ_API_PRODUCE)(&m, 8, &a, 3);
    kiq_wr_t w8, w9;
    kiq_wr_init(&w8);
    kiq_wr_init(&w9);
    kiq_produce_request_encode(&w8, 8, &m);
    kiq_produce_request_encode(&w9, 9, &m);
    assert_true(w8.len != w9.len);
    kiq_wr_free(&w8);
    kiq_wr_free(&w9);
    kiq_arena_reset(&a);
}

static void test_unknown_tags_survive(void **state)
{
    (void)state;
    /* ApiVersions v3 request: client_software_name, version, then a tag
     * section holding an unknown tag 7 with 2 bytes. */
    const uint8_t body[] = {0x04, 'k', 'i', 'q', 0x02, '1', 0x01, 0x07, 0x02, 0xAB, 0xCD};
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_api_versions_request_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, body, sizeof body);
    assert_int_equal(kiq_api_versions_request_decode(&r, 3, &a, &m), 0);
    assert_int_equal(m._tags.count, 1);
    assert_true(kiq_str_eq(m.client_software_name, "kiq"));
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_api_versions_request_encode(&w, 3, &m);
    assert_int_equal(w.len, sizeof body);
    assert_memory_equal(w.buf, body, sizeof body);
    kiq_wr_free(&w);
    kiq_arena_reset(&a);
}

/* A nullable struct is an int8 marker, -1 for null, then its fields:
 * DescribeTopicPartitions' cursor, exactly as Kafka writes it. */
static void test_nullable_struct(void **state)
{
    (void)state;
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_describe_topic_partitions_request_t m;
    kiq_describe_topic_partitions_request_init(&m);
    assert_true(m.cursor_null);
    m.response_partition_limit = 7;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_describe_topic_partitions_request_encode(&w, 0, &m);
    /* topics: empty compact array; the limit; null cursor; no tags */
    const uint8_t null_cursor[] = {0x01, 0, 0, 0, 7, 0xff, 0x00};
    assert_int_equal(w.len, sizeof null_cursor);
    assert_memory_equal(w.buf, null_cursor, sizeof null_cursor);
    kiq_wr_free(&w);

    m.cursor_null = false;
    m.cursor.topic_name = KIQ_STR("t");
    m.cursor.partition_index = 2;
    kiq_wr_init(&w);
    kiq_describe_topic_partitions_request_encode(&w, 0, &m);
    const uint8_t cursor[] = {0x01, 0, 0, 0, 7, 0x01, 0x02, 't', 0, 0, 0, 2, 0x00, 0x00};
    assert_int_equal(w.len, sizeof cursor);
    assert_memory_equal(w.buf, cursor, sizeof cursor);
    kiq_describe_topic_partitions_request_t back;
    kiq_rd_t r;
    kiq_rd_init(&r, w.buf, w.len);
    assert_int_equal(kiq_describe_topic_partitions_request_decode(&r, 0, &a, &back), 0);
    assert_false(back.cursor_null);
    assert_true(kiq_str_eq(back.cursor.topic_name, "t"));
    assert_int_equal(back.cursor.partition_index, 2);
    kiq_rd_init(&r, null_cursor, sizeof null_cursor);
    assert_int_equal(kiq_describe_topic_partitions_request_decode(&r, 0, &a, &back), 0);
    assert_true(back.cursor_null);
    kiq_wr_free(&w);
    kiq_arena_reset(&a);
}

/* Decodes buf as the given API's request or response at version v, checks
 * it consumed everything and encodes back to the same bytes. */
static void decode_reencode(int16_t key, bool request, int16_t v, const uint8_t *buf, size_t len, kiq_arena_t *a,
                            void *m)
{
    const kiq_api_codec_t *c = kiq_api_codec(key);
    assert_non_null(c);
    kiq_rd_t r;
    kiq_rd_init(&r, buf, len);
    if ((request ? c->request_decode : c->response_decode)(&r, v, a, m) != 0)
        fail_msg("%s v%d: decode failed at %zu: %s", c->name, v, kiq_rd_offset(&r), r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal((request ? c->request_encode : c->response_encode)(&w, v, m), 0);
    assert_int_equal(w.len, len);
    assert_memory_equal(w.buf, buf, len);
    kiq_wr_free(&w);
}

#define UUID16(b) b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b

/* KRaft's Vote as Kafka lays it out: v2 ends each partition with pre_vote,
 * v1 is the same without it. */
static void test_vote_by_hand(void **state)
{
    (void)state;
    const uint8_t v2[] = {
        0x02, 'c',                 /* cluster_id "c" (compact, nullable) */
        0, 0, 0, 3,                /* voter_id */
        0x02,                      /* topics: 1 */
        0x02, 'm',                 /*   topic_name */
        0x02,                      /*   partitions: 1 */
        0, 0, 0, 0,                /*     partition_index */
        0, 0, 0, 5,                /*     replica_epoch */
        0, 0, 0, 1,                /*     replica_id */
        UUID16(0x11),              /*     replica_directory_id */
        UUID16(0x22),              /*     voter_directory_id */
        0, 0, 0, 4,                /*     last_offset_epoch */
        0, 0, 0, 0, 0, 0, 0, 100,  /*     last_offset */
        0x01,                      /*     pre_vote */
        0x00, 0x00, 0x00,          /* partition, topic and request tags */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_vote_request_t m;
    decode_reencode(KIQ_API_VOTE, true, 2, v2, sizeof v2, &a, &m);
    assert_true(kiq_str_eq(m.cluster_id, "c"));
    assert_int_equal(m.voter_id, 3);
    assert_int_equal(m.topics_n, 1);
    const kiq_vote_request_topics_partitions_t *p = &m.topics[0].partitions[0];
    assert_int_equal(p->replica_epoch, 5);
    assert_int_equal(p->replica_id, 1);
    assert_int_equal(p->replica_directory_id.b[15], 0x11);
    assert_int_equal(p->voter_directory_id.b[0], 0x22);
    assert_int_equal(p->last_offset_epoch, 4);
    assert_int_equal(p->last_offset, 100);
    assert_true(p->pre_vote);

    uint8_t v1[sizeof v2 - 1];
    memcpy(v1, v2, sizeof v2 - 4);
    memcpy(v1 + sizeof v2 - 4, v2 + sizeof v2 - 3, 3); /* no pre_vote byte */
    decode_reencode(KIQ_API_VOTE, true, 1, v1, sizeof v1, &a, &m);
    assert_false(m.topics[0].partitions[0].pre_vote);
    /* a fresh request: null cluster_id, voter_id -1 */
    kiq_vote_request_init(&m);
    assert_null(m.cluster_id.p);
    assert_int_equal(m.voter_id, -1);
    kiq_arena_reset(&a);
}

/* FetchSnapshot v1: cluster_id and each partition's replica_directory_id
 * are tagged (tag 0 both), the snapshot id a struct with its own tags. */
static void test_fetch_snapshot_by_hand(void **state)
{
    (void)state;
    const uint8_t req[] = {
        0, 0, 0, 1,                /* replica_id */
        0x7f, 0xff, 0xff, 0xff,    /* max_bytes */
        0x02,                      /* topics: 1 */
        0x02, 'm',                 /*   name */
        0x02,                      /*   partitions: 1 */
        0, 0, 0, 0,                /*     partition */
        0, 0, 0, 5,                /*     current_leader_epoch */
        0, 0, 0, 0, 0, 0, 0, 100,  /*     snapshot_id.end_offset */
        0, 0, 0, 4,                /*     snapshot_id.epoch */
        0x00,                      /*     snapshot_id's tags */
        0, 0, 0, 0, 0, 0, 0x10, 0, /*     position 4096 */
        0x01, 0x00, 0x10,          /*     tags: 1, tag 0, 16 bytes */
        UUID16(0x33),              /*       replica_directory_id */
        0x00,                      /*   topic tags */
        0x01, 0x00, 0x02, 0x02, 'c', /* tags: 1, tag 0, 2 bytes: cluster_id "c" */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_fetch_snapshot_request_t m;
    decode_reencode(KIQ_API_FETCH_SNAPSHOT, true, 1, req, sizeof req, &a, &m);
    assert_true(kiq_str_eq(m.cluster_id, "c"));
    assert_int_equal(m.max_bytes, INT32_MAX);
    const kiq_fetch_snapshot_request_topics_partitions_t *p = &m.topics[0].partitions[0];
    assert_int_equal(p->snapshot_id.end_offset, 100);
    assert_int_equal(p->snapshot_id.epoch, 4);
    assert_int_equal(p->position, 4096);
    assert_int_equal(p->replica_directory_id.b[0], 0x33);
    assert_int_equal(m._tags.count, 0); /* known tags are fields, not kept raw */

    /* A fresh request writes neither tag: null cluster_id, zero uuid. */
    kiq_fetch_snapshot_request_init(&m);
    assert_int_equal(m.replica_id, -1);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_fetch_snapshot_request_encode(&w, 1, &m), 0);
    const uint8_t empty[] = {0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x01, 0x00};
    assert_int_equal(w.len, sizeof empty);
    assert_memory_equal(w.buf, empty, sizeof empty);
    kiq_wr_free(&w);
    kiq_arena_reset(&a);
}

/* UpdateRaftVoter's response names the leader in a tagged struct, written
 * only when it differs from the default (-1, -1, "", 0). */
static void test_update_raft_voter_response_by_hand(void **state)
{
    (void)state;
    const uint8_t resp[] = {
        0, 0, 0, 0,                /* throttle_time_ms */
        0, 6,                      /* error_code NOT_LEADER_OR_FOLLOWER */
        0x01, 0x00, 0x0f,          /* tags: 1, tag 0, 15 bytes */
        0, 0, 0, 2,                /*   leader_id */
        0, 0, 0, 7,                /*   leader_epoch */
        0x02, 'h',                 /*   host */
        0, 0, 0x23, 0x85,          /*   port 9093 (int32) */
        0x00,                      /*   its tags */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_update_raft_voter_response_t m;
    decode_reencode(KIQ_API_UPDATE_RAFT_VOTER, false, 0, resp, sizeof resp, &a, &m);
    assert_int_equal(m.error_code, 6);
    assert_int_equal(m.current_leader.leader_id, 2);
    assert_int_equal(m.current_leader.leader_epoch, 7);
    assert_true(kiq_str_eq(m.current_leader.host, "h"));
    assert_int_equal(m.current_leader.port, 9093);
    kiq_update_raft_voter_response_init(&m);
    assert_int_equal(m.current_leader.leader_id, -1);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_update_raft_voter_response_encode(&w, 0, &m), 0);
    const uint8_t bare[] = {0, 0, 0, 0, 0, 0, 0x00};
    assert_int_equal(w.len, sizeof bare);
    assert_memory_equal(w.buf, bare, sizeof bare);
    kiq_wr_free(&w);
    kiq_arena_reset(&a);
}

static void test_truncated_and_hostile_counts(void **state)
{
    (void)state;
    kiq_arena_t a;
    kiq_arena_init(&a);
    /* Metadata v1: topics array claims 2^31-1 elements in a 4-byte frame. */
    const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff};
    kiq_metadata_request_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, huge, sizeof huge);
    assert_int_equal(kiq_metadata_request_decode(&r, 1, &a, &m), -1);
    assert_true(a.total < 4096);
    /* A string length running past the end. */
    const uint8_t trunc[] = {0x00, 0x00, 0x00, 0x01, 0x00, 0x09, 'a'};
    kiq_rd_init(&r, trunc, sizeof trunc);
    assert_int_equal(kiq_metadata_request_decode(&r, 1, &a, &m), -1);
    assert_non_null(r.err);
    kiq_arena_reset(&a);
}

static void test_header_versions(void **state)
{
    (void)state;
    assert_int_equal(kiq_request_header_version(KIQ_API_METADATA, 8), 1);
    assert_int_equal(kiq_request_header_version(KIQ_API_METADATA, 9), 2);
    assert_int_equal(kiq_response_header_version(KIQ_API_API_VERSIONS, 3), 0);
    assert_int_equal(kiq_response_header_version(KIQ_API_FETCH, 12), 1);
    assert_int_equal(kiq_response_header_version(KIQ_API_FETCH, 11), 0);
    assert_int_equal(kiq_request_header_version(9999, 0), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_api_every_version),
        cmocka_unit_test(test_flexible_versions_differ),
        cmocka_unit_test(test_unknown_tags_survive),
        cmocka_unit_test(test_nullable_struct),
        cmocka_unit_test(test_vote_by_hand),
        cmocka_unit_test(test_fetch_snapshot_by_hand),
        cmocka_unit_test(test_update_raft_voter_response_by_hand),
        cmocka_unit_test(test_truncated_and_hostile_counts),
        cmocka_unit_test(test_header_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
