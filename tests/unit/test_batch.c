/* RecordBatch v2: the builder with every codec, validation and each error
 * code it returns, batch and record iteration, in-place stamping, and the
 * batches kcat really sent (tests/corpus/kcat-<codec>). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/error.h"
#include "record/batch.h"
#include "record/compression.h"
#include "record/crc32c.h"
#include "support/corpus.h"

static const int codecs[] = {KIQ_CODEC_NONE, KIQ_CODEC_GZIP, KIQ_CODEC_SNAPPY, KIQ_CODEC_LZ4, KIQ_CODEC_ZSTD};
#define NCODECS (sizeof codecs / sizeof codecs[0])
#define BASE_TS 1700000000000LL

static void recrc(uint8_t *p, size_t len)
{
    kiq_put_be32(p + KIQ_BATCH_POS_CRC, kiq_crc32c(0, p + KIQ_BATCH_POS_ATTRIBUTES, len - KIQ_BATCH_POS_ATTRIBUTES));
}

static void expect_code(const uint8_t *p, size_t len, size_t max, int want)
{
    kiq_error_clear();
    int rc = kiq_batch_validate(p, len, max, KIQ_BATCH_MAX_DECOMPRESSED, NULL, NULL);
    if (rc != want) fail_msg("validate gave %d, want %d (%s)", rc, want, kiq_error_get());
    if (want) assert_true(strlen(kiq_error_get()) > 0);
}

/* Three records: headers, a null key, an empty value, a timestamp below the
 * base (negative delta), varied sizes. */
static void build_sample(kiq_wr_t *out, int codec)
{
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, codec, BASE_TS);
    kiq_record_header_t hdrs[2] = {
        {KIQ_STR("trace"), {(const uint8_t *)"abc", 3}},
        {KIQ_STR("empty-null"), {NULL, 0}},
    };
    assert_int_equal(kiq_batch_builder_add(&b, "k0", 2, "value-0", 7, hdrs, 2, BASE_TS), 0);
    assert_int_equal(kiq_batch_builder_add(&b, NULL, -1, "", 0, NULL, 0, BASE_TS + 250), 0);
    char big[3000];
    memset(big, 'q', sizeof big);
    assert_int_equal(kiq_batch_builder_add(&b, "k2", 2, big, sizeof big, NULL, 0, BASE_TS - 5), 0);
    assert_int_equal(b.count, 3);
    int rc = kiq_batch_builder_finish(&b, out);
    if (rc) fail_msg("finish: %s", kiq_error_get());
    kiq_batch_builder_free(&b);
}

struct seen {
    int n;
    int64_t offsets[8];
    int64_t timestamps[8];
    kiq_bytes_t keys[8];
    char values[8][16];
    int32_t value_lens[8];
    int header_counts[8];
    char header0_key[8][16];
    char header0_val[8][16];
    bool header1_null[8];
    int stop_after;
};

static int collect(const kiq_record_t *r, void *ctx)
{
    struct seen *s = ctx;
    assert_true(s->n < 8);
    int i = s->n++;
    s->offsets[i] = r->offset;
    s->timestamps[i] = r->timestamp;
    s->keys[i] = r->key;
    s->value_lens[i] = r->value.len;
    snprintf(s->values[i], sizeof s->values[i], "%.*s", r->value.len > 15 ? 15 : (int)r->value.len,
             r->value.p ? (const char *)r->value.p : "");
    s->header_counts[i] = r->header_count;
    kiq_record_header_iter_t it;
    kiq_record_headers_init(&it, r);
    kiq_record_header_t h;
    int j = 0;
    while (kiq_record_headers_next(&it, &h)) {
        if (j == 0) {
            snprintf(s->header0_key[i], 16, "%.*s", (int)h.key.len, h.key.p);
            snprintf(s->header0_val[i], 16, "%.*s", (int)h.value.len, (const char *)h.value.p);
        }
        if (j == 1) s->header1_null[i] = h.value.p == NULL;
        j++;
    }
    assert_int_equal(j, r->header_count);
    return s->stop_after && s->n == s->stop_after ? 7 : 0;
}

static void test_build_validate_iterate(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCODECS; c++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        kiq_wr_raw(&w, "prefix", 6); /* the builder appends */
        build_sample(&w, codecs[c]);
        const uint8_t *p = w.buf + 6;
        size_t len = w.len - 6;

        kiq_batch_header_t h;
        int rc = kiq_batch_validate(p, len, 1 << 20, KIQ_BATCH_MAX_DECOMPRESSED, &h, NULL);
        if (rc) fail_msg("%s: validate %d: %s", kiq_codec_name(codecs[c]), rc, kiq_error_get());
        assert_int_equal(kiq_batch_size(&h), len);
        assert_int_equal(h.magic, 2);
        assert_int_equal(kiq_batch_codec(&h), codecs[c]);
        assert_int_equal(h.record_count, 3);
        assert_int_equal(h.last_offset_delta, 2);
        assert_true(h.base_offset == 0);
        assert_int_equal(h.partition_leader_epoch, -1);
        assert_true(h.base_timestamp == BASE_TS);
        assert_true(h.max_timestamp == BASE_TS + 250);
        assert_true(h.producer_id == -1);
        assert_int_equal(h.producer_epoch, -1);
        assert_int_equal(h.base_sequence, -1);
        assert_false(kiq_batch_is_transactional(&h));
        assert_false(kiq_batch_is_control(&h));
        assert_false(kiq_batch_is_log_append_time(&h));
        if (codecs[c] != KIQ_CODEC_NONE) assert_true(len < 1000); /* the 3000 q's compressed */

        kiq_batch_set_base_offset(w.buf + 6, 1000);
        struct seen s = {0};
        assert_int_equal(kiq_batch_foreach_record(p, len, 1 << 20, collect, &s), 0);
        assert_int_equal(s.n, 3);
        for (int i = 0; i < 3; i++) assert_true(s.offsets[i] == 1000 + i);
        assert_true(s.timestamps[0] == BASE_TS);
        assert_true(s.timestamps[1] == BASE_TS + 250);
        assert_true(s.timestamps[2] == BASE_TS - 5);
        assert_int_equal(s.keys[0].len, 2);
        assert_null(s.keys[1].p);
        assert_string_equal(s.values[0], "value-0");
        assert_int_equal(s.value_lens[1], 0);
        assert_int_equal(s.value_lens[2], 3000);
        assert_string_equal(s.values[2], "qqqqqqqqqqqqqqq");
        assert_int_equal(s.header_counts[0], 2);
        assert_string_equal(s.header0_key[0], "trace");
        assert_string_equal(s.header0_val[0], "abc");
        assert_true(s.header1_null[0]);
        assert_int_equal(s.header_counts[1], 0);

        /* a callback's non-zero return stops the walk and comes back */
        struct seen s2 = {.stop_after = 2};
        assert_int_equal(kiq_batch_foreach_record(p, len, 1 << 20, collect, &s2), 7);
        assert_int_equal(s2.n, 2);

        /* the decompression bound applies */
        if (codecs[c] != KIQ_CODEC_NONE)
            assert_int_equal(kiq_batch_foreach_record(p, len, 100, collect, &s2), -1);
        kiq_wr_free(&w);
    }
}

static void test_builder_producer_fields(void **state)
{
    (void)state;
    kiq_batch_builder_t b;
    kiq_batch_builder_init(&b, KIQ_CODEC_LZ4, 5);
    kiq_batch_builder_set_producer(&b, 4242, 3, 17);
    b.transactional = true;
    b.partition_leader_epoch = 9;
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(&b, &w), -1); /* no records yet */
    assert_int_equal(w.len, 0);
    assert_int_equal(kiq_batch_builder_add(&b, "a", 1, "b", 1, NULL, 0, 6), 0);
    assert_int_equal(kiq_batch_builder_add(&b, NULL, -2, "b", 1, NULL, 0, 6), -1);
    kiq_record_header_t bad = {KIQ_STR_NULL, {NULL, 0}};
    assert_int_equal(kiq_batch_builder_add(&b, NULL, -1, NULL, -1, &bad, 1, 6), -1);
    assert_int_equal(b.count, 1);
    assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
    kiq_batch_builder_free(&b);

    kiq_batch_header_t h;
    assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, &h, NULL), 0);
    assert_true(h.producer_id == 4242);
    assert_int_equal(h.producer_epoch, 3);
    assert_int_equal(h.base_sequence, 17);
    assert_true(kiq_batch_is_transactional(&h));
    assert_int_equal(h.partition_leader_epoch, 9);
    assert_int_equal(kiq_batch_codec(&h), KIQ_CODEC_LZ4);
    assert_true(h.max_timestamp == 6);
    assert_int_equal(h.attributes, KIQ_CODEC_LZ4 | KIQ_BATCH_ATTR_TRANSACTIONAL);
    kiq_wr_free(&w);
}

static void test_crc_and_magic(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    build_sample(&w, KIQ_CODEC_NONE);
    expect_code(w.buf, w.len, 0, 0);
    assert_int_equal(kiq_batch_check(w.buf, w.len, NULL), 0);

    /* a flipped bit anywhere the CRC covers */
    size_t spots[] = {KIQ_BATCH_POS_ATTRIBUTES + 1, KIQ_BATCH_POS_RECORD_COUNT, KIQ_BATCH_HEADER_SIZE + 3, w.len - 1};
    for (size_t i = 0; i < 4; i++) {
        w.buf[spots[i]] ^= 0x10;
        expect_code(w.buf, w.len, 0, KIQ_ERR_CORRUPT_MESSAGE);
        assert_int_equal(kiq_batch_check(w.buf, w.len, NULL), KIQ_ERR_CORRUPT_MESSAGE);
        w.buf[spots[i]] ^= 0x10;
    }
    w.buf[KIQ_BATCH_POS_CRC + 2] ^= 0x01;
    expect_code(w.buf, w.len, 0, KIQ_ERR_CORRUPT_MESSAGE);
    assert_non_null(strstr(kiq_error_get(), "CRC"));
    w.buf[KIQ_BATCH_POS_CRC + 2] ^= 0x01;

    /* old message formats and unknown magics */
    w.buf[KIQ_BATCH_POS_MAGIC] = 1;
    expect_code(w.buf, w.len, 0, KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
    w.buf[KIQ_BATCH_POS_MAGIC] = 0;
    expect_code(w.buf, w.len, 0, KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
    assert_int_equal(kiq_batch_check(w.buf, w.len, NULL), KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
    w.buf[KIQ_BATCH_POS_MAGIC] = 3;
    expect_code(w.buf, w.len, 0, KIQ_ERR_CORRUPT_MESSAGE);
    w.buf[KIQ_BATCH_POS_MAGIC] = 2;
    expect_code(w.buf, w.len, 0, 0);

    /* base offset and leader epoch are outside the CRC */
    w.buf[0] = 0x7f;
    w.buf[KIQ_BATCH_POS_LEADER_EPOCH] = 0x12;
    expect_code(w.buf, w.len, 0, 0);
    kiq_wr_free(&w);
}

/* A v1 message as old clients send: offset, size, crc, magic 1, attributes,
 * timestamp, key -1, value. */
static void put_v1_message(kiq_wr_t *w, const char *value)
{
    size_t vlen = strlen(value);
    kiq_wr_i64(w, 0);
    kiq_wr_i32(w, (int32_t)(4 + 1 + 1 + 8 + 4 + 4 + vlen));
    kiq_wr_u32(w, 0xdeadbeef);
    kiq_wr_i8(w, 1);
    kiq_wr_i8(w, 0);
    kiq_wr_i64(w, BASE_TS);
    kiq_wr_i32(w, -1);
    kiq_wr_i32(w, (int32_t)vlen);
    kiq_wr_raw(w, value, vlen);
}

static void test_old_format_message(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    put_v1_message(&w, "hello");
    kiq_batch_header_t h;
    assert_int_equal(kiq_batch_header_parse(w.buf, w.len, &h), -1);
    assert_int_equal(h.magic, 1);
    assert_int_equal(h.crc, 0xdeadbeef);
    assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, &h, NULL), KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
    assert_int_equal(kiq_batch_foreach_record(w.buf, w.len, 1 << 20, collect, NULL), -1);

    /* too short to see the magic byte */
    assert_int_equal(kiq_batch_header_parse(w.buf, 16, &h), -1);
    assert_int_equal(h.magic, -1);
    expect_code(w.buf, 16, 0, KIQ_ERR_CORRUPT_MESSAGE);
    kiq_wr_free(&w);
}

static void test_truncated_and_too_large(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    build_sample(&w, KIQ_CODEC_GZIP);
    size_t len = w.len;
    expect_code(w.buf, len - 1, 0, KIQ_ERR_CORRUPT_MESSAGE);
    expect_code(w.buf, 60, 0, KIQ_ERR_CORRUPT_MESSAGE);
    expect_code(w.buf, 0, 0, KIQ_ERR_CORRUPT_MESSAGE);
    assert_int_equal(kiq_batch_foreach_record(w.buf, len - 1, 1 << 20, collect, NULL), -1);
    /* more bytes than the length field says */
    kiq_wr_i8(&w, 0);
    expect_code(w.buf, len + 1, 0, KIQ_ERR_CORRUPT_MESSAGE);

    expect_code(w.buf, len, len, 0);
    expect_code(w.buf, len, len - 1, KIQ_ERR_MESSAGE_TOO_LARGE);
    /* size is judged before the CRC, as Kafka does */
    w.buf[len - 1] ^= 1;
    expect_code(w.buf, len, len - 1, KIQ_ERR_MESSAGE_TOO_LARGE);
    expect_code(w.buf, len, len, KIQ_ERR_CORRUPT_MESSAGE);
    kiq_wr_free(&w);
}

/* Records written by hand, independent of the builder. */
static void put_record(kiq_wr_t *w, int32_t off_delta, int64_t ts_delta, const char *key, const char *value)
{
    kiq_wr_t body;
    kiq_wr_init(&body);
    kiq_wr_i8(&body, 0);
    kiq_wr_varlong(&body, ts_delta);
    kiq_wr_varint(&body, off_delta);
    kiq_wr_varint(&body, key ? (int32_t)strlen(key) : -1);
    if (key) kiq_wr_raw(&body, key, strlen(key));
    kiq_wr_varint(&body, value ? (int32_t)strlen(value) : -1);
    if (value) kiq_wr_raw(&body, value, strlen(value));
    kiq_wr_varint(&body, 0);
    kiq_wr_varint(w, (int32_t)body.len);
    kiq_wr_raw(w, body.buf, body.len);
    kiq_wr_free(&body);
}

static void make_batch(kiq_wr_t *out, int codec, const kiq_wr_t *recs, int32_t count, int32_t last_delta)
{
    out->len = 0;
    uint8_t *h = kiq_wr_reserve(out, KIQ_BATCH_HEADER_SIZE);
    memset(h, 0, KIQ_BATCH_HEADER_SIZE);
    assert_int_equal(kiq_compress(codec, recs->buf, recs->len, out), 0);
    h = out->buf;
    kiq_put_be32(h + KIQ_BATCH_POS_LENGTH, (uint32_t)(out->len - KIQ_BATCH_LOG_OVERHEAD));
    h[KIQ_BATCH_POS_MAGIC] = 2;
    kiq_put_be16(h + KIQ_BATCH_POS_ATTRIBUTES, (uint16_t)codec);
    kiq_put_be32(h + KIQ_BATCH_POS_LAST_OFFSET_DELTA, (uint32_t)last_delta);
    kiq_put_be64(h + KIQ_BATCH_POS_BASE_TIMESTAMP, (uint64_t)BASE_TS);
    kiq_put_be64(h + KIQ_BATCH_POS_MAX_TIMESTAMP, (uint64_t)BASE_TS);
    kiq_put_be64(h + KIQ_BATCH_POS_PRODUCER_ID, (uint64_t)-1);
    kiq_put_be16(h + KIQ_BATCH_POS_PRODUCER_EPOCH, 0xffff);
    kiq_put_be32(h + KIQ_BATCH_POS_BASE_SEQUENCE, 0xffffffff);
    kiq_put_be32(h + KIQ_BATCH_POS_RECORD_COUNT, (uint32_t)count);
    recrc(out->buf, out->len);
}

/* A compressed batch whose records section inflates to nothing (or is
 * empty) is refused as INVALID_RECORD; the walk over no bytes is defined
 * behaviour (UBSan once saw NULL + 0 here). */
static void test_batch_inflating_to_nothing(void **state)
{
    (void)state;
    kiq_wr_t none, out;
    kiq_wr_init(&none);
    kiq_wr_init(&out);
    for (size_t c = 1; c < NCODECS; c++) {
        make_batch(&out, codecs[c], &none, 1, 0);
        assert_int_equal(kiq_batch_validate(out.buf, out.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, NULL, NULL),
                         KIQ_ERR_INVALID_RECORD);
        /* no compressed bytes at all */
        out.len = KIQ_BATCH_HEADER_SIZE;
        kiq_put_be32(out.buf + KIQ_BATCH_POS_LENGTH, (uint32_t)(out.len - KIQ_BATCH_LOG_OVERHEAD));
        recrc(out.buf, out.len);
        assert_int_equal(kiq_batch_validate(out.buf, out.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, NULL, NULL),
                         KIQ_ERR_INVALID_RECORD);
    }
    kiq_wr_free(&none);
    kiq_wr_free(&out);
}

static void test_invalid_records(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCODECS; c++) {
        int codec = codecs[c];
        kiq_wr_t r, b;
        kiq_wr_init(&r);
        kiq_wr_init(&b);
        put_record(&r, 0, 0, "a", "1");
        put_record(&r, 1, 3, NULL, "2");
        put_record(&r, 2, 6, "c", NULL);

        make_batch(&b, codec, &r, 3, 2);
        expect_code(b.buf, b.len, 0, 0);

        /* header count and records disagree */
        make_batch(&b, codec, &r, 4, 3);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        make_batch(&b, codec, &r, 2, 1);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        assert_non_null(strstr(kiq_error_get(), "follow the last"));
        /* last offset delta inconsistent with the count */
        make_batch(&b, codec, &r, 3, 3);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        make_batch(&b, codec, &r, 0, -1);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);

        /* trailing junk after the last record */
        kiq_wr_i8(&r, 0);
        make_batch(&b, codec, &r, 3, 2);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);

        /* offset deltas with a gap: validate refuses, iteration (as over a
         * compacted batch) accepts */
        r.len = 0;
        put_record(&r, 0, 0, "a", "1");
        put_record(&r, 2, 0, "b", "2");
        make_batch(&b, codec, &r, 2, 2);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        struct seen s = {0};
        assert_int_equal(kiq_batch_foreach_record(b.buf, b.len, 1 << 20, collect, &s), 0);
        assert_int_equal(s.n, 2);
        assert_true(s.offsets[1] == 2);
        /* decreasing deltas fail even there */
        r.len = 0;
        put_record(&r, 1, 0, "a", "1");
        put_record(&r, 0, 0, "b", "2");
        make_batch(&b, codec, &r, 2, 1);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        assert_int_equal(kiq_batch_foreach_record(b.buf, b.len, 1 << 20, NULL, NULL), -1);

        /* a record whose length claims more than its fields use */
        r.len = 0;
        put_record(&r, 0, 0, "a", "1");
        r.buf[0] += 2;
        kiq_wr_raw(&r, "\0\0", 2);
        make_batch(&b, codec, &r, 1, 0);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        assert_non_null(strstr(kiq_error_get(), "left over"));
        /* ... or less */
        r.len = 0;
        put_record(&r, 0, 0, "a", "1");
        r.buf[0] -= 2;
        make_batch(&b, codec, &r, 1, 0);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        /* a key length past the record */
        r.len = 0;
        put_record(&r, 0, 0, "a", "1");
        r.buf[4] = 0x40; /* key length varint: 32 */
        make_batch(&b, codec, &r, 1, 0);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        /* a key length below -1 */
        r.buf[4] = 0x03; /* zigzag -2 */
        make_batch(&b, codec, &r, 1, 0);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        assert_non_null(strstr(kiq_error_get(), "key has a negative length"));
        /* a negative record length */
        r.buf[0] = 0x01;
        make_batch(&b, codec, &r, 1, 0);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
        kiq_wr_free(&r);
        kiq_wr_free(&b);
    }
}

static void test_header_edge_cases(void **state)
{
    (void)state;
    /* a header count larger than the record can hold */
    kiq_wr_t r, b;
    kiq_wr_init(&r);
    kiq_wr_init(&b);
    kiq_wr_t body;
    kiq_wr_init(&body);
    kiq_wr_i8(&body, 0);
    kiq_wr_varlong(&body, 0);
    kiq_wr_varint(&body, 0);
    kiq_wr_varint(&body, -1);
    kiq_wr_varint(&body, -1);
    kiq_wr_varint(&body, 1000000);
    kiq_wr_varint(&r, (int32_t)body.len);
    kiq_wr_raw(&r, body.buf, body.len);
    make_batch(&b, KIQ_CODEC_NONE, &r, 1, 0);
    expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);

    /* a header with a null key */
    body.len -= kiq_varint_size(1000000);
    kiq_wr_varint(&body, 1);
    kiq_wr_varint(&body, -1);
    kiq_wr_varint(&body, 0);
    r.len = 0;
    kiq_wr_varint(&r, (int32_t)body.len);
    kiq_wr_raw(&r, body.buf, body.len);
    make_batch(&b, KIQ_CODEC_NONE, &r, 1, 0);
    expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
    assert_non_null(strstr(kiq_error_get(), "header key"));
    kiq_wr_free(&body);
    kiq_wr_free(&r);
    kiq_wr_free(&b);
}

static void test_bad_compressed_payload(void **state)
{
    (void)state;
    kiq_wr_t r, b;
    kiq_wr_init(&r);
    kiq_wr_init(&b);
    put_record(&r, 0, 0, "a", "1");
    for (size_t c = 1; c < NCODECS; c++) {
        make_batch(&b, codecs[c], &r, 1, 0);
        /* cut the compressed data short and fix up length and CRC */
        b.len -= 3;
        kiq_put_be32(b.buf + KIQ_BATCH_POS_LENGTH, (uint32_t)(b.len - KIQ_BATCH_LOG_OVERHEAD));
        recrc(b.buf, b.len);
        expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
    }
    /* an unknown codec number */
    make_batch(&b, KIQ_CODEC_NONE, &r, 1, 0);
    kiq_put_be16(b.buf + KIQ_BATCH_POS_ATTRIBUTES, 6);
    recrc(b.buf, b.len);
    expect_code(b.buf, b.len, 0, KIQ_ERR_INVALID_RECORD);
    assert_non_null(strstr(kiq_error_get(), "codec"));
    kiq_wr_free(&r);
    kiq_wr_free(&b);
}

static void test_decompression_bomb(void **state)
{
    (void)state;
    /* one record whose value decompresses past the validation limit */
    size_t n = KIQ_BATCH_MAX_DECOMPRESSED + 1;
    char *zeros = calloc(1, n);
    assert_non_null(zeros);
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_ZSTD, 0);
    assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, zeros, (int32_t)n, NULL, 0, 0), 0);
    free(zeros);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(kiq_batch_builder_finish(&bb, &w), 0);
    kiq_batch_builder_free(&bb);
    assert_true(w.len < 1 << 20);
    expect_code(w.buf, w.len, 1 << 20, KIQ_ERR_MESSAGE_TOO_LARGE);
    assert_non_null(strstr(kiq_error_get(), "exceeds"));
    kiq_wr_free(&w);
}

/* kafkaiq.max.decompressed.batch.bytes: a batch that inflates past the
 * configured bound is refused with every codec, one just under it taken. */
static void test_decompressed_bound(void **state)
{
    (void)state;
    size_t n = (size_t)1 << 20;
    char *zeros = calloc(1, n);
    assert_non_null(zeros);
    for (size_t c = 1; c < NCODECS; c++) {
        kiq_batch_builder_t bb;
        kiq_batch_builder_init(&bb, codecs[c], 0);
        assert_int_equal(kiq_batch_builder_add(&bb, NULL, -1, zeros, (int32_t)n, NULL, 0, 0), 0);
        kiq_wr_t w;
        kiq_wr_init(&w);
        assert_int_equal(kiq_batch_builder_finish(&bb, &w), 0);
        kiq_batch_builder_free(&bb);
        assert_true(w.len < n / 10);
        assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, n / 2, NULL, NULL), KIQ_ERR_MESSAGE_TOO_LARGE);
        assert_non_null(strstr(kiq_error_get(), "exceeds the limit of 524288"));
        assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, n + 64, NULL, NULL), 0);
        kiq_wr_free(&w);
    }
    free(zeros);
}

static void test_stamping(void **state)
{
    (void)state;
    for (size_t c = 0; c < NCODECS; c++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        build_sample(&w, codecs[c]);
        uint32_t crc = kiq_be32(w.buf + KIQ_BATCH_POS_CRC);

        kiq_batch_set_base_offset(w.buf, 123456789012LL);
        kiq_batch_set_leader_epoch(w.buf, 77);
        kiq_batch_header_t h;
        assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, &h, NULL), 0);
        assert_int_equal(kiq_be32(w.buf + KIQ_BATCH_POS_CRC), crc);
        assert_true(h.base_offset == 123456789012LL);
        assert_true(kiq_batch_last_offset(&h) == 123456789014LL);
        assert_int_equal(h.partition_leader_epoch, 77);

        int64_t now = BASE_TS + 99999;
        kiq_batch_set_log_append_time(w.buf, now);
        assert_int_not_equal(kiq_be32(w.buf + KIQ_BATCH_POS_CRC), crc);
        assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, &h, NULL), 0);
        assert_true(kiq_batch_is_log_append_time(&h));
        assert_int_equal(kiq_batch_codec(&h), codecs[c]);
        assert_true(h.max_timestamp == now);
        assert_true(h.base_timestamp == BASE_TS);
        struct seen s = {0};
        assert_int_equal(kiq_batch_foreach_record(w.buf, w.len, 1 << 20, collect, &s), 0);
        assert_int_equal(s.n, 3);
        for (int i = 0; i < 3; i++) {
            assert_true(s.timestamps[i] == now);
            assert_true(s.offsets[i] == 123456789012LL + i);
        }
        kiq_wr_free(&w);
    }
}

static void test_batch_iteration(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    build_sample(&w, KIQ_CODEC_NONE);
    size_t first = w.len;
    put_v1_message(&w, "old");
    size_t second = w.len - first;
    build_sample(&w, KIQ_CODEC_ZSTD);
    size_t third = w.len - first - second;

    kiq_batch_iter_t it;
    const uint8_t *p;
    size_t len;
    kiq_batch_header_t h;
    kiq_batch_iter_init(&it, w.buf, w.len, false);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
    assert_ptr_equal(p, w.buf);
    assert_int_equal(len, first);
    assert_int_equal(h.record_count, 3);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
    assert_int_equal(len, second);
    assert_int_equal(h.magic, 1);
    assert_int_equal(kiq_batch_validate(p, len, 0, KIQ_BATCH_MAX_DECOMPRESSED, NULL, NULL), KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
    assert_int_equal(len, third);
    assert_int_equal(kiq_batch_codec(&h), KIQ_CODEC_ZSTD);
    assert_int_equal(kiq_batch_validate(p, len, 0, KIQ_BATCH_MAX_DECOMPRESSED, NULL, NULL), 0);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 0);
    assert_false(it.partial);

    /* a truncated last batch: an error for produce, the end for fetch */
    for (size_t cut = 1; cut < third; cut += third / 7 + 1) {
        kiq_batch_iter_init(&it, w.buf, w.len - cut, false);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), -1);
        assert_non_null(strstr(kiq_error_get(), "truncated"));

        kiq_batch_iter_init(&it, w.buf, w.len - cut, true);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 1);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 0);
        assert_true(it.partial);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 0);
    }

    /* an impossible length is an error even when partial batches are fine */
    kiq_put_be32(w.buf + KIQ_BATCH_POS_LENGTH, 10);
    kiq_batch_iter_init(&it, w.buf, w.len, true);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), -1);
    kiq_put_be32(w.buf + KIQ_BATCH_POS_LENGTH, 0x80000000u);
    kiq_batch_iter_init(&it, w.buf, w.len, true);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), -1);

    /* empty records field */
    kiq_batch_iter_init(&it, w.buf, 0, false);
    assert_int_equal(kiq_batch_iter_next(&it, &p, &len, &h), 0);
    kiq_wr_free(&w);
}

/* ---- the batches kcat sent ---- */

/* The records field of the only partition of a Produce v7 request (header
 * v1), parsed by hand. */
static kiq_bytes_t produce_v7_records(const uint8_t *frame, size_t len)
{
    kiq_rd_t r;
    kiq_rd_init(&r, frame, len);
    assert_int_equal(kiq_rd_i16(&r), 0); /* Produce */
    assert_int_equal(kiq_rd_i16(&r), 7);
    kiq_rd_i32(&r);                      /* correlation id */
    kiq_str_t client = kiq_rd_string(&r, false, true);
    assert_true(client.len > 4 && memcmp(client.p, "kcat", 4) == 0);
    kiq_rd_string(&r, false, true); /* transactional id */
    kiq_rd_i16(&r);                 /* acks */
    kiq_rd_i32(&r);                 /* timeout */
    assert_int_equal(kiq_rd_array_len(&r, false, false, 6), 1);
    kiq_rd_string(&r, false, false); /* topic */
    assert_int_equal(kiq_rd_array_len(&r, false, false, 8), 1);
    kiq_rd_i32(&r); /* partition */
    kiq_bytes_t recs = kiq_rd_bytes(&r, false, true);
    assert_null(r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_non_null(recs.p);
    return recs;
}

struct kcat_seen {
    int n;
    int64_t ts;
};

/* kcat produced records with key "k", values "1".."20" and header hdr=val. */
static int check_kcat_record(const kiq_record_t *r, void *ctx)
{
    struct kcat_seen *s = ctx;
    char want[16];
    snprintf(want, sizeof want, "%d", s->n + 1);
    assert_true(r->offset == s->n);
    assert_int_equal(r->key.len, 1);
    assert_int_equal(r->key.p[0], 'k');
    assert_int_equal(r->value.len, (int32_t)strlen(want));
    assert_memory_equal(r->value.p, want, strlen(want));
    assert_int_equal(r->header_count, 1);
    kiq_record_header_iter_t it;
    kiq_record_headers_init(&it, r);
    kiq_record_header_t h;
    assert_int_equal(kiq_record_headers_next(&it, &h), 1);
    assert_true(kiq_str_eq(h.key, "hdr"));
    assert_int_equal(h.value.len, 3);
    assert_memory_equal(h.value.p, "val", 3);
    assert_int_equal(kiq_record_headers_next(&it, &h), 0);
    if (s->n == 0) s->ts = r->timestamp;
    assert_true(r->timestamp >= s->ts);
    s->n++;
    return 0;
}

static const char *const kcat_codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
#define NKCAT (sizeof kcat_codecs / sizeof kcat_codecs[0])

/* The Produce request of each kcat-CODEC folder: kcat sent one. */
static void find_kcat_produce(const kiq_test_frame_t *f, void *ctx)
{
    kiq_test_frame_t *found = ctx;
    for (size_t c = 0; c < NKCAT; c++) {
        char folder[64];
        int n = snprintf(folder, sizeof folder, "kcat-%s/", kcat_codecs[c]);
        if (f->key != 0 || strncmp(f->file, folder, (size_t)n) != 0) continue;
        if (found[c].bytes) fail_msg("%s: a second Produce from kcat-%s", f->file, kcat_codecs[c]);
        found[c] = *f;
    }
}

static void test_kcat_corpus(void **state)
{
    (void)state;
    kiq_test_frame_t found[NKCAT];
    memset(found, 0, sizeof found);
    kiq_test_corpus_each(find_kcat_produce, found);
    for (size_t c = 0; c < NKCAT; c++) {
        const char *name = kcat_codecs[c];
        if (!found[c].bytes) fail_msg("no Produce request in %s/kcat-%s", kiq_test_corpus_dir(), name);
        size_t len = found[c].bytes;
        uint8_t *frame = kiq_test_corpus_read(&found[c]);
        kiq_bytes_t recs = produce_v7_records(frame, len);

        kiq_batch_iter_t it;
        const uint8_t *p;
        size_t blen;
        kiq_batch_header_t h;
        kiq_batch_iter_init(&it, recs.p, (size_t)recs.len, false);
        assert_int_equal(kiq_batch_iter_next(&it, &p, &blen, &h), 1);
        assert_ptr_equal(p, recs.p);
        assert_int_equal(blen, (size_t)recs.len); /* one batch, nothing after */
        assert_int_equal(kiq_batch_iter_next(&it, &p, &blen, &h), 0);

        int rc = kiq_batch_validate(p, blen, 1 << 20, KIQ_BATCH_MAX_DECOMPRESSED, &h, NULL);
        if (rc) fail_msg("kcat-%s: validate %d: %s", name, rc, kiq_error_get());
        assert_int_equal(kiq_batch_codec(&h), kiq_codec_parse(name));
        assert_int_equal(h.record_count, 20);
        assert_true(h.producer_id == -1);

        struct kcat_seen s = {0};
        assert_int_equal(kiq_batch_foreach_record(p, blen, 1 << 20, check_kcat_record, &s), 0);
        assert_int_equal(s.n, 20);
        assert_true(s.ts == h.base_timestamp);

        /* stamping as the leader would keeps it valid */
        kiq_batch_set_base_offset((uint8_t *)p, 500);
        kiq_batch_set_leader_epoch((uint8_t *)p, 3);
        assert_int_equal(kiq_batch_check(p, blen, NULL), 0);
        kiq_batch_set_log_append_time((uint8_t *)p, h.max_timestamp + 1);
        assert_int_equal(kiq_batch_validate(p, blen, 1 << 20, KIQ_BATCH_MAX_DECOMPRESSED, NULL, NULL), 0);
        free(frame);
    }
}

/* Validation counts the records that carry headers, compressed or not, so
 * a reader after one header can skip the batches without any. */
static void test_validate_counts_headered_records(void **state)
{
    (void)state;
    kiq_record_header_t hdr = {KIQ_STR("kafkaiq-trace"), {(const uint8_t *)"t1", 2}};
    const int codecs[] = {KIQ_CODEC_NONE, KIQ_CODEC_LZ4};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        for (int with = 0; with <= 2; with++) {
            kiq_batch_builder_t b;
            kiq_batch_builder_init(&b, codecs[c], 1);
            for (int i = 0; i < 3; i++)
                assert_int_equal(kiq_batch_builder_add(&b, NULL, -1, "v", 1, i < with ? &hdr : NULL, i < with, 1), 0);
            kiq_wr_t w;
            kiq_wr_init(&w);
            assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
            kiq_batch_builder_free(&b);
            kiq_batch_summary_t sum = {.headered = -1};
            assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, NULL, &sum), 0);
            assert_int_equal(sum.headered, with);
            kiq_wr_free(&w);
        }
    }
}

/* Validation also gives the lowest and highest record timestamps, records
 * without one (-1) left out, so the produce path checks each record's
 * timestamp only when these are out of bounds. */
static void test_validate_gives_timestamp_extremes(void **state)
{
    (void)state;
    const int codecs[] = {KIQ_CODEC_NONE, KIQ_CODEC_ZSTD};
    for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++) {
        kiq_batch_builder_t b;
        kiq_batch_builder_init(&b, codecs[c], 5000);
        const int64_t ts[] = {5000, 2000, -1, 9000, 4000};
        for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
            assert_int_equal(kiq_batch_builder_add(&b, "k", 1, "v", 1, NULL, 0, ts[i]), 0);
        kiq_wr_t w;
        kiq_wr_init(&w);
        assert_int_equal(kiq_batch_builder_finish(&b, &w), 0);
        kiq_batch_builder_free(&b);
        kiq_batch_summary_t sum;
        assert_int_equal(kiq_batch_validate(w.buf, w.len, 0, KIQ_BATCH_MAX_DECOMPRESSED, NULL, &sum), 0);
        assert_int_equal(sum.min_timestamp, 2000);
        assert_int_equal(sum.max_timestamp, 9000);
        kiq_wr_free(&w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_validate_iterate),
        cmocka_unit_test(test_builder_producer_fields),
        cmocka_unit_test(test_crc_and_magic),
        cmocka_unit_test(test_old_format_message),
        cmocka_unit_test(test_truncated_and_too_large),
        cmocka_unit_test(test_invalid_records),
        cmocka_unit_test(test_header_edge_cases),
        cmocka_unit_test(test_bad_compressed_payload),
        cmocka_unit_test(test_decompression_bomb),
        cmocka_unit_test(test_decompressed_bound),
        cmocka_unit_test(test_batch_inflating_to_nothing),
        cmocka_unit_test(test_stamping),
        cmocka_unit_test(test_batch_iteration),
        cmocka_unit_test(test_kcat_corpus),
        cmocka_unit_test(test_validate_counts_headered_records),
        cmocka_unit_test(test_validate_gives_timestamp_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
