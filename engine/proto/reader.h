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

int8_t kiq_rd_i8(kiq_rd_t *r);
int16_t kiq_rd_i16(kiq_rd_t *r);
uint16_t kiq_rd_u16(kiq_rd_t *r);
int32_t kiq_rd_i32(kiq_rd_t *r);
uint32_t kiq_rd_u32(kiq_rd_t *r);
int64_t kiq_rd_i64(kiq_rd_t *r);
double kiq_rd_f64(kiq_rd_t *r);
bool kiq_rd_bool(kiq_rd_t *r);
kiq_uuid_t kiq_rd_uuid(kiq_rd_t *r);
uint32_t kiq_rd_uvarint(kiq_rd_t *r);
/* Zigzag varints as used inside records. */
int32_t kiq_rd_varint(kiq_rd_t *r);
int64_t kiq_rd_varlong(kiq_rd_t *r);
/* A pointer to the next n bytes, or NULL (and failure) when fewer remain. */
const uint8_t *kiq_rd_raw(kiq_rd_t *r, size_t n);

/* Length-prefixed values: compact = uvarint(n+1) prefix, else i16 (strings)
 * or i32 (bytes, arrays). A null where not nullable is a failure. */
kiq_str_t kiq_rd_string(kiq_rd_t *r, bool compact, bool nullable);
kiq_bytes_t kiq_rd_bytes(kiq_rd_t *r, bool compact, bool nullable);
/* Array element count, -1 for null. Rejects counts that cannot fit in what is
 * left, given each element takes at least min_elem_size bytes. */
int32_t kiq_rd_array_len(kiq_rd_t *r, bool compact, bool nullable, size_t min_elem_size);

#endif
