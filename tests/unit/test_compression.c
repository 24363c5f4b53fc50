/* Codecs: round trips for each, appending to a non-empty writer, xerial
 * snappy framing, concatenated frames, zstd without a content size, corrupt
 * and truncated input, and the max_out bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <snappy-c.h>
#include <zstd.h>

#include "core/error.h"
#include "record/compression.h"

static const int codecs[] = {KIQ_CODEC_NONE, KIQ_CODEC_GZIP, KIQ_CODEC_SNAPPY, KIQ_CODEC_LZ4, KIQ_CODEC_ZSTD};
#define NCODECS (sizeof codecs / sizeof codecs[0])

/* Deterministic pseudo-random bytes (incompressible). */
static void fill_random(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

/* Compressible text-like bytes. */
static void fill_text(uint8_t *p, size_t n)
{
    static const char words[] = "kafka record batch offset partition leader epoch ";
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)words[(i * 7 / 5) % (sizeof words - 1)];
}

static void compress_ok(int codec, const uint8_t *in, size_t len, kiq_wr_t *out)
{
    int rc = kiq_compress(codec, in, len, out);
    if (rc) fail_msg("%s compress: %s", kiq_codec_name(codec), kiq_error_get());
}

static void round_trip(int codec, const uint8_t *in, size_t len)
{
    kiq_wr_t c, d;
    kiq_wr_init(&c);
    kiq_wr_init(&d);
    compress_ok(codec, in, len, &c);
    /* a prefix already in the output must survive */
    kiq_wr_raw(&d, "PFX", 3);
    int rc = kiq_decompress(codec, c.buf, c.len, len, &d);
    if (rc) fail_msg("%s decompress of %zu bytes: %s", kiq_codec_name(codec), len, kiq_error_get());
    assert_int_equal(d.len, len + 3);
    assert_memory_equal(d.buf, "PFX", 3);
    if (len) assert_memory_equal(d.buf + 3, in, len);
    kiq_wr_free(&c);
    kiq_wr_free(&d);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(kiq_codec_name(KIQ_CODEC_NONE), "none");
    assert_string_equal(kiq_codec_name(KIQ_CODEC_GZIP), "gzip");
    assert_string_equal(kiq_codec_name(KIQ_CODEC_SNAPPY), "snappy");
    assert_string_equal(kiq_codec_name(KIQ_CODEC_LZ4), "lz4");
    assert_string_equal(kiq_codec_name(KIQ_CODEC_ZSTD), "zstd");
    assert_string_equal(kiq_codec_name(5), "unknown");
    assert_string_equal(kiq_codec_name(-1), "unknown");
    for (size_t i = 0; i < NCODECS; i++) assert_int_equal(kiq_codec_parse(kiq_codec_name(codecs[i])), codecs[i]);
    assert_int_equal(kiq_codec_parse("ZSTD"), KIQ_CODEC_ZSTD);
    assert_int_equal(kiq_codec_parse("uncompressed"), KIQ_CODEC_NONE);
    assert_int_equal(kiq_codec_parse("producer"), -1);
    assert_int_equal(kiq_codec_parse("lz5"), -1);
    assert_int_equal(kiq_codec_parse(""), -1);
    assert_int_equal(kiq_codec_parse(NULL), -1);
}

static void test_round_trips(void **state)
{
    (void)state;
    size_t big = (size_t)3 << 20;
    uint8_t *buf = malloc(big);
    assert_non_null(buf);
    for (size_t i = 0; i < NCODECS; i++) {
        round_trip(codecs[i], (const uint8_t *)"", 0);
        round_trip(codecs[i], (const uint8_t *)"x", 1);
        fill_random(buf, 100000, 7);
        round_trip(codecs[i], buf, 100000);
        /* larger than the decompressors' first output step and lz4's blocks */
        fill_text(buf, big);
        round_trip(codecs[i], buf, big);
    }
    free(buf);
}

/* Each codec's output is the format Kafka expects. */
static void test_output_formats(void **state)
{
    (void)state;
    uint8_t in[4096];
    fill_text(in, sizeof in);
    kiq_wr_t w;
    kiq_wr_init(&w);

    compress_ok(KIQ_CODEC_GZIP, in, sizeof in, &w);
    assert_true(w.len < sizeof in);
    assert_int_equal(w.buf[0], 0x1f);
    assert_int_equal(w.buf[1], 0x8b);
    w.len = 0;

    compress_ok(KIQ_CODEC_LZ4, in, sizeof in, &w);
    assert_true(w.len < sizeof in);
    assert_memory_equal(w.buf, "\x04\x22\x4d\x18", 4);
    w.len = 0;

    compress_ok(KIQ_CODEC_ZSTD, in, sizeof in, &w);
    assert_true(w.len < sizeof in);
    assert_memory_equal(w.buf, "\x28\xb5\x2f\xfd", 4);
    w.len = 0;

    /* raw snappy: starts with the uncompressed length as a varint (4096) */
    compress_ok(KIQ_CODEC_SNAPPY, in, sizeof in, &w);
    assert_true(w.len < sizeof in);
    assert_int_equal(w.buf[0], 0x80);
    assert_int_equal(w.buf[1], 0x20);
    size_t n;
    assert_int_equal(snappy_uncompressed_length((const char *)w.buf, w.len, &n), SNAPPY_OK);
    assert_int_equal(n, sizeof in);
    w.len = 0;

    compress_ok(KIQ_CODEC_NONE, in, sizeof in, &w);
    assert_int_equal(w.len, sizeof in);
    assert_memory_equal(w.buf, in, sizeof in);
    kiq_wr_free(&w);

    assert_int_equal(kiq_compress(9, in, sizeof in, &w), -1);
    assert_int_equal(kiq_decompress(9, in, sizeof in, 100, &w), -1);
    assert_non_null(strstr(kiq_error_get(), "codec"));
}

/* Appends one xerial block: i32 length, raw snappy. */
static void xerial_block(kiq_wr_t *w, const uint8_t *in, size_t len)
{
    size_t at = w->len;
    kiq_wr_i32(w, 0);
    compress_ok(KIQ_CODEC_SNAPPY, in, len, w);
    kiq_wr_patch_i32(w, at, (int32_t)(w->len - at - 4));
}

static void xerial_header(kiq_wr_t *w)
{
    kiq_wr_raw(w, "\x82SNAPPY\0", 8);
    kiq_wr_i32(w, 1); /* version */
    kiq_wr_i32(w, 1); /* minimum compatible version */
}

static void test_snappy_xerial(void **state)
{
    (void)state;
    uint8_t a[5000], b[3000];
    fill_text(a, sizeof a);
    fill_random(b, sizeof b, 3);
    kiq_wr_t x, d;
    kiq_wr_init(&x);
    kiq_wr_init(&d);
    xerial_header(&x);
    xerial_block(&x, a, sizeof a);
    xerial_block(&x, b, sizeof b);

    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, x.len, sizeof a + sizeof b, &d), 0);
    assert_int_equal(d.len, sizeof a + sizeof b);
    assert_memory_equal(d.buf, a, sizeof a);
    assert_memory_equal(d.buf + sizeof a, b, sizeof b);

    /* the bound covers all blocks together */
    d.len = 0;
    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, x.len, sizeof a + sizeof b - 1, &d), 1);
    assert_non_null(strstr(kiq_error_get(), "exceeds"));
    assert_int_equal(d.len, 0);

    /* truncated inside the second block, inside a length, and in the header */
    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, x.len - 1, 1 << 20, &d), -1);
    assert_int_equal(d.len, 0);
    size_t second = 16 + 4 + kiq_be32(x.buf + 16);
    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, second + 2, 1 << 20, &d), -1);
    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, 12, 1 << 20, &d), -1);
    assert_int_equal(d.len, 0);

    /* a header with no blocks is empty data */
    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, 16, 1 << 20, &d), 0);
    assert_int_equal(d.len, 0);

    /* a block length beyond the input */
    kiq_put_be32(x.buf + 16, 0x7fffffff);
    assert_int_equal(kiq_decompress(KIQ_CODEC_SNAPPY, x.buf, x.len, 1 << 20, &d), -1);
    assert_non_null(strstr(kiq_error_get(), "overruns"));
    assert_int_equal(d.len, 0);
    kiq_wr_free(&x);
    kiq_wr_free(&d);
}

/* gzip members, lz4 frames and zstd frames written back to back decode as
 * the concatenation of their contents. */
static void test_concatenated_frames(void **state)
{
    (void)state;
    static const int multi[] = {KIQ_CODEC_GZIP, KIQ_CODEC_LZ4, KIQ_CODEC_ZSTD};
    uint8_t a[2000], b[7000];
    fill_text(a, sizeof a);
    fill_random(b, sizeof b, 11);
    for (size_t i = 0; i < 3; i++) {
        kiq_wr_t c, d;
        kiq_wr_init(&c);
        kiq_wr_init(&d);
        compress_ok(multi[i], a, sizeof a, &c);
        compress_ok(multi[i], b, sizeof b, &c);
        assert_int_equal(kiq_decompress(multi[i], c.buf, c.len, 1 << 20, &d), 0);
        assert_int_equal(d.len, sizeof a + sizeof b);
        assert_memory_equal(d.buf, a, sizeof a);
        assert_memory_equal(d.buf + sizeof a, b, sizeof b);
        kiq_wr_free(&c);
        kiq_wr_free(&d);
    }
}

/* Streaming producers write zstd frames without a content size. */
static void test_zstd_unknown_size(void **state)
{
    (void)state;
    uint8_t in[200000];
    fill_text(in, sizeof in);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    assert_non_null(cctx);
    assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)));
    size_t cap = ZSTD_compressBound(sizeof in);
    uint8_t *c = malloc(cap);
    assert_non_null(c);
    ZSTD_outBuffer out = {c, cap, 0};
    ZSTD_inBuffer src = {in, sizeof in, 0};
    assert_int_equal(ZSTD_compressStream2(cctx, &out, &src, ZSTD_e_end), 0);
    ZSTD_freeCCtx(cctx);
    assert_true(ZSTD_getFrameContentSize(c, out.pos) == ZSTD_CONTENTSIZE_UNKNOWN);

    kiq_wr_t d;
    kiq_wr_init(&d);
    assert_int_equal(kiq_decompress(KIQ_CODEC_ZSTD, c, out.pos, sizeof in, &d), 0);
    assert_int_equal(d.len, sizeof in);
    assert_memory_equal(d.buf, in, sizeof in);
    d.len = 0;
    assert_int_equal(kiq_decompress(KIQ_CODEC_ZSTD, c, out.pos, sizeof in - 1, &d), 1);
    assert_int_equal(d.len, 0);
    kiq_wr_free(&d);
    free(c);
}

/* Decompression of damaged input fails with a reason and leaves the output
 * as it was. */
static void expect_fail(int codec, const uint8_t *in, size_t len, const char *what)
{
    kiq_wr_t d;
    kiq_wr_init(&d);
    kiq_wr_raw(&d, "keep", 4);
    kiq_error_clear();
    int rc = kiq_decompress(codec, in, len, 1 << 20, &d);
    /* 1 is fair too: a damaged length may claim more than the limit */
    if (rc == 0) fail_msg("%s: %s input decoded", kiq_codec_name(codec), what);
    assert_int_equal(d.len, 4);
    assert_memory_equal(d.buf, "keep", 4);
    assert_true(strlen(kiq_error_get()) > 0);
    kiq_wr_free(&d);
}

static void test_corrupt_input(void **state)
{
    (void)state;
    uint8_t in[20000];
    fill_text(in, sizeof in);
    uint8_t garbage[256];
    fill_random(garbage, sizeof garbage, 99);
    garbage[0] = 0xfe; /* snappy: a length preamble that does not match */
    for (size_t i = 1; i < NCODECS; i++) {
        int codec = codecs[i];
        kiq_wr_t c;
        kiq_wr_init(&c);
        compress_ok(codec, in, sizeof in, &c);
        expect_fail(codec, c.buf, c.len / 2, "truncated");
        expect_fail(codec, c.buf, c.len - 1, "one byte short");
        expect_fail(codec, c.buf, 0, "empty");
        expect_fail(codec, garbage, sizeof garbage, "garbage");
        /* damaged header / magic */
        c.buf[0] ^= 0x5a;
        c.buf[1] ^= 0xa5;
        expect_fail(codec, c.buf, c.len, "damaged header");
        c.buf[0] ^= 0x5a;
        c.buf[1] ^= 0xa5;
        /* trailing junk after a complete frame */
        if (codec != KIQ_CODEC_SNAPPY) {
            kiq_wr_raw(&c, "\x01\x02\x03", 3);
            expect_fail(codec, c.buf, c.len, "trailing junk");
        }
        kiq_wr_free(&c);
    }
    /* gzip's trailer CRC catches a flipped byte in the middle */
    kiq_wr_t c;
    kiq_wr_init(&c);
    fill_random(in, sizeof in, 5);
    compress_ok(KIQ_CODEC_GZIP, in, sizeof in, &c);
    c.buf[c.len / 2] ^= 0x01;
    expect_fail(KIQ_CODEC_GZIP, c.buf, c.len, "bit-flipped");
    kiq_wr_free(&c);
}

/* max_out bounds what decompression may produce, exactly, and a small bound
 * on a highly compressed input fails without allocating for the whole. */
static void test_max_out(void **state)
{
    (void)state;
    size_t n = (size_t)8 << 20;
    uint8_t *zeros = calloc(1, n);
    assert_non_null(zeros);
    for (size_t i = 0; i < NCODECS; i++) {
        int codec = codecs[i];
        kiq_wr_t c, d;
        kiq_wr_init(&c);
        kiq_wr_init(&d);
        compress_ok(codec, zeros, n, &c);
        if (codec != KIQ_CODEC_NONE) assert_true(c.len < n / 20);

        assert_int_equal(kiq_decompress(codec, c.buf, c.len, n, &d), 0);
        assert_int_equal(d.len, n);
        kiq_wr_free(&d);

        assert_int_equal(kiq_decompress(codec, c.buf, c.len, n - 1, &d), 1);
        assert_non_null(strstr(kiq_error_get(), "exceeds"));
        assert_int_equal(d.len, 0);
        kiq_wr_free(&d);

        assert_int_equal(kiq_decompress(codec, c.buf, c.len, 100000, &d), 1);
        assert_int_equal(d.len, 0);
        /* the output grew to about the bound, not toward 8 MiB */
        assert_true(d.cap <= 1 << 20);
        kiq_wr_free(&d);

        assert_int_equal(kiq_decompress(codec, c.buf, c.len, 0, &d), 1);
        kiq_wr_free(&d);
        kiq_wr_free(&c);
    }
    free(zeros);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_output_formats),
        cmocka_unit_test(test_snappy_xerial),
        cmocka_unit_test(test_concatenated_frames),
        cmocka_unit_test(test_zstd_unknown_size),
        cmocka_unit_test(test_corrupt_input),
        cmocka_unit_test(test_max_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
