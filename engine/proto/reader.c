#include "proto/reader.h"

int kiq_rd_fail(kiq_rd_t *r, const char *why)
{
    if (!r->err) r->err = why;
    r->p = r->end;
    return 0;
}

static inline const uint8_t *take(kiq_rd_t *r, size_t n)
{
    if (r->err || (size_t)(r->end - r->p) < n) {
        kiq_rd_fail(r, "truncated");
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

uint16_t kiq_rd_u16(kiq_rd_t *r)
{
    const uint8_t *p = take(r, 2);
    return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

int16_t kiq_rd_i16(kiq_rd_t *r) { return (int16_t)kiq_rd_u16(r); }

uint32_t kiq_rd_u32(kiq_rd_t *r)
{
    const uint8_t *p = take(r, 4);
    return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

int32_t kiq_rd_i32(kiq_rd_t *r) { return (int32_t)kiq_rd_u32(r); }

int64_t kiq_rd_i64(kiq_rd_t *r)
{
    uint64_t hi = kiq_rd_u32(r);
    uint64_t lo = kiq_rd_u32(r);
    return r->err ? 0 : (int64_t)(hi << 32 | lo);
}

double kiq_rd_f64(kiq_rd_t *r)
{
    union { uint64_t u; double d; } v = {.u = (uint64_t)kiq_rd_i64(r)};
    return v.d;
}

bool kiq_rd_bool(kiq_rd_t *r) { return kiq_rd_i8(r) != 0; }

kiq_uuid_t kiq_rd_uuid(kiq_rd_t *r)
{
    kiq_uuid_t u = {{0}};
    const uint8_t *p = take(r, 16);
    if (p) memcpy(u.b, p, 16);
    return u;
}

static uint64_t rd_uvarint64(kiq_rd_t *r, int max_bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; i++) {
        const uint8_t *p = take(r, 1);
        if (!p) return 0;
        v |= (uint64_t)(*p & 0x7f) << (7 * i);
        if (!(*p & 0x80)) return v;
    }
    kiq_rd_fail(r, "varint too long");
    return 0;
}

/* A 5-byte varint may carry at most 4 bits in its last byte. */
static uint32_t rd_uvarint32(kiq_rd_t *r)
{
    uint64_t v = rd_uvarint64(r, 5);
    if (v > UINT32_MAX) return (uint32_t)kiq_rd_fail(r, "varint overflows 32 bits");
    return (uint32_t)v;
}

uint32_t kiq_rd_uvarint_slow(kiq_rd_t *r) { return rd_uvarint32(r); }

int64_t kiq_rd_varlong_slow(kiq_rd_t *r)
{
    uint64_t u = rd_uvarint64(r, 10);
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Reads a length prefix; returns -1 for null, -2 on failure. */
static int64_t rd_len(kiq_rd_t *r, bool compact, bool wide, bool nullable)
{
    int64_t n;
    if (compact)
        n = (int64_t)kiq_rd_uvarint(r) - 1;
    else
        n = wide ? kiq_rd_i32(r) : kiq_rd_i16(r);
    if (r->err) return -2;
    if (n < -1) return kiq_rd_fail(r, "negative length"), -2;
    if (n == -1 && !nullable) return kiq_rd_fail(r, "null where not nullable"), -2;
    return n;
}

kiq_str_t kiq_rd_string(kiq_rd_t *r, bool compact, bool nullable)
{
    kiq_str_t s = KIQ_STR_NULL;
    int64_t n = rd_len(r, compact, false, nullable);
    if (n < 0) return s;
    const uint8_t *p = take(r, (size_t)n);
    if (p) {
        s.p = (const char *)p;
        s.len = (int32_t)n;
    }
    return s;
}

kiq_bytes_t kiq_rd_bytes(kiq_rd_t *r, bool compact, bool nullable)
{
    kiq_bytes_t b = {NULL, 0};
    int64_t n = rd_len(r, compact, true, nullable);
    if (n < 0) return b;
    const uint8_t *p = take(r, (size_t)n);
    if (p) {
        b.p = p;
        b.len = (int32_t)n;
    }
    return b;
}

int32_t kiq_rd_array_len(kiq_rd_t *r, bool compact, bool nullable, size_t min_elem_size)
{
    int64_t n = rd_len(r, compact, true, nullable);
    if (n == -2) return 0;
    if (n > 0 && (uint64_t)n * (min_elem_size ? min_elem_size : 1) > kiq_rd_left(r))
        return kiq_rd_fail(r, "array count exceeds frame");
    return (int32_t)n;
}
