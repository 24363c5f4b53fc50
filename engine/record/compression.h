/* The record batch codecs Kafka knows, as attributes bits 0-2 number them.
 * Stateless: every call makes and frees its own codec context, so any thread
 * may call these. */
#ifndef KIQ_RECORD_COMPRESSION_H
#define KIQ_RECORD_COMPRESSION_H

#include "proto/writer.h"

enum kiq_codec {
    KIQ_CODEC_NONE = 0,
    KIQ_CODEC_GZIP = 1,
    KIQ_CODEC_SNAPPY = 2,
    KIQ_CODEC_LZ4 = 3,
    KIQ_CODEC_ZSTD = 4,
};

/* "none", "gzip", "snappy", "lz4", "zstd"; "unknown" for other numbers. */
const char *kiq_codec_name(int codec);
/* The codec for a name (case-insensitive; "uncompressed", Kafka's topic
 * config spelling, is also none), or -1 when unknown. */
int kiq_codec_parse(const char *name);

/* Appends in[0..len) compressed with `codec` to `out`. Snappy is written raw
 * (no xerial framing), as librdkafka does; lz4 is the LZ4 frame format.
 * Returns 0, or -1 with kiq_error_set (out is then left as it was). */
int kiq_compress(int codec, const uint8_t *in, size_t len, kiq_wr_t *out);
/* Appends the decompressed form of in[0..len) to `out`, failing when it
 * would exceed max_out bytes (a guard against decompression bombs) or when
 * the input is corrupt or truncated. Snappy accepts raw and xerial-framed
 * input; gzip, lz4 and zstd accept concatenated frames. Returns 0, 1 when
 * the limit is passed or -1 for anything else, with kiq_error_set (out is
 * then left as it was either way). */
int kiq_decompress(int codec, const uint8_t *in, size_t len, size_t max_out, kiq_wr_t *out);

#endif
