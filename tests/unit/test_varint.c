/* Wire primitives of engine/proto/reader.h and writer.h: fixed-width ints,
 * unsigned and zigzag varints (exact bytes and boundaries), compact and
 * classic strings, bytes and array lengths, and the sticky error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "proto/reader.h"
#include "proto/writer.h"

static void expect_bytes(const kiq_wr_t *w, const void *want, size_t n)
{
    assert_false(w->err);
    assert_int_equal(w->len, n);
    assert_memory_equal(w->buf, want, n);
}

static void test_fixed_width(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i8(&w, -2);
    kiq_wr_i16(&w, -2);
    kiq_wr_i32(&w, 0x01020304);
    kiq_wr_i64(&w, INT64_MIN);
    kiq_wr_bool(&w, true);
    kiq_wr_f64(&w, 1.5);
    expect_bytes(&w,
                 "\xfe"
                 "\xff\xfe"
                 "\x01\x02\x03\x04"
                 "\x80\x00\x00\x00\x00\x00\x00\x00"
                 "\x01"
                 "\x3f\xf8\x00\x00\x00\x00\x00\x00",
                 24);
    kiq_rd_t r;
    kiq_rd_init(&r, w.buf, w.len);
    assert_int_equal(kiq_rd_i8(&r), -2);
    assert_int_equal(kiq_rd_i16(&r), -2);
    assert_int_equal(kiq_rd_i32(&r), 0x01020304);
    assert_true(kiq_rd_i64(&r) == INT64_MIN);
    assert_true(kiq_rd_bool(&r));
    assert_true(kiq_rd_f64(&r) == 1.5);
    assert_null(r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(kiq_rd_offset(&r), 24);

    /* raw-buffer helpers agree with the writer */
    uint8_t b[8];
    kiq_put_be64(b, 0x0102030405060708ull);
    assert_memory_equal(b, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    assert_true(kiq_be64(b) == 0x0102030405060708ull);
    assert_int_equal(kiq_be32(b + 4), 0x05060708);
    assert_int_equal(kiq_be16(b + 6), 0x0708);
    kiq_put_be16(b, 0xbeef);
    assert_int_equal(kiq_be16(b), 0xbeef);

    /* patching a size prefix */
    w.len = 0;
    kiq_wr_i32(&w, 0);
    kiq_wr_raw(&w, "abc", 3);
    kiq_wr_patch_i32(&w, 0, (int32_t)w.len - 4);
    expect_bytes(&w, "\x00\x00\x00\x03" "abc", 7);
    kiq_wr_free(&w);
}

struct uv_case {
    uint32_t v;
    const char *bytes;
    size_t n;
};

static void test_uvarint_encodings(void **state)
{
    (void)state;
    static const struct uv_case cases[] = {
        {0, "\x00", 1},
        {1, "\x01", 1},
        {63, "\x3f", 1},
        {64, "\x40", 1},
        {127, "\x7f", 1},
        {128, "\x80\x01", 2},
        {300, "\xac\x02", 2},
        {16383, "\xff\x7f", 2},
        {16384, "\x80\x80\x01", 3},
        {INT32_MAX, "\xff\xff\xff\xff\x07", 5},
        {UINT32_MAX, "\xff\xff\xff\xff\x0f", 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        kiq_wr_uvarint(&w, cases[i].v);
        expect_bytes(&w, cases[i].bytes, cases[i].n);
        assert_int_equal(kiq_uvarint_size(cases[i].v), cases[i].n);
        kiq_rd_t r;
        kiq_rd_init(&r, w.buf, w.len);
        assert_int_equal(kiq_rd_uvarint(&r), cases[i].v);
        assert_null(r.err);
        assert_int_equal(kiq_rd_left(&r), 0);
        kiq_wr_free(&w);
    }
}

struct v_case {
    int32_t v;
    const char *bytes;
    size_t n;
};

static void test_varint_zigzag(void **state)
{
    (void)state;
    static const struct v_case cases[] = {
        {0, "\x00", 1},
        {-1, "\x01", 1},
        {1, "\x02", 1},
        {-2, "\x03", 1},
        {63, "\x7e", 1},
        {-64, "\x7f", 1},
        {64, "\x80\x01", 2},
        {-65, "\x81\x01", 2},
        {127, "\xfe\x01", 2},
        {128, "\x80\x02", 2},
        {150, "\xac\x02", 2},
        {INT32_MAX, "\xfe\xff\xff\xff\x0f", 5},
        {INT32_MIN, "\xff\xff\xff\xff\x0f", 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        kiq_wr_varint(&w, cases[i].v);
        expect_bytes(&w, cases[i].bytes, cases[i].n);
        assert_int_equal(kiq_varint_size(cases[i].v), cases[i].n);
        kiq_rd_t r;
        kiq_rd_init(&r, w.buf, w.len);
        assert_int_equal(kiq_rd_varint(&r), cases[i].v);
        assert_null(r.err);
        assert_int_equal(kiq_rd_left(&r), 0);

        /* the same values as varlongs encode to the same bytes */
        w.len = 0;
        kiq_wr_varlong(&w, cases[i].v);
        expect_bytes(&w, cases[i].bytes, cases[i].n);
        assert_int_equal(kiq_varlong_size(cases[i].v), cases[i].n);
        kiq_rd_init(&r, w.buf, w.len);
        assert_true(kiq_rd_varlong(&r) == cases[i].v);
        assert_null(r.err);
        kiq_wr_free(&w);
    }
}

static void test_varlong_boundaries(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_varlong(&w, INT64_MIN);
    expect_bytes(&w, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    assert_int_equal(kiq_varlong_size(INT64_MIN), 10);
    w.len = 0;
    kiq_wr_varlong(&w, INT64_MAX);
    expect_bytes(&w, "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
    w.len = 0;

    static const int64_t vals[] = {0, -1, 1, 63, 64, -64, -65, 127, 128, INT32_MAX, INT32_MIN,
                                   (int64_t)INT32_MAX + 1, (int64_t)INT32_MIN - 1, 1700000000000LL,
                                   -1700000000000LL, INT64_MAX, INT64_MIN};
    size_t n = sizeof vals / sizeof vals[0];
    for (size_t i = 0; i < n; i++) kiq_wr_varlong(&w, vals[i]);
    kiq_rd_t r;
    kiq_rd_init(&r, w.buf, w.len);
    for (size_t i = 0; i < n; i++) assert_true(kiq_rd_varlong(&r) == vals[i]);
    assert_null(r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    kiq_wr_free(&w);
}

static void test_overlong_varint_rejected(void **state)
{
    (void)state;
    /* six bytes for a 32-bit varint: the fifth still has the continuation bit */
    static const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    kiq_rd_t r;
    kiq_rd_init(&r, six, sizeof six);
    assert_int_equal(kiq_rd_uvarint(&r), 0);
    assert_non_null(r.err);
    assert_string_equal(r.err, "varint too long");

    kiq_rd_init(&r, six, sizeof six);
    assert_int_equal(kiq_rd_varint(&r), 0);
    assert_non_null(r.err);

    /* a varlong may take ten bytes, not eleven */
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    kiq_rd_init(&r, eleven, sizeof eleven);
    assert_true(kiq_rd_varlong(&r) == 0);
    assert_non_null(r.err);
    kiq_rd_init(&r, eleven + 1, sizeof eleven - 1);
    assert_true(kiq_rd_varlong(&r) == 0);
    assert_null(r.err);

    /* a non-minimal but short encoding is fine (Kafka's readers accept it) */
    static const uint8_t padded[] = {0x81, 0x80, 0x00};
    kiq_rd_init(&r, padded, sizeof padded);
    assert_int_equal(kiq_rd_uvarint(&r), 1);
    assert_null(r.err);
}

static void test_truncation_is_sticky(void **state)
{
    (void)state;
    static const uint8_t cont[] = {0x80};
    kiq_rd_t r;
    kiq_rd_init(&r, cont, sizeof cont);
    assert_int_equal(kiq_rd_uvarint(&r), 0);
    assert_string_equal(r.err, "truncated");
    assert_int_equal(kiq_rd_left(&r), 0);

    static const uint8_t data[] = {0x00, 0x01, 0x02, 0x03, 0x04, 0x05};
    kiq_rd_init(&r, data, sizeof data);
    assert_int_equal(kiq_rd_i16(&r), 1);
    assert_int_equal(kiq_rd_i32(&r), 0x02030405);
    assert_null(r.err);
    assert_int_equal(kiq_rd_i8(&r), 0);
    assert_string_equal(r.err, "truncated");

    /* after a failure every read gives zero, even where bytes remain */
    kiq_rd_init(&r, data, sizeof data);
    kiq_rd_i64(&r);
    assert_non_null(r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(kiq_rd_i8(&r), 0);
    assert_int_equal(kiq_rd_uvarint(&r), 0);
    assert_null(kiq_rd_raw(&r, 1));

    kiq_rd_init(&r, data, sizeof data);
    kiq_rd_fail(&r, "first");
    kiq_rd_fail(&r, "second");
    assert_string_equal(r.err, "first");
    assert_int_equal(kiq_rd_i16(&r), 0);

    /* a raw take past the end fails, one that fits does not */
    kiq_rd_init(&r, data, sizeof data);
    assert_ptr_equal(kiq_rd_raw(&r, 6), data);
    assert_non_null(kiq_rd_raw(&r, 0));
    assert_null(r.err);
    assert_null(kiq_rd_raw(&r, 1));
    assert_non_null(r.err);
}

static void test_compact_strings(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_string(&w, KIQ_STR("abc"), true, true);
    kiq_wr_string(&w, KIQ_STR_NULL, true, true);
    kiq_wr_string(&w, KIQ_STR(""), true, false);
    kiq_wr_bytes(&w, (kiq_bytes_t){(const uint8_t *)"xy", 2}, true, true);
    kiq_wr_bytes(&w, (kiq_bytes_t){NULL, 0}, true, true);
    kiq_wr_array_len(&w, 2, true, false);
    kiq_wr_array_len(&w, -1, true, true);
    expect_bytes(&w, "\x04" "abc" "\x00" "\x01" "\x03" "xy" "\x00" "\x03" "\x00", 12);

    kiq_rd_t r;
    kiq_rd_init(&r, w.buf, w.len);
    kiq_str_t s = kiq_rd_string(&r, true, true);
    assert_true(kiq_str_eq(s, "abc"));
    s = kiq_rd_string(&r, true, true);
    assert_null(s.p);
    s = kiq_rd_string(&r, true, false);
    assert_non_null(s.p);
    assert_int_equal(s.len, 0);
    kiq_bytes_t b = kiq_rd_bytes(&r, true, true);
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.p, "xy", 2);
    b = kiq_rd_bytes(&r, true, true);
    assert_null(b.p);
    /* 2 elements of at least 1 byte: only 1 byte is left, so this fails */
    assert_int_equal(kiq_rd_array_len(&r, true, false, 1), 0);
    assert_string_equal(r.err, "array count exceeds frame");

    kiq_rd_init(&r, w.buf + 11, 1);
    assert_int_equal(kiq_rd_array_len(&r, true, true, 4), -1);
    assert_null(r.err);

    /* a null where the field is not nullable */
    kiq_rd_init(&r, "\x00", 1);
    kiq_rd_string(&r, true, false);
    assert_string_equal(r.err, "null where not nullable");

    /* a length beyond the frame */
    kiq_rd_init(&r, "\x05" "ab", 3);
    s = kiq_rd_string(&r, true, false);
    assert_null(s.p);
    assert_string_equal(r.err, "truncated");
    kiq_wr_free(&w);
}

static void test_classic_lengths(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_string(&w, KIQ_STR("hi"), false, false);
    kiq_wr_string(&w, KIQ_STR_NULL, false, true);
    kiq_wr_bytes(&w, (kiq_bytes_t){(const uint8_t *)"z", 1}, false, false);
    kiq_wr_bytes(&w, (kiq_bytes_t){NULL, 0}, false, true);
    kiq_wr_array_len(&w, -1, false, true);
    kiq_wr_array_len(&w, -1, false, false);
    expect_bytes(&w,
                 "\x00\x02" "hi" "\xff\xff" "\x00\x00\x00\x01" "z" "\xff\xff\xff\xff"
                 "\xff\xff\xff\xff" "\x00\x00\x00\x00",
                 23);

    kiq_rd_t r;
    kiq_rd_init(&r, w.buf, w.len);
    assert_true(kiq_str_eq(kiq_rd_string(&r, false, false), "hi"));
    assert_null(kiq_rd_string(&r, false, true).p);
    kiq_bytes_t b = kiq_rd_bytes(&r, false, false);
    assert_int_equal(b.len, 1);
    assert_int_equal(b.p[0], 'z');
    assert_null(kiq_rd_bytes(&r, false, true).p);
    assert_int_equal(kiq_rd_array_len(&r, false, true, 0), -1);
    assert_int_equal(kiq_rd_array_len(&r, false, false, 0), 0);
    assert_null(r.err);
    assert_int_equal(kiq_rd_left(&r), 0);

    /* -1 where not nullable, and lengths below -1 */
    kiq_rd_init(&r, "\xff\xff", 2);
    kiq_rd_string(&r, false, false);
    assert_string_equal(r.err, "null where not nullable");
    kiq_rd_init(&r, "\xff\xfe", 2);
    kiq_rd_string(&r, false, true);
    assert_string_equal(r.err, "negative length");
    kiq_rd_init(&r, "\xff\xff\xff\xfe", 4);
    kiq_rd_bytes(&r, false, true);
    assert_string_equal(r.err, "negative length");
    kiq_rd_init(&r, "\x80\x00\x00\x00", 4);
    kiq_rd_array_len(&r, false, true, 1);
    assert_string_equal(r.err, "negative length");
    kiq_wr_free(&w);
}

static void test_array_count_bounds(void **state)
{
    (void)state;
    /* a count of 1000 four-byte elements with 8 bytes left */
    uint8_t frame[12] = {0x00, 0x00, 0x03, 0xe8};
    kiq_rd_t r;
    kiq_rd_init(&r, frame, sizeof frame);
    assert_int_equal(kiq_rd_array_len(&r, false, false, 4), 0);
    assert_string_equal(r.err, "array count exceeds frame");

    /* exactly fitting is fine; one more element is not */
    kiq_put_be32(frame, 2);
    kiq_rd_init(&r, frame, sizeof frame);
    assert_int_equal(kiq_rd_array_len(&r, false, false, 4), 2);
    assert_null(r.err);
    kiq_put_be32(frame, 3);
    kiq_rd_init(&r, frame, sizeof frame);
    assert_int_equal(kiq_rd_array_len(&r, false, false, 4), 0);
    assert_non_null(r.err);

    /* a huge compact count (uvarint 0xffffffff) cannot overflow the check */
    static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0};
    kiq_rd_init(&r, huge, sizeof huge);
    assert_int_equal(kiq_rd_array_len(&r, true, false, 1), 0);
    assert_non_null(r.err);

    /* INT32_MAX classic count with 0 min size is still bounded by the bytes */
    kiq_put_be32(frame, INT32_MAX);
    kiq_rd_init(&r, frame, sizeof frame);
    assert_int_equal(kiq_rd_array_len(&r, false, false, 0), 0);
    assert_non_null(r.err);
}

static void test_writer_growth(void **state)
{
    (void)state;
    kiq_wr_t w;
    kiq_wr_init(&w);
    for (int i = 0; i < 100000; i++) kiq_wr_varint(&w, i);
    assert_false(w.err);
    kiq_rd_t r;
    kiq_rd_init(&r, w.buf, w.len);
    for (int i = 0; i < 100000; i++) assert_int_equal(kiq_rd_varint(&r), i);
    assert_null(r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    size_t len;
    uint8_t *buf = kiq_wr_steal(&w, &len);
    assert_non_null(buf);
    assert_true(len > 100000);
    assert_null(w.buf);
    assert_int_equal(w.len, 0);
    free(buf);
}

/* Values a length prefix cannot describe fail the writer instead of
 * producing a corrupt frame; a 5-byte varint with high bits set is refused. */
static void test_unframeable_values_refused(void **state)
{
    (void)state;
    static char big[40000];
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_string(&w, (kiq_str_t){big, (int32_t)sizeof big}, false, false);
    assert_true(w.err);
    kiq_wr_free(&w);
    kiq_wr_init(&w);
    kiq_wr_string(&w, (kiq_str_t){big, (int32_t)sizeof big}, true, false);
    assert_false(w.err);
    kiq_wr_free(&w);
    kiq_wr_init(&w);
    kiq_wr_bytes(&w, (kiq_bytes_t){(const uint8_t *)big, -5}, false, true);
    assert_true(w.err);
    kiq_wr_free(&w);
    kiq_wr_init(&w);
    assert_non_null(kiq_wr_reserve(&w, 0));
    assert_false(w.err);
    kiq_wr_free(&w);

    const uint8_t over[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
    kiq_rd_t r;
    kiq_rd_init(&r, over, sizeof over);
    kiq_rd_uvarint(&r);
    assert_non_null(r.err);
    const uint8_t max[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x0F};
    kiq_rd_init(&r, max, sizeof max);
    assert_int_equal(kiq_rd_uvarint(&r), UINT32_MAX);
    assert_null(r.err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_width),
        cmocka_unit_test(test_uvarint_encodings),
        cmocka_unit_test(test_varint_zigzag),
        cmocka_unit_test(test_varlong_boundaries),
        cmocka_unit_test(test_overlong_varint_rejected),
        cmocka_unit_test(test_truncation_is_sticky),
        cmocka_unit_test(test_compact_strings),
        cmocka_unit_test(test_classic_lengths),
        cmocka_unit_test(test_array_count_bounds),
        cmocka_unit_test(test_writer_growth),
        cmocka_unit_test(test_unframeable_values_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
