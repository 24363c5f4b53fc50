/* Growable output buffer for encoding frames. Allocation failure is sticky
 * (`err`), checked once when the frame is finished. Owned by one thread. */
#ifndef KIQ_PROTO_WRITER_H
#define KIQ_PROTO_WRITER_H

#include "proto/types.h"

typedef struct kiq_wr {
    uint8_t *buf;
    size_t len;
    size_t cap;
    bool err;
} kiq_wr_t;

void kiq_wr_init(kiq_wr_t *w);
void kiq_wr_free(kiq_wr_t *w);
/* Gives the buffer away (caller frees it) and resets the writer. */
uint8_t *kiq_wr_steal(kiq_wr_t *w, size_t *len);
/* Room for n more bytes; returns where they go, or NULL (and err). */
uint8_t *kiq_wr_reserve(kiq_wr_t *w, size_t n);

void kiq_wr_raw(kiq_wr_t *w, const void *p, size_t n);
void kiq_wr_i8(kiq_wr_t *w, int8_t v);
void kiq_wr_i16(kiq_wr_t *w, int16_t v);
void kiq_wr_u16(kiq_wr_t *w, uint16_t v);
void kiq_wr_i32(kiq_wr_t *w, int32_t v);
void kiq_wr_u32(kiq_wr_t *w, uint32_t v);
void kiq_wr_i64(kiq_wr_t *w, int64_t v);
void kiq_wr_f64(kiq_wr_t *w, double v);
void kiq_wr_bool(kiq_wr_t *w, bool v);
void kiq_wr_uuid(kiq_wr_t *w, const kiq_uuid_t *u);
void kiq_wr_uvarint(kiq_wr_t *w, uint32_t v);
void kiq_wr_varint(kiq_wr_t *w, int32_t v);
void kiq_wr_varlong(kiq_wr_t *w, int64_t v);
size_t kiq_uvarint_size(uint32_t v);
size_t kiq_varint_size(int32_t v);
size_t kiq_varlong_size(int64_t v);

void kiq_wr_string(kiq_wr_t *w, kiq_str_t s, bool compact, bool nullable);
void kiq_wr_bytes(kiq_wr_t *w, kiq_bytes_t b, bool compact, bool nullable);
/* n < 0 writes null when nullable, else an empty array. */
void kiq_wr_array_len(kiq_wr_t *w, int32_t n, bool compact, bool nullable);

/* Patch a big-endian int32 at an earlier position (size prefixes). */
void kiq_wr_patch_i32(kiq_wr_t *w, size_t pos, int32_t v);

/* Big-endian helpers for code that works on raw buffers (batches, indexes). */
static inline uint32_t kiq_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint16_t kiq_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint64_t kiq_be64(const uint8_t *p)
{
    return (uint64_t)kiq_be32(p) << 32 | kiq_be32(p + 4);
}
static inline void kiq_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void kiq_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void kiq_put_be64(uint8_t *p, uint64_t v)
{
    kiq_put_be32(p, (uint32_t)(v >> 32));
    kiq_put_be32(p + 4, (uint32_t)v);
}

#endif
