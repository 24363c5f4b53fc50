/* Every API and version declared in engine/proto/schema: a message with every
 * field set encodes, decodes to the same bytes, and consumes exactly what was
 * written; defaults survive a round trip too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
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
        cmocka_unit_test(test_truncated_and_hostile_counts),
        cmocka_unit_test(test_header_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
