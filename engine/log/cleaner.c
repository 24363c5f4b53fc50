#include "log/cleaner.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"
#include "log/log_names.h"
#include "record/batch.h"
#include "record/compression.h"
#include "record/crc32c.h"

/* ---- Aborted transactions ---- */

/* The aborted transactions of the segments being cleaned (log/txn_index.h),
 * in the arena of one kiq_log_clean call. */
typedef struct aborted_set {
    kiq_aborted_t *e;
    size_t n;
} aborted_set_t;

/* Whether the batch holds records of an aborted transaction: they never
 * count as a key's latest value and are dropped, as Kafka's cleaner does. */
static bool aborted_batch(const aborted_set_t *a, const kiq_batch_header_t *h)
{
    if (!kiq_batch_is_transactional(h) || kiq_batch_is_control(h)) return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->e[i].producer_id == h->producer_id && a->e[i].first_offset <= h->base_offset &&
            h->base_offset < a->e[i].last_offset)
            return true;
    return false;
}

/* Producers whose transaction still has records in what this pass has
 * read so far: its marker stays. One kiq_log_clean call's. */
typedef struct txn_data {
    int64_t *pid;
    size_t n, cap;
    bool lost; /* out of memory once: every marker is kept */
} txn_data_t;

static void txn_data_mark(txn_data_t *t, int64_t pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->pid[i] == pid) return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        int64_t *p = realloc(t->pid, cap * sizeof *p);
        if (!p) {
            t->lost = true;
            return;
        }
        t->pid = p;
        t->cap = cap;
    }
    t->pid[t->n++] = pid;
}

/* At pid's marker: whether its transaction kept records (it is over
 * either way). */
static bool txn_data_take(txn_data_t *t, int64_t pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->pid[i] == pid) {
            t->pid[i] = t->pid[--t->n];
            return true;
        }
    return t->lost;
}

/* ---- Offset map: key -> latest offset ---- */

/* Open addressing over full key copies (no digest, so no collision can
 * drop a live record). Owned by one kiq_log_clean call. */
typedef struct slot {
    uint64_t hash;
    int64_t offset;
    uint8_t *key; /* NULL: empty slot */
    int32_t key_len;
} slot_t;

typedef struct offset_map {
    slot_t *slots;
    size_t cap; /* a power of two */
    size_t n;
} offset_map_t;

static uint64_t key_hash(const uint8_t *p, int32_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static slot_t *map_find(offset_map_t *m, const uint8_t *key, int32_t len, uint64_t h)
{
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        slot_t *s = &m->slots[i];
        if (!s->key || (s->hash == h && s->key_len == len && memcmp(s->key, key, (size_t)len) == 0)) return s;
    }
}

static int map_grow(offset_map_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    slot_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return kiq_error_set("out of memory growing the cleaner's offset map");
    offset_map_t nm = {slots, cap, m->n};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) *map_find(&nm, m->slots[i].key, m->slots[i].key_len, m->slots[i].hash) = m->slots[i];
    free(m->slots);
    *m = nm;
    return 0;
}

static int map_put(offset_map_t *m, const uint8_t *key, int32_t len, int64_t offset)
{
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) < 0) return -1;
    uint64_t h = key_hash(key, len);
    slot_t *s = map_find(m, key, len, h);
    if (!s->key) {
        /* One spare byte so an empty key still gets a non-NULL copy. */
        s->key = malloc((size_t)len + 1);
        if (!s->key) return kiq_error_set("out of memory in the cleaner's offset map");
        if (len) memcpy(s->key, key, (size_t)len);
        s->key_len = len;
        s->hash = h;
        m->n++;
    }
    s->offset = offset; /* segments are read in offset order */
    return 0;
}

static int64_t map_get(offset_map_t *m, const uint8_t *key, int32_t len)
{
    if (!m->cap) return -1;
    slot_t *s = map_find(m, key, len, key_hash(key, len));
    return s->key ? s->offset : -1;
}

static void map_free(offset_map_t *m)
{
    for (size_t i = 0; i < m->cap; i++) free(m->slots[i].key);
    free(m->slots);
}

/* ---- Reading a closed segment batch by batch ---- */

/* Sequential batch reader over a referenced segment's descriptor; on the
 * stack of one pass. */
typedef struct seg_reader {
    const kiq_log_closed_segment_t *cs;
    uint64_t pos;
    uint8_t *buf;
    size_t cap;
} seg_reader_t;

/* 1 with the next batch in r->buf (len, header), 0 at the end, -1. */
static int next_batch(seg_reader_t *r, size_t *len, kiq_batch_header_t *h)
{
    const kiq_segment_t *seg = r->cs->seg;
    if (r->pos >= r->cs->size) return 0;
    uint64_t left = r->cs->size - r->pos;
    uint8_t head[KIQ_BATCH_HEADER_SIZE];
    if (left < sizeof head) return kiq_error_set("%s: %" PRIu64 " stray bytes at the end", seg->path, left);
    if (kiq_pread_full(seg->fd, head, sizeof head, r->pos) != (ssize_t)sizeof head)
        return kiq_error_set("%s: short read at %" PRIu64, seg->path, r->pos);
    if (kiq_batch_header_parse(head, sizeof head, h) < 0) return kiq_error_set("%s: %s", seg->path, kiq_error_get());
    size_t size = kiq_batch_size(h);
    if (h->batch_length < KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_LOG_OVERHEAD || size > left)
        return kiq_error_set("%s: batch at %" PRIu64 " has a bad length", seg->path, r->pos);
    if (size > r->cap) {
        uint8_t *p = realloc(r->buf, size);
        if (!p) return kiq_error_set("out of memory reading %s", seg->path);
        r->buf = p;
        r->cap = size;
    }
    if (kiq_pread_full(seg->fd, r->buf, size, r->pos) != (ssize_t)size)
        return kiq_error_set("%s: short read at %" PRIu64, seg->path, r->pos);
    r->pos += size;
    *len = size;
    return 1;
}

/* ---- Building the map ---- */

static int map_record(const kiq_record_t *rec, void *ctx)
{
    if (!rec->key.p) return 0;
    return map_put(ctx, rec->key.p, rec->key.len, rec->offset);
}

static int map_segment(offset_map_t *m, const aborted_set_t *ab, const kiq_log_closed_segment_t *cs, int64_t *records)
{
    seg_reader_t r = {.cs = cs};
    kiq_batch_header_t h;
    size_t len;
    int rc;
    while ((rc = next_batch(&r, &len, &h)) == 1) {
        if (kiq_batch_is_control(&h) || aborted_batch(ab, &h)) continue;
        *records += h.record_count;
        if (kiq_batch_foreach_record(r.buf, len, KIQ_BATCH_MAX_DECOMPRESSED, map_record, m) != 0) {
            rc = kiq_error_set("%s: batch %" PRId64 ": %s", cs->seg->path, h.base_offset, kiq_error_get());
            break;
        }
    }
    free(r.buf);
    return rc;
}

/* ---- Rewriting one segment ---- */

/* Which records of one batch stay, re-encoded as they were; on the stack
 * of clean_segment. */
typedef struct keep {
    offset_map_t *map;
    bool drop_tombstones;
    kiq_wr_t recs;
    int32_t kept;
    int64_t max_ts;
} keep_t;

static int keep_record(const kiq_record_t *rec, void *ctx)
{
    keep_t *k = ctx;
    if (!rec->key.p) return 0;
    if (map_get(k->map, rec->key.p, rec->key.len) != rec->offset) return 0;
    if (!rec->value.p && k->drop_tombstones) return 0;
    size_t body = 1 + kiq_varlong_size(rec->timestamp_delta) + kiq_varint_size(rec->offset_delta) +
                  kiq_varint_size(rec->key.len) + (size_t)rec->key.len +
                  kiq_varint_size(rec->value.p ? rec->value.len : -1) + (rec->value.p ? (size_t)rec->value.len : 0) +
                  kiq_varint_size(rec->header_count) + rec->headers_len;
    kiq_wr_t *w = &k->recs;
    kiq_wr_varint(w, (int32_t)body);
    kiq_wr_i8(w, rec->attributes);
    kiq_wr_varlong(w, rec->timestamp_delta);
    kiq_wr_varint(w, rec->offset_delta);
    kiq_wr_varint(w, rec->key.len);
    kiq_wr_raw(w, rec->key.p, (size_t)rec->key.len);
    kiq_wr_varint(w, rec->value.p ? rec->value.len : -1);
    if (rec->value.p) kiq_wr_raw(w, rec->value.p, (size_t)rec->value.len);
    kiq_wr_varint(w, rec->header_count);
    if (rec->headers_len) kiq_wr_raw(w, rec->headers, rec->headers_len);
    if (w->err) return kiq_error_set("out of memory rebuilding a batch");
    if (k->kept == 0 || rec->timestamp > k->max_ts) k->max_ts = rec->timestamp;
    k->kept++;
    return 0;
}

/* The batch with only the kept records, appended to out: the original
 * header fields, except the record count, the max timestamp (of what is
 * left, unless the batch has LogAppendTime) and the CRC. */
static int rebuild_batch(const uint8_t *orig, const kiq_batch_header_t *h, keep_t *k, kiq_wr_t *out)
{
    size_t start = out->len;
    if (!kiq_wr_reserve(out, KIQ_BATCH_HEADER_SIZE)) return kiq_error_set("out of memory rebuilding a batch");
    if (kiq_compress(kiq_batch_codec(h), k->recs.buf, k->recs.len, out)) {
        out->len = start;
        return -1;
    }
    size_t total = out->len - start;
    uint8_t *p = out->buf + start;
    memcpy(p, orig, KIQ_BATCH_HEADER_SIZE);
    kiq_put_be32(p + KIQ_BATCH_POS_LENGTH, (uint32_t)(total - KIQ_BATCH_LOG_OVERHEAD));
    if (!kiq_batch_is_log_append_time(h)) kiq_put_be64(p + KIQ_BATCH_POS_MAX_TIMESTAMP, (uint64_t)k->max_ts);
    kiq_put_be32(p + KIQ_BATCH_POS_RECORD_COUNT, (uint32_t)k->kept);
    uint32_t crc = kiq_crc32c(0, p + KIQ_BATCH_POS_ATTRIBUTES, total - KIQ_BATCH_POS_ATTRIBUTES);
    kiq_put_be32(p + KIQ_BATCH_POS_CRC, crc);
    return 0;
}

/* Writes the cleaned copy of cs to `.cleaned` and, when anything went,
 * renames it `.swap`: 1 then, 0 when the segment stays as it is, -1. */
static int clean_segment(const char *dir, offset_map_t *m, const aborted_set_t *ab, txn_data_t *td,
                         const kiq_log_closed_segment_t *cs, bool drop_tombstones,
                         kiq_cleaner_stats_t *st, uint64_t *new_size)
{
    char cleaned[PATH_MAX], swap[PATH_MAX];
    if (kiq_log_segment_path(cleaned, sizeof cleaned, dir, cs->base_offset, KIQ_CLEANED_SUFFIX) < 0 ||
        kiq_log_segment_path(swap, sizeof swap, dir, cs->base_offset, KIQ_SWAP_SUFFIX) < 0)
        return -1;
    int fd;
    do fd = open(cleaned, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return kiq_error_errno("open %s", cleaned);
    seg_reader_t r = {.cs = cs};
    kiq_wr_t out;
    kiq_wr_init(&out);
    keep_t k = {.map = m, .drop_tombstones = drop_tombstones};
    kiq_wr_init(&k.recs);
    uint64_t written = 0;
    bool dropped = false;
    kiq_batch_header_t h;
    size_t len;
    int rc;
    while ((rc = next_batch(&r, &len, &h)) == 1) {
        out.len = 0;
        if (kiq_batch_is_control(&h)) {
            /* a marker stays while its transaction has records left (a
             * read_committed consumer needs it to read them), then as long
             * as a tombstone would: a consumer may be reading past it */
            if (!txn_data_take(td, h.producer_id) && drop_tombstones)
                dropped = true;
            else
                kiq_wr_raw(&out, r.buf, len);
        } else if (aborted_batch(ab, &h)) {
            dropped = true;
        } else {
            k.recs.len = 0;
            k.kept = 0;
            if (kiq_batch_foreach_record(r.buf, len, KIQ_BATCH_MAX_DECOMPRESSED, keep_record, &k) != 0) {
                rc = kiq_error_set("%s: batch %" PRId64 ": %s", cs->seg->path, h.base_offset, kiq_error_get());
                break;
            }
            st->records_kept += k.kept;
            if (k.kept > 0 && kiq_batch_is_transactional(&h)) txn_data_mark(td, h.producer_id);
            if (k.kept == h.record_count) {
                kiq_wr_raw(&out, r.buf, len);
            } else {
                dropped = true;
                if (k.kept > 0 && rebuild_batch(r.buf, &h, &k, &out) < 0) {
                    rc = -1;
                    break;
                }
            }
        }
        if (out.err) {
            rc = kiq_error_set("out of memory cleaning %s", cs->seg->path);
            break;
        }
        if (out.len && kiq_pwrite_full(fd, out.buf, out.len, written) < 0) {
            rc = kiq_error_errno("write %s", cleaned);
            break;
        }
        written += out.len;
    }
    free(r.buf);
    kiq_wr_free(&out);
    kiq_wr_free(&k.recs);
    if (rc == 0 && dropped && fdatasync(fd) < 0) rc = kiq_error_errno("fdatasync %s", cleaned);
    close(fd);
    if (rc < 0 || !dropped) {
        unlink(cleaned);
        return rc;
    }
    if (rename(cleaned, swap) < 0) {
        rc = kiq_error_errno("rename %s to %s", cleaned, swap);
        unlink(cleaned);
        return rc;
    }
    if (kiq_fsync_dir(dir) < 0) KIQ_WARN("cleaning %s: %s", dir, kiq_error_get());
    *new_size = written;
    return 1;
}

/* ---- One pass ---- */

int kiq_log_clean(kiq_partition_log_t *l, const kiq_cleaner_options_t *opt, kiq_cleaner_stats_t *stats)
{
    kiq_cleaner_stats_t local;
    kiq_cleaner_stats_t *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    const char *dir = kiq_partition_log_dir(l);
    kiq_log_closed_segment_t *segs;
    uint64_t generation;
    int n = kiq_partition_log_closed_segments(l, &segs, &generation);
    if (n <= 0) return n;
    /* never past the last stable offset: an open transaction's records are
     * neither committed nor aborted yet */
    int64_t lso = kiq_partition_log_last_stable_offset(l);
    int cleanable = 0;
    while (cleanable < n && segs[cleanable].next_offset <= lso &&
           (opt->min_compaction_lag_ms <= 0 ||
            segs[cleanable].max_timestamp <= opt->now_ms - opt->min_compaction_lag_ms))
        cleanable++;
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    aborted_set_t ab = {0};
    if (cleanable > 0)
        ab.n = kiq_partition_log_aborted(l, segs[0].base_offset, segs[cleanable - 1].next_offset, &arena, &ab.e);
    offset_map_t m = {0};
    txn_data_t td = {0};
    int rc = 0, replaced = 0;
    for (int i = 0; i < cleanable && rc == 0; i++) rc = map_segment(&m, &ab, &segs[i], &st->records_read);
    for (int i = 0; i < cleanable && rc == 0; i++) {
        const kiq_log_closed_segment_t *cs = &segs[i];
        bool drop_tombstones = cs->max_timestamp < opt->now_ms - opt->delete_retention_ms;
        uint64_t new_size = 0;
        int64_t kept_before = st->records_kept;
        int r = clean_segment(dir, &m, &ab, &td, cs, drop_tombstones, st, &new_size);
        if (r < 0) {
            rc = -1;
            break;
        }
        if (r == 0) continue;
        r = kiq_partition_log_replace_segment(l, cs->seg, generation);
        if (r < 0) {
            rc = -1;
            break;
        }
        if (r > 0) break; /* the log changed under us; the next pass starts over */
        KIQ_INFO("%s: cleaned segment %" PRId64 ": %" PRIu64 " -> %" PRIu64 " bytes, %" PRId64 " records kept", dir,
                 cs->base_offset, cs->size, new_size, st->records_kept - kept_before);
        st->segments_cleaned++;
        st->bytes_before += cs->size;
        st->bytes_after += new_size;
        replaced++;
    }
    map_free(&m);
    free(td.pid);
    kiq_arena_reset(&arena);
    kiq_partition_log_closed_release(segs, n);
    return rc < 0 ? -1 : replaced;
}
