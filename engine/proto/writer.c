#include "proto/writer.h"

#include <stdlib.h>

void kiq_wr_init(kiq_wr_t *w)
{
    w->buf = NULL;
    w->len = w->cap = 0;
    w->err = false;
    w->parts = NULL;
    w->nparts = w->parts_cap = 0;
    w->file_bytes = 0;
    w->lent = NULL;
    w->lent_parts = NULL;
}

void kiq_wr_init_lent(kiq_wr_t *w, uint8_t *buf, size_t cap, kiq_file_part_t *parts, size_t parts_cap)
{
    kiq_wr_init(w);
    w->buf = w->lent = buf;
    w->cap = buf ? cap : 0;
    w->parts = w->lent_parts = parts;
    w->parts_cap = parts ? parts_cap : 0;
}

static void free_parts(kiq_wr_t *w)
{
    if (!kiq_wr_parts_lent(w)) free(w->parts);
}

void kiq_wr_free(kiq_wr_t *w)
{
    if (!kiq_wr_lent(w)) free(w->buf);
    free_parts(w);
    kiq_wr_init(w);
}

uint8_t *kiq_wr_steal(kiq_wr_t *w, size_t *len)
{
    uint8_t *b = w->buf;
    *len = w->len;
    free_parts(w);
    kiq_wr_init(w);
    return b;
}

/* Grows lent or heap storage to cap elements of size each: the lent one
 * is copied to the heap (its first n in use), never realloc'd. */
static void *grow(void *old, const void *lent, size_t n, size_t cap, size_t size)
{
    if (!old || old != lent) return realloc(old, cap * size);
    void *m = malloc(cap * size);
    if (m) memcpy(m, old, n * size);
    return m;
}

kiq_file_part_t *kiq_wr_steal_parts(kiq_wr_t *w, size_t *n)
{
    kiq_file_part_t *p = w->parts;
    *n = w->nparts;
    w->parts = w->lent_parts = NULL;
    w->nparts = w->parts_cap = 0;
    w->file_bytes = 0;
    return p;
}

void kiq_wr_file(kiq_wr_t *w, kiq_file_range_t range)
{
    if (w->err || range.length == 0) return;
    if (w->nparts == w->parts_cap) {
        size_t cap = w->parts_cap ? w->parts_cap * 2 : 8;
        kiq_file_part_t *p = grow(w->parts, w->lent_parts, w->nparts, cap, sizeof *p);
        if (!p) {
            w->err = true;
            return;
        }
        w->parts = p;
        w->parts_cap = cap;
    }
    w->parts[w->nparts++] = (kiq_file_part_t){.at = w->len, .range = range};
    w->file_bytes += range.length;
}

uint8_t *kiq_wr_reserve(kiq_wr_t *w, size_t n)
{
    static uint8_t none;
    if (w->err) return NULL;
    if (n == 0) return w->buf ? w->buf + w->len : &none;
    if (w->cap - w->len < n) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap - w->len < n) cap *= 2;
        uint8_t *b = grow(w->buf, w->lent, w->len, cap, 1);
        if (!b) {
            w->err = true;
            return NULL;
        }
        w->buf = b;
        w->cap = cap;
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

void kiq_wr_raw(kiq_wr_t *w, const void *p, size_t n)
{
    uint8_t *d = kiq_wr_reserve(w, n);
    if (d && n) memcpy(d, p, n);
}

void kiq_wr_i8(kiq_wr_t *w, int8_t v)
{
    uint8_t *d = kiq_wr_reserve(w, 1);
    if (d) d[0] = (uint8_t)v;
}

void kiq_wr_u16(kiq_wr_t *w, uint16_t v)
{
    uint8_t *d = kiq_wr_reserve(w, 2);
    if (d) kiq_put_be16(d, v);
}

void kiq_wr_i16(kiq_wr_t *w, int16_t v) { kiq_wr_u16(w, (uint16_t)v); }

void kiq_wr_u32(kiq_wr_t *w, uint32_t v)
{
    uint8_t *d = kiq_wr_reserve(w, 4);
    if (d) kiq_put_be32(d, v);
}

void kiq_wr_i32(kiq_wr_t *w, int32_t v) { kiq_wr_u32(w, (uint32_t)v); }

void kiq_wr_i64(kiq_wr_t *w, int64_t v)
{
    uint8_t *d = kiq_wr_reserve(w, 8);
    if (d) kiq_put_be64(d, (uint64_t)v);
}

void kiq_wr_f64(kiq_wr_t *w, double v)
{
    union { double d; uint64_t u; } x = {.d = v};
    kiq_wr_i64(w, (int64_t)x.u);
}

void kiq_wr_bool(kiq_wr_t *w, bool v) { kiq_wr_i8(w, v ? 1 : 0); }

void kiq_wr_uuid(kiq_wr_t *w, const kiq_uuid_t *u) { kiq_wr_raw(w, u->b, 16); }

static void wr_uvarint64(kiq_wr_t *w, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    kiq_wr_raw(w, tmp, n);
}

void kiq_wr_uvarint(kiq_wr_t *w, uint32_t v) { wr_uvarint64(w, v); }

void kiq_wr_varint(kiq_wr_t *w, int32_t v)
{
    wr_uvarint64(w, (uint32_t)((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void kiq_wr_varlong(kiq_wr_t *w, int64_t v)
{
    wr_uvarint64(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static size_t uvarint64_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t kiq_uvarint_size(uint32_t v) { return uvarint64_size(v); }

size_t kiq_varint_size(int32_t v)
{
    return uvarint64_size((uint32_t)((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

size_t kiq_varlong_size(int64_t v)
{
    return uvarint64_size(((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void kiq_wr_string(kiq_wr_t *w, kiq_str_t s, bool compact, bool nullable)
{
    if (!s.p && nullable) {
        if (compact)
            kiq_wr_uvarint(w, 0);
        else
            kiq_wr_i16(w, -1);
        return;
    }
    int32_t n = s.p ? s.len : 0;
    if (n < 0 || (!compact && n > INT16_MAX)) {
        w->err = true; /* cannot be framed: refuse rather than corrupt */
        return;
    }
    if (compact)
        kiq_wr_uvarint(w, (uint32_t)n + 1);
    else
        kiq_wr_i16(w, (int16_t)n);
    kiq_wr_raw(w, s.p, (size_t)n);
}

void kiq_wr_bytes(kiq_wr_t *w, kiq_bytes_t b, bool compact, bool nullable)
{
    if (!b.p && nullable) {
        if (compact)
            kiq_wr_uvarint(w, 0);
        else
            kiq_wr_i32(w, -1);
        return;
    }
    int32_t n = b.p ? b.len : 0;
    if (n < 0) {
        w->err = true;
        return;
    }
    if (compact)
        kiq_wr_uvarint(w, (uint32_t)n + 1);
    else
        kiq_wr_i32(w, n);
    kiq_wr_raw(w, b.p, (size_t)n);
}

void kiq_wr_records(kiq_wr_t *w, kiq_bytes_t b, const kiq_file_records_t *files, bool compact,
                    bool nullable)
{
    if (!files) {
        kiq_wr_bytes(w, b, compact, nullable);
        return;
    }
    uint64_t n = 0;
    for (int i = 0; i < files->n; i++) n += files->ranges[i].length;
    if (n > INT32_MAX) {
        w->err = true; /* cannot be framed */
        return;
    }
    if (compact)
        kiq_wr_uvarint(w, (uint32_t)n + 1);
    else
        kiq_wr_i32(w, (int32_t)n);
    for (int i = 0; i < files->n; i++) kiq_wr_file(w, files->ranges[i]);
}

void kiq_wr_array_len(kiq_wr_t *w, int32_t n, bool compact, bool nullable)
{
    if (n < 0 && !nullable) n = 0;
    if (compact)
        kiq_wr_uvarint(w, (uint32_t)n + 1);
    else
        kiq_wr_i32(w, n);
}

void kiq_wr_patch_i32(kiq_wr_t *w, size_t pos, int32_t v)
{
    if (!w->err && pos + 4 <= w->len) kiq_put_be32(w->buf + pos, (uint32_t)v);
}
