/* Growable output buffer for encoding frames. Allocation failure is sticky
 * (`err`), checked once when the frame is finished. Owned by one thread.
 *
 * A frame may also carry file parts: ranges of files that go into the frame
 * at a position of the buffer without being copied into it (log segments
 * sent with sendfile()). The frame is then buf[0, at1), file part 1,
 * buf[at1, at2), file part 2, ... buf[atN, len). */
#ifndef KIQ_PROTO_WRITER_H
#define KIQ_PROTO_WRITER_H

#include "proto/types.h"

/* Bytes [offset, offset + length) of the open file fd. */
typedef struct kiq_file_range {
    int fd;
    uint64_t offset;
    uint32_t length;
} kiq_file_range_t;

/* A records value that lies in files, given to the encoder beside (and
 * instead of) the in-memory kiq_bytes_t: its bytes are the ranges, in
 * order. The ranges stay valid while the frame is being sent; keeping the
 * files open is the owner's business. */
typedef struct kiq_file_records {
    const kiq_file_range_t *ranges;
    int n;
} kiq_file_records_t;

/* A file range placed at buffer position `at` of a frame. */
typedef struct kiq_file_part {
    size_t at;
    kiq_file_range_t range;
} kiq_file_part_t;

typedef struct kiq_wr {
    uint8_t *buf;
    size_t len;
    size_t cap;
    bool err;
    kiq_file_part_t *parts; /* in buffer order */
    size_t nparts, parts_cap;
    uint64_t file_bytes; /* sum of the parts' lengths */
    /* storage lent by kiq_wr_init_lent (a request's arena): never freed
     * or realloc'd; outgrowing it moves the bytes to the heap */
    uint8_t *lent;
    kiq_file_part_t *lent_parts;
} kiq_wr_t;

void kiq_wr_init(kiq_wr_t *w);
/* A writer that starts in cap bytes and parts_cap file parts its owner
 * keeps (either may be NULL with 0): no allocation while they suffice.
 * What it steals is then the lent storage or heap memory: see
 * kiq_wr_lent / kiq_wr_parts_lent. */
void kiq_wr_init_lent(kiq_wr_t *w, uint8_t *buf, size_t cap, kiq_file_part_t *parts, size_t parts_cap);
/* Whether the buffer (the parts) is still the lent storage, not heap memory. */
static inline bool kiq_wr_lent(const kiq_wr_t *w) { return w->buf && w->buf == w->lent; }
static inline bool kiq_wr_parts_lent(const kiq_wr_t *w) { return w->parts && w->parts == w->lent_parts; }
void kiq_wr_free(kiq_wr_t *w);
/* Gives the buffer away (caller frees it unless kiq_wr_lent said it was
 * lent) and resets the writer; file parts not taken with
 * kiq_wr_steal_parts before are dropped. */
uint8_t *kiq_wr_steal(kiq_wr_t *w, size_t *len);
/* Gives the file parts away (caller frees the array unless
 * kiq_wr_parts_lent said it was lent; NULL when none). */
kiq_file_part_t *kiq_wr_steal_parts(kiq_wr_t *w, size_t *n);
/* Bytes of the frame so far: the buffer and the file parts. */
static inline uint64_t kiq_wr_size(const kiq_wr_t *w) { return w->len + w->file_bytes; }
/* Places a file range at the current position (no bytes are read). */
void kiq_wr_file(kiq_wr_t *w, kiq_file_range_t range);
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
/* A records field: like kiq_wr_bytes when files is NULL, else the length
 * prefix of the files' bytes followed by file parts (b is ignored). */
void kiq_wr_records(kiq_wr_t *w, kiq_bytes_t b, const kiq_file_records_t *files, bool compact,
                    bool nullable);
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
