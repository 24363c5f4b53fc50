/* Value types of the Kafka wire protocol as the generated codecs hold them.
 * Decoded strings and bytes point into the request frame (no copy), so they
 * live as long as the frame. */
#ifndef KIQ_PROTO_TYPES_H
#define KIQ_PROTO_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/uuid.h"

/* A string; p == NULL means null. Not NUL-terminated. */
typedef struct kiq_str {
    const char *p;
    int32_t len;
} kiq_str_t;

/* Bytes (also RecordBatch data); p == NULL means null. */
typedef struct kiq_bytes {
    const uint8_t *p;
    int32_t len;
} kiq_bytes_t;

/* Tagged fields this codec does not know, kept raw so re-encoding a decoded
 * message gives the same bytes. */
typedef struct kiq_tags {
    const uint8_t *raw;
    int32_t len;
    int32_t count;
} kiq_tags_t;

#define KIQ_STR_NULL ((kiq_str_t){NULL, 0})
#define KIQ_STR(s) ((kiq_str_t){(s), (int32_t)strlen(s)})
#define KIQ_STR_FMT "%.*s"
#define KIQ_STR_ARG(s) (int)((s).p ? (s).len : 4), ((s).p ? (s).p : "null")

static inline bool kiq_str_eq(kiq_str_t s, const char *c)
{
    size_t n = strlen(c);
    return s.p && (size_t)s.len == n && memcmp(s.p, c, n) == 0;
}

#endif
