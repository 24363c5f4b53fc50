#include "record/compression.h"

#include <limits.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#include "core/error.h"

static const char *const codec_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

const char *kiq_codec_name(int codec)
{
    return codec >= 0 && codec <= KIQ_CODEC_ZSTD ? codec_names[codec] : "unknown";
}

int kiq_codec_parse(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i <= KIQ_CODEC_ZSTD; i++)
        if (strcasecmp(name, codec_names[i]) == 0) return i;
    if (strcasecmp(name, "uncompressed") == 0) return KIQ_CODEC_NONE;
    return -1;
}

/* Output grows in steps of at least this much, doubling with what has been
 * produced so large payloads take few codec calls. */
#define STEP_MIN ((size_t)64 << 10)
#define STEP_MAX ((size_t)1 << 30)

/* 1: what kiq_decompress returns for data past its limit. */
static int too_large(const char *codec, size_t max_out)
{
    kiq_error_set("%s: decompressed data exceeds the limit of %zu bytes", codec, max_out);
    return 1;
}

static int no_memory(const char *codec) { return kiq_error_set("%s: out of memory", codec); }

/* Reserves the next piece of decompressed output. It never reaches more than
 * one byte past max_out, so a bomb shows up as "produced > max_out" (see
 * over_limit) without allocating for it. Returns NULL, with the error set,
 * on allocation failure. */
static uint8_t *grow(const char *codec, kiq_wr_t *out, size_t start, size_t max_out, size_t *room)
{
    size_t produced = out->len - start;
    size_t want = produced > STEP_MIN ? produced : STEP_MIN;
    if (want > STEP_MAX) want = STEP_MAX;
    if (max_out - produced < want) want = max_out - produced + 1;
    *room = want;
    uint8_t *dst = kiq_wr_reserve(out, want);
    if (!dst) no_memory(codec);
    return dst;
}

/* True, with the error set, once the output since start passes max_out. */
static bool over_limit(const char *codec, const kiq_wr_t *out, size_t start, size_t max_out)
{
    if (out->len - start <= max_out) return false;
    too_large(codec, max_out);
    return true;
}

/* Runs a one-shot compressor, fn, with room for `bound` bytes (its worst
 * case) at the end of out; fn sets *n to what it wrote. On failure out is
 * left as it was. */
static int compress_into(const char *codec, size_t bound,
                         int (*fn)(const uint8_t *in, size_t len, uint8_t *dst, size_t *n), const uint8_t *in,
                         size_t len, kiq_wr_t *out)
{
    size_t start = out->len;
    uint8_t *dst = kiq_wr_reserve(out, bound);
    if (!dst) return no_memory(codec);
    size_t n = bound;
    if (fn(in, len, dst, &n) < 0) {
        out->len = start;
        return -1;
    }
    out->len = start + n;
    return 0;
}

static int gzip_compress(const uint8_t *in, size_t len, kiq_wr_t *out)
{
    if (len > INT_MAX) return kiq_error_set("gzip: input of %zu bytes too large", len);
    z_stream zs = {0};
    /* windowBits 15 + 16 asks zlib for a gzip header and trailer. */
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return kiq_error_set("gzip: deflateInit2 failed");
    size_t start = out->len;
    uLong bound = deflateBound(&zs, (uLong)len);
    uint8_t *dst = kiq_wr_reserve(out, bound);
    int rc = -1;
    if (!dst) {
        no_memory("gzip");
    } else {
        zs.next_in = (Bytef *)in;
        zs.avail_in = (uInt)len;
        zs.next_out = dst;
        zs.avail_out = (uInt)bound;
        if (deflate(&zs, Z_FINISH) == Z_STREAM_END) {
            out->len = start + zs.total_out;
            rc = 0;
        } else {
            kiq_error_set("gzip: deflate failed: %s", zs.msg ? zs.msg : "output bound too small");
        }
    }
    deflateEnd(&zs);
    if (rc) out->len = start;
    return rc;
}

static int gzip_decompress(const uint8_t *in, size_t len, size_t max_out, kiq_wr_t *out)
{
    if (len > INT_MAX) return kiq_error_set("gzip: input of %zu bytes too large", len);
    z_stream zs = {0};
    /* 15 + 32: accept a gzip or zlib header, whichever is there. */
    if (inflateInit2(&zs, 15 + 32) != Z_OK) return kiq_error_set("gzip: inflateInit2 failed");
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    size_t start = out->len;
    int rc = -1;
    for (;;) {
        size_t room;
        uint8_t *dst = grow("gzip", out, start, max_out, &room);
        if (!dst) break;
        zs.next_out = dst;
        zs.avail_out = (uInt)room;
        int zr = inflate(&zs, Z_NO_FLUSH);
        out->len -= zs.avail_out;
        if (over_limit("gzip", out, start, max_out)) {
            rc = 1;
            break;
        }
        if (zr == Z_STREAM_END) {
            if (zs.avail_in == 0) {
                rc = 0;
                break;
            }
            /* Another gzip member follows, as concatenating writers produce. */
            inflateReset(&zs);
            continue;
        }
        if (zr == Z_BUF_ERROR) {
            kiq_error_set("gzip: truncated input");
            break;
        }
        if (zr != Z_OK) {
            kiq_error_set("gzip: corrupt input: %s", zs.msg ? zs.msg : "inflate failed");
            break;
        }
    }
    inflateEnd(&zs);
    if (rc) out->len = start;
    return rc;
}

static int snappy_compress_raw(const uint8_t *in, size_t len, uint8_t *dst, size_t *n)
{
    if (snappy_compress((const char *)in, len, (char *)dst, n) != SNAPPY_OK)
        return kiq_error_set("snappy: compression failed");
    return 0;
}

/* One raw snappy block; `left` is how much more output is allowed. */
static int snappy_block(const uint8_t *in, size_t len, size_t left, size_t max_out, kiq_wr_t *out)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)in, len, &n) != SNAPPY_OK)
        return kiq_error_set("snappy: corrupt input (bad length preamble)");
    if (n > left) return too_large("snappy", max_out);
    size_t start = out->len;
    char empty;
    /* A block that decodes to nothing still gets a valid output pointer. */
    char *dst = n ? (char *)kiq_wr_reserve(out, n) : &empty;
    if (!dst) return no_memory("snappy");
    size_t got = n;
    if (snappy_uncompress((const char *)in, len, dst, &got) != SNAPPY_OK || got != n) {
        out->len = start;
        return kiq_error_set("snappy: corrupt input");
    }
    return 0;
}

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
/* magic, then version i32 and compatible-version i32 */
#define XERIAL_HEADER_SIZE 16

static int snappy_decompress(const uint8_t *in, size_t len, size_t max_out, kiq_wr_t *out)
{
    if (len < sizeof xerial_magic || memcmp(in, xerial_magic, sizeof xerial_magic) != 0)
        return snappy_block(in, len, max_out, max_out, out);

    /* xerial framing (the Java client): blocks of [i32 length, raw snappy]. */
    if (len < XERIAL_HEADER_SIZE) return kiq_error_set("snappy: truncated xerial header");
    size_t start = out->len;
    size_t pos = XERIAL_HEADER_SIZE;
    while (pos < len) {
        if (len - pos < 4) {
            out->len = start;
            return kiq_error_set("snappy: truncated xerial block length at byte %zu", pos);
        }
        uint32_t n = kiq_be32(in + pos);
        pos += 4;
        if (n > len - pos) {
            out->len = start;
            return kiq_error_set("snappy: xerial block of %u bytes at byte %zu overruns the input", n,
                                 pos - 4);
        }
        int rc = snappy_block(in + pos, n, max_out - (out->len - start), max_out, out);
        if (rc) {
            out->len = start;
            return rc;
        }
        pos += n;
    }
    return 0;
}

/* Independent 64 KiB blocks without content size or checksum: the frame the
 * Java client writes, which every Kafka reader accepts. */
static const LZ4F_preferences_t lz4_prefs = {
    .frameInfo = {.blockSizeID = LZ4F_max64KB, .blockMode = LZ4F_blockIndependent},
};

static int lz4_compress(const uint8_t *in, size_t len, uint8_t *dst, size_t *n)
{
    size_t r = LZ4F_compressFrame(dst, *n, in, len, &lz4_prefs);
    if (LZ4F_isError(r)) return kiq_error_set("lz4: compression failed: %s", LZ4F_getErrorName(r));
    *n = r;
    return 0;
}

static int lz4_decompress(const uint8_t *in, size_t len, size_t max_out, kiq_wr_t *out)
{
    LZ4F_dctx *dctx;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
        return kiq_error_set("lz4: cannot create decompression context");
    size_t start = out->len;
    size_t pos = 0;
    int rc = -1;
    for (;;) {
        size_t room;
        uint8_t *dst = grow("lz4", out, start, max_out, &room);
        if (!dst) break;
        size_t dsz = room, ssz = len - pos;
        size_t hint = LZ4F_decompress(dctx, dst, &dsz, in + pos, &ssz, NULL);
        out->len -= room - dsz;
        if (LZ4F_isError(hint)) {
            kiq_error_set("lz4: corrupt input: %s", LZ4F_getErrorName(hint));
            break;
        }
        pos += ssz;
        if (over_limit("lz4", out, start, max_out)) {
            rc = 1;
            break;
        }
        /* hint 0: a frame ended; more input means another frame follows. */
        if (hint == 0 && pos == len) {
            rc = 0;
            break;
        }
        if (ssz == 0 && dsz == 0) {
            kiq_error_set("lz4: truncated input");
            break;
        }
    }
    LZ4F_freeDecompressionContext(dctx);
    if (rc) out->len = start;
    return rc;
}

static int zstd_compress(const uint8_t *in, size_t len, uint8_t *dst, size_t *n)
{
    size_t r = ZSTD_compress(dst, *n, in, len, ZSTD_CLEVEL_DEFAULT);
    if (ZSTD_isError(r)) return kiq_error_set("zstd: compression failed: %s", ZSTD_getErrorName(r));
    *n = r;
    return 0;
}

/* Streaming, because producers may write frames without a content size. */
static int zstd_decompress(const uint8_t *in, size_t len, size_t max_out, kiq_wr_t *out)
{
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!dctx) return no_memory("zstd");
    ZSTD_inBuffer src = {in, len, 0};
    size_t start = out->len;
    int rc = -1;
    for (;;) {
        size_t room;
        uint8_t *dst = grow("zstd", out, start, max_out, &room);
        if (!dst) break;
        ZSTD_outBuffer o = {dst, room, 0};
        size_t before = src.pos;
        size_t hint = ZSTD_decompressStream(dctx, &o, &src);
        out->len -= room - o.pos;
        if (ZSTD_isError(hint)) {
            kiq_error_set("zstd: corrupt input: %s", ZSTD_getErrorName(hint));
            break;
        }
        if (over_limit("zstd", out, start, max_out)) {
            rc = 1;
            break;
        }
        /* hint 0: a frame ended and is flushed; more input is another frame. */
        if (hint == 0 && src.pos == src.size) {
            rc = 0;
            break;
        }
        if (src.pos == before && o.pos == 0) {
            kiq_error_set("zstd: truncated input");
            break;
        }
    }
    ZSTD_freeDCtx(dctx);
    if (rc) out->len = start;
    return rc;
}

int kiq_compress(int codec, const uint8_t *in, size_t len, kiq_wr_t *out)
{
    if (out->err) return kiq_error_set("%s: output buffer already failed", kiq_codec_name(codec));
    switch (codec) {
    case KIQ_CODEC_NONE: {
        size_t start = out->len;
        kiq_wr_raw(out, in, len);
        if (out->err) {
            out->len = start;
            return no_memory("none");
        }
        return 0;
    }
    case KIQ_CODEC_GZIP: return gzip_compress(in, len, out);
    case KIQ_CODEC_SNAPPY:
        return compress_into("snappy", snappy_max_compressed_length(len), snappy_compress_raw, in, len, out);
    case KIQ_CODEC_LZ4:
        return compress_into("lz4", LZ4F_compressFrameBound(len, &lz4_prefs), lz4_compress, in, len, out);
    case KIQ_CODEC_ZSTD: return compress_into("zstd", ZSTD_compressBound(len), zstd_compress, in, len, out);
    default: return kiq_error_set("unknown compression codec %d", codec);
    }
}

int kiq_decompress(int codec, const uint8_t *in, size_t len, size_t max_out, kiq_wr_t *out)
{
    if (out->err) return kiq_error_set("%s: output buffer already failed", kiq_codec_name(codec));
    switch (codec) {
    case KIQ_CODEC_NONE:
        if (len > max_out) return too_large("none", max_out);
        return kiq_compress(KIQ_CODEC_NONE, in, len, out);
    case KIQ_CODEC_GZIP: return gzip_decompress(in, len, max_out, out);
    case KIQ_CODEC_SNAPPY: return snappy_decompress(in, len, max_out, out);
    case KIQ_CODEC_LZ4: return lz4_decompress(in, len, max_out, out);
    case KIQ_CODEC_ZSTD: return zstd_decompress(in, len, max_out, out);
    default: return kiq_error_set("unknown compression codec %d", codec);
    }
}
