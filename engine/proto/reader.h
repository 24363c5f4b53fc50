/* Bounds-checked reader over a received frame. Errors are sticky: the first
 * read past the end (or of a malformed length) sets `err`, and every read
 * after returns zero values, so decoders check once at the end and the
 * caller reports api key, version and `kiq_rd_offset()` on one path. */
#ifndef KIQ_PROTO_READER_H
#define KIQ_PROTO_READER_H

#include "proto/types.h"

typedef struct kiq_rd {
    const uint8_t *base;
    const uint8_t *p;
    const uint8_t *end;
    const char *err; /* first failure, NULL while fine */
} kiq_rd_t;

static inline void kiq_rd_init(kiq_rd_t *r, const void *buf, size_t len)
{
    r->base = r->p = buf;
    r->end = len ? r->p + len : r->p; /* NULL + 0 is undefined in C */
    r->err = NULL;
}

static inline size_t kiq_rd_offset(const kiq_rd_t *r) { return (size_t)(r->p - r->base); }
static inline size_t kiq_rd_left(const kiq_rd_t *r) { return (size_t)(r->end - r->p); }
/* Marks the reader failed (first reason wins) and returns 0. */
int kiq_rd_fail(kiq_rd_t *r, const char *why);

/* A pointer to the next n bytes, or NULL (and failure) when fewer remain.
 * Inline with the varints below: a record walk is mostly these. */
static inline const uint8_t *kiq_rd_raw(kiq_rd_t *r, size_t n)
{
    if (__builtin_expect(!r->err && (size_t)(r->end - r->p) >= n, 1)) {
        const uint8_t *p = r->p;
        r->p += n;
        return p;
    }
    kiq_rd_fail(r, "truncated");
    return NULL;
}

static inline int8_t kiq_rd_i8(kiq_rd_t *r)
{
    const uint8_t *p = kiq_rd_raw(r, 1);
    return p ? (int8_t)p[0] : 0;
}

/* The out-of-line reads behind the inline varints: every length, every
 * malformed or truncated case. */
uint32_t kiq_rd_uvarint_slow(kiq_rd_t *r);
int64_t kiq_rd_varlong_slow(kiq_rd_t *r);

/* An unsigned varint of at most 32 bits. A failed reader's p is at its
 * end, so the fast path never reads past a failure. */
static inline uint32_t kiq_rd_uvarint(kiq_rd_t *r)
{
    const uint8_t *p = r->p;
    if (__builtin_expect(r->end - p >= 5, 1)) {
        uint32_t v = p[0] & 0x7fu;
        if (!(p[0] & 0x80)) return r->p = p + 1, v;
        v |= (uint32_t)(p[1] & 0x7f) << 7;
        if (!(p[1] & 0x80)) return r->p = p + 2, v;
        v |= (uint32_t)(p[2] & 0x7f) << 14;
        if (!(p[2] & 0x80)) return r->p = p + 3, v;
        v |= (uint32_t)(p[3] & 0x7f) << 21;
        if (!(p[3] & 0x80)) return r->p = p + 4, v;
        if (p[4] <= 0x0f) return r->p = p + 5, v | (uint32_t)p[4] << 28;
    }
    return kiq_rd_uvarint_slow(r);
}

/* Zigzag varints as used inside records. */
static inline int32_t kiq_rd_varint(kiq_rd_t *r)
{
    uint32_t u = kiq_rd_uvarint(r);
    return (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
}

static inline int64_t kiq_rd_varlong(kiq_rd_t *r)
{
    if (__builtin_expect(r->p < r->end && *r->p < 0x80, 1)) {
        uint8_t u = *r->p++;
        return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    }
    return kiq_rd_varlong_slow(r);
}

int16_t kiq_rd_i16(kiq_rd_t *r);
uint16_t kiq_rd_u16(kiq_rd_t *r);
int32_t kiq_rd_i32(kiq_rd_t *r);
uint32_t kiq_rd_u32(kiq_rd_t *r);
int64_t kiq_rd_i64(kiq_rd_t *r);
double kiq_rd_f64(kiq_rd_t *r);
bool kiq_rd_bool(kiq_rd_t *r);
kiq_uuid_t kiq_rd_uuid(kiq_rd_t *r);

/* Length-prefixed values: compact = uvarint(n+1) prefix, else i16 (strings)
 * or i32 (bytes, arrays). A null where not nullable is a failure. */
kiq_str_t kiq_rd_string(kiq_rd_t *r, bool compact, bool nullable);
kiq_bytes_t kiq_rd_bytes(kiq_rd_t *r, bool compact, bool nullable);
/* Array element count, -1 for null. Rejects counts that cannot fit in what is
 * left, given each element takes at least min_elem_size bytes. */
int32_t kiq_rd_array_len(kiq_rd_t *r, bool compact, bool nullable, size_t min_elem_size);

#endif
