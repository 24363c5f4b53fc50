#include "log/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"
#include "log/log_names.h"
#include "record/batch.h"
#include "record/crc32c.h"

/* Index positions and relative offsets are read as int32 by Kafka's tools;
 * stay within that. */
#define SEGMENT_MAX_BYTES ((uint64_t)INT32_MAX)
#define REL_OFFSET_MAX ((int64_t)INT32_MAX)
/* Read-ahead while recovering (sequential over the whole tail) and while
 * looking a batch up (a few KiB past an index entry). */
#define RECOVER_BUF (256 * 1024)
#define LOOKUP_BUF (16 * 1024)

/* ---- Buffered sequential reading of batch headers ---- */

/* Lives on the stack of one scan, under the owning log's lock. */
typedef struct scan {
    int fd;
    uint64_t end; /* bytes of the file that may be read */
    uint8_t *buf;
    size_t cap;
    uint64_t off; /* file position of buf[0] */
    size_t len;
} scan_t;

enum { SCAN_OK, SCAN_END, SCAN_TORN, SCAN_BAD, SCAN_IO };

/* n (<= cap) bytes at pos, which the caller made sure lie before `end`;
 * NULL with the reason recorded when the file cannot supply them. */
static const uint8_t *scan_at(scan_t *s, uint64_t pos, size_t n)
{
    if (pos >= s->off && pos + n <= s->off + s->len) return s->buf + (pos - s->off);
    uint64_t want = s->end - pos < s->cap ? s->end - pos : s->cap;
    ssize_t r = kiq_pread_full(s->fd, s->buf, (size_t)want, pos);
    if (r < 0) return NULL;
    s->off = pos;
    s->len = (size_t)r;
    if ((size_t)r < n) {
        kiq_error_set("file ends at %" PRIu64 ", before the %zu bytes at %" PRIu64 " it should hold",
                      pos + (uint64_t)r, n, pos);
        return NULL;
    }
    return s->buf;
}

/* Reads the batch at pos: SCAN_OK with *loc, SCAN_END at the end, SCAN_TORN
 * when it runs past the end, SCAN_BAD when it is malformed (or its CRC is
 * wrong, if checked), SCAN_IO on a read error. why gets the reason. */
static int scan_batch(scan_t *s, uint64_t pos, bool check_crc, kiq_batch_loc_t *loc, char *why, size_t whyn)
{
    if (pos >= s->end) return SCAN_END;
    uint64_t left = s->end - pos;
    if (left < KIQ_BATCH_HEADER_SIZE) {
        snprintf(why, whyn, "%" PRIu64 " trailing bytes, less than a batch header", left);
        return SCAN_TORN;
    }
    const uint8_t *p = scan_at(s, pos, KIQ_BATCH_HEADER_SIZE);
    if (!p) return SCAN_IO;
    kiq_batch_header_t h;
    if (kiq_batch_header_parse(p, KIQ_BATCH_HEADER_SIZE, &h) < 0) {
        snprintf(why, whyn, "%s", kiq_error_get());
        return SCAN_BAD;
    }
    if (h.batch_length < KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_LOG_OVERHEAD) {
        snprintf(why, whyn, "batch length %" PRId32 " is below the header's", h.batch_length);
        return SCAN_BAD;
    }
    if (h.last_offset_delta < 0) {
        snprintf(why, whyn, "negative last offset delta %" PRId32, h.last_offset_delta);
        return SCAN_BAD;
    }
    uint64_t size = kiq_batch_size(&h);
    if (size > left) {
        snprintf(why, whyn, "batch of %" PRIu64 " bytes with only %" PRIu64 " left in the file", size, left);
        return SCAN_TORN;
    }
    if (check_crc) {
        /* Chunk by chunk: a batch may be larger than the buffer. */
        uint32_t crc = kiq_crc32c(0, p + KIQ_BATCH_POS_ATTRIBUTES, KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_POS_ATTRIBUTES);
        uint64_t at = pos + KIQ_BATCH_HEADER_SIZE, rest = size - KIQ_BATCH_HEADER_SIZE;
        while (rest > 0) {
            size_t n = rest < s->cap ? (size_t)rest : s->cap;
            const uint8_t *q = scan_at(s, at, n);
            if (!q) return SCAN_IO;
            crc = kiq_crc32c(crc, q, n);
            at += n;
            rest -= n;
        }
        if (crc != h.crc) {
            snprintf(why, whyn, "CRC 0x%08" PRIx32 " in the header, 0x%08" PRIx32 " computed", h.crc, crc);
            return SCAN_BAD;
        }
    }
    loc->position = pos;
    loc->size = (uint32_t)size;
    loc->base_offset = h.base_offset;
    loc->last_offset = kiq_batch_last_offset(&h);
    loc->max_timestamp = h.max_timestamp;
    return SCAN_OK;
}

/* ---- Lifecycle ---- */

static kiq_segment_t *segment_new(const char *dir, int64_t base_offset, const kiq_log_config_t *cfg, bool create)
{
    char path[PATH_MAX];
    kiq_segment_t *seg = calloc(1, sizeof *seg);
    if (!seg) {
        kiq_error_set("out of memory");
        return NULL;
    }
    atomic_init(&seg->refs, 1);
    seg->fd = -1;
    seg->oix.file.fd = seg->tix.file.fd = -1;
    seg->base_offset = base_offset;
    seg->next_offset = base_offset;
    seg->max_timestamp = -1;
    seg->offset_of_max_timestamp = base_offset;
    seg->index_interval = cfg->index_interval_bytes;
    if (kiq_log_segment_path(path, sizeof path, dir, base_offset, KIQ_LOG_SUFFIX) < 0) goto fail;
    seg->path = strdup(path);
    if (!seg->path) {
        kiq_error_set("out of memory");
        goto fail;
    }
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | (create ? O_EXCL : 0);
    do seg->fd = open(path, flags, 0644);
    while (seg->fd < 0 && errno == EINTR);
    if (seg->fd < 0) {
        kiq_error_errno("open %s", path);
        goto fail;
    }
    struct stat st;
    if (fstat(seg->fd, &st) < 0) {
        kiq_error_errno("stat %s", path);
        goto fail;
    }
    if ((uint64_t)st.st_size > SEGMENT_MAX_BYTES) {
        kiq_error_set("%s is %lld bytes, beyond the 2 GiB a segment may hold", path, (long long)st.st_size);
        goto fail;
    }
    seg->size = (uint64_t)st.st_size;
    if (kiq_log_segment_path(path, sizeof path, dir, base_offset, KIQ_INDEX_SUFFIX) < 0 ||
        kiq_offset_index_open(&seg->oix, path, base_offset, cfg->segment_index_bytes, create) < 0)
        goto fail;
    if (kiq_log_segment_path(path, sizeof path, dir, base_offset, KIQ_TIMEINDEX_SUFFIX) < 0 ||
        kiq_time_index_open(&seg->tix, path, base_offset, cfg->segment_index_bytes, create) < 0)
        goto fail;
    return seg;
fail:
    kiq_segment_unref(seg);
    return NULL;
}

kiq_segment_t *kiq_segment_create(const char *dir, int64_t base_offset, const kiq_log_config_t *cfg)
{
    return segment_new(dir, base_offset, cfg, true);
}

kiq_segment_t *kiq_segment_open(const char *dir, int64_t base_offset, const kiq_log_config_t *cfg,
                                bool full_scan, kiq_segment_recovery_t *rep)
{
    kiq_segment_t *seg = segment_new(dir, base_offset, cfg, false);
    if (!seg) return NULL;
    if (!full_scan && (kiq_offset_index_check(&seg->oix, seg->size) < 0 || kiq_time_index_check(&seg->tix) < 0)) {
        KIQ_WARN("%s; rebuilding the indexes of %s", kiq_error_get(), seg->path);
        full_scan = true;
    }
    kiq_segment_recovery_t local = {0};
    if (kiq_segment_recover(seg, !full_scan, rep ? rep : &local) < 0) {
        kiq_segment_unref(seg);
        return NULL;
    }
    return seg;
}

kiq_segment_t *kiq_segment_ref(kiq_segment_t *seg)
{
    atomic_fetch_add(&seg->refs, 1);
    return seg;
}

void kiq_segment_unref(kiq_segment_t *seg)
{
    if (!seg || atomic_fetch_sub(&seg->refs, 1) != 1) return;
    if (seg->fd >= 0) close(seg->fd);
    kiq_offset_index_close(&seg->oix);
    kiq_time_index_close(&seg->tix);
    free(seg->path);
    free(seg);
}

/* ---- Indexing ---- */

/* Accounts for a batch just appended or scanned at loc->position, in the
 * same way in both cases so a rebuilt index equals the one appends wrote. */
static void segment_account(kiq_segment_t *seg, const kiq_batch_loc_t *loc)
{
    if (loc->max_timestamp > seg->max_timestamp) {
        seg->max_timestamp = loc->max_timestamp;
        seg->offset_of_max_timestamp = loc->last_offset;
    }
    if (seg->bytes_since_index > (uint64_t)seg->index_interval) {
        /* A missing entry only makes lookups scan further; never fail the append for it. */
        if (!kiq_offset_index_full(&seg->oix) &&
            kiq_offset_index_append(&seg->oix, loc->last_offset, (uint32_t)loc->position) < 0)
            KIQ_WARN("index entry skipped: %s", kiq_error_get());
        if (!kiq_time_index_full(&seg->tix) &&
            kiq_time_index_maybe_append(&seg->tix, seg->max_timestamp, seg->offset_of_max_timestamp, false) < 0)
            KIQ_WARN("time index entry skipped: %s", kiq_error_get());
        seg->bytes_since_index = 0;
    }
    seg->bytes_since_index += loc->size;
    seg->next_offset = loc->last_offset + 1;
    seg->last = *loc;
}

/* The last batch, if it is known and still ends the segment. */
static const kiq_batch_loc_t *last_batch(const kiq_segment_t *seg)
{
    const kiq_batch_loc_t *l = &seg->last;
    return l->size && l->position + l->size == seg->size ? l : NULL;
}

bool kiq_segment_index_full(const kiq_segment_t *seg)
{
    return kiq_offset_index_full(&seg->oix) || kiq_time_index_full(&seg->tix);
}

/* ---- Recovery ---- */

static int cut_file(int fd, const char *path, uint64_t size)
{
    int rc;
    do rc = ftruncate(fd, (off_t)size);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) return kiq_error_errno("truncate %s to %" PRIu64 " bytes", path, size);
    return 0;
}

/* Batches lost by cutting at pos: the headers that still parse from there
 * (CRC unchecked, so the corrupt batch itself counts), plus one for an
 * unreadable remainder. More than one means good-looking batches followed
 * the bad one: a corruption in the middle, not a torn tail. */
static int64_t count_dropped(int fd, uint64_t pos, uint64_t end)
{
    uint8_t buf[LOOKUP_BUF];
    scan_t s = {.fd = fd, .end = end, .buf = buf, .cap = sizeof buf};
    char why[256];
    kiq_batch_loc_t loc;
    int64_t n = 0;
    for (;;) {
        int st = scan_batch(&s, pos, false, &loc, why, sizeof why);
        if (st == SCAN_END) return n;
        if (st != SCAN_OK) return n + 1;
        n++;
        pos += loc.size;
    }
}

/* Scans from `anchor` (the last offset index entry; NULL: from the start,
 * with the indexes already emptied) as described at kiq_segment_recover.
 * Returns 1 when the anchor proves untrustworthy: the caller then rescans
 * from the start, which is safe whatever this scan already cut. Returns 2
 * when the scan must be repeated from the same anchor (see below). */
static int segment_scan(kiq_segment_t *seg, const kiq_offset_entry_t *anchor, kiq_segment_recovery_t *rep)
{
    struct stat st;
    if (fstat(seg->fd, &st) < 0) return kiq_error_errno("stat %s", seg->path);
    uint64_t file_size = (uint64_t)st.st_size;
    uint64_t pos = anchor ? anchor->position : 0;
    if (pos >= file_size && anchor) return 1;
    scan_t s = {.fd = seg->fd, .end = file_size, .cap = RECOVER_BUF};
    s.buf = malloc(s.cap);
    if (!s.buf) return kiq_error_set("out of memory recovering %s", seg->path);

    /* Resume the accounting where the anchor entry left it: the entry was
     * added just before its batch, and the time index holds the largest
     * timestamp up to its last entry. */
    kiq_time_entry_t te;
    if (kiq_time_index_last(&seg->tix, &te)) {
        seg->max_timestamp = te.timestamp;
        seg->offset_of_max_timestamp = te.offset;
    } else {
        seg->max_timestamp = -1;
        seg->offset_of_max_timestamp = seg->base_offset;
    }
    seg->bytes_since_index = 0;
    seg->next_offset = seg->base_offset;
    seg->last = (kiq_batch_loc_t){0};

    char why[256] = "";
    int64_t n = 0;
    int st_scan;
    kiq_batch_loc_t loc;
    for (;;) {
        st_scan = scan_batch(&s, pos, true, &loc, why, sizeof why);
        if (st_scan != SCAN_OK) break;
        if (loc.base_offset < seg->next_offset || loc.last_offset - seg->base_offset > REL_OFFSET_MAX) {
            snprintf(why, sizeof why, "batch offsets %" PRId64 "..%" PRId64 " out of order (expected >= %" PRId64 ")",
                     loc.base_offset, loc.last_offset, seg->next_offset);
            st_scan = SCAN_BAD;
            break;
        }
        if (anchor && n == 0 && loc.last_offset != anchor->offset) {
            snprintf(why, sizeof why, "index names offset %" PRId64 " at %" PRIu64 ", the batch there ends at %" PRId64,
                     anchor->offset, pos, loc.last_offset);
            st_scan = SCAN_BAD;
            break;
        }
        segment_account(seg, &loc);
        pos += loc.size;
        n++;
    }
    free(s.buf);
    if (st_scan == SCAN_IO) return kiq_error_set("recovering %s: %s", seg->path, kiq_error_get());
    if (anchor && n == 0) {
        KIQ_WARN("%s: %s; rescanning the whole segment", seg->path, why);
        return 1;
    }
    if (pos < file_size) {
        int64_t dropped = count_dropped(seg->fd, pos, file_size);
        if (dropped > 1)
            KIQ_ERROR("%s: DATA LOSS: corrupt batch at offset %" PRId64 " (position %" PRIu64 "): %s; "
                      "truncating the log there drops %" PRIu64 " bytes in %" PRId64 " batches",
                      seg->path, seg->next_offset, pos, why, file_size - pos, dropped);
        else
            KIQ_WARN("%s: torn tail at offset %" PRId64 " (position %" PRIu64 "): %s; truncating %" PRIu64
                     " bytes after %" PRId64 " sound batches (scanned from position %" PRIu64 ")",
                     seg->path, seg->next_offset, pos, why, file_size - pos, n,
                     anchor ? (uint64_t)anchor->position : 0);
        if (cut_file(seg->fd, seg->path, pos) < 0) return -1;
        rep->bytes_truncated += file_size - pos;
        rep->batches_dropped += dropped;
        rep->truncated_at = seg->next_offset;
        if (dropped > 1) rep->corrupt_middle = true;
    }
    seg->size = pos;
    rep->batches += n;
    /* Entries past the cut (only possible after one) describe lost batches. */
    if (kiq_offset_index_truncate_position(&seg->oix, pos) < 0) return -1;
    if (kiq_time_index_last(&seg->tix, &te) && te.offset >= seg->next_offset) {
        /* Typically the final entry written at the last close, naming a
         * batch that is now cut off: the largest timestamp was seeded from
         * it, so keep only the entries the anchor vouches for and redo the
         * accounting from there. */
        if (kiq_time_index_truncate_offset(&seg->tix, anchor ? anchor->offset + 1 : seg->next_offset) < 0)
            return -1;
        if (anchor) return 2;
    }
    return 0;
}

int kiq_segment_recover(kiq_segment_t *seg, bool from_last_index, kiq_segment_recovery_t *rep)
{
    kiq_offset_entry_t last;
    if (from_last_index && kiq_offset_index_last(&seg->oix, &last)) {
        int rc = segment_scan(seg, &last, rep);
        if (rc == 2) {
            kiq_segment_recovery_t again = {0};
            rc = segment_scan(seg, &last, &again);
        }
        if (rc <= 0) return rc;
    }
    if (kiq_offset_index_reset(&seg->oix) < 0 || kiq_time_index_reset(&seg->tix) < 0) return -1;
    rep->index_rebuilt = true;
    return segment_scan(seg, NULL, rep);
}

/* ---- Appending ---- */

int kiq_segment_append(kiq_segment_t *seg, const uint8_t *batches, size_t len)
{
    if (len == 0) return 0;
    if (len > SEGMENT_MAX_BYTES || seg->size + len > SEGMENT_MAX_BYTES)
        return kiq_error_set("%s: appending %zu bytes would pass 2 GiB", seg->path, len);
    /* Check everything before writing anything: a rejected append leaves no trace. */
    kiq_batch_iter_t it;
    const uint8_t *b;
    size_t blen;
    kiq_batch_header_t h;
    int rc;
    int64_t next = seg->next_offset;
    kiq_batch_iter_init(&it, batches, len, false);
    while ((rc = kiq_batch_iter_next(&it, &b, &blen, &h)) == 1) {
        if (h.magic != KIQ_BATCH_MAGIC) return kiq_error_set("%s: only v2 batches can be stored", seg->path);
        if (h.last_offset_delta < 0 || h.base_offset < next ||
            kiq_batch_last_offset(&h) - seg->base_offset > REL_OFFSET_MAX)
            return kiq_error_set("%s: batch offsets %" PRId64 "..%" PRId64 " do not follow %" PRId64, seg->path,
                                 h.base_offset, kiq_batch_last_offset(&h), next - 1);
        next = kiq_batch_last_offset(&h) + 1;
    }
    if (rc < 0) return -1;

    /* An injected fault lets a prefix through, as a full disk tears a write. */
    int fault = 0;
    size_t allowed = kiq_log_dir_write_allowance(seg->log_dir, len, &fault);
    bool wrote = kiq_pwrite_full(seg->fd, batches, allowed, seg->size) == 0;
    if (!wrote || allowed < len) {
        int saved = wrote ? fault : errno;
        if (cut_file(seg->fd, seg->path, seg->size) < 0)
            KIQ_ERROR("%s: could not remove a partial write: %s", seg->path, kiq_error_get());
        errno = saved;
        kiq_error_errno("%s: append of %zu bytes failed", seg->path, len);
        kiq_log_dir_fail(seg->log_dir, saved, kiq_error_get());
        return -1;
    }
    kiq_batch_iter_init(&it, batches, len, false);
    while (kiq_batch_iter_next(&it, &b, &blen, &h) == 1) {
        kiq_batch_loc_t loc = {
            .position = seg->size + (uint64_t)(b - batches),
            .size = (uint32_t)blen,
            .base_offset = h.base_offset,
            .last_offset = kiq_batch_last_offset(&h),
            .max_timestamp = h.max_timestamp,
        };
        segment_account(seg, &loc);
    }
    seg->size += len;
    return 0;
}

/* ---- Lookups ---- */

int kiq_segment_walk(kiq_segment_t *seg, uint64_t position, int (*cb)(const kiq_batch_loc_t *loc, void *ctx),
                     void *ctx)
{
    return kiq_segment_walk_to(seg, position, seg->size, cb, ctx);
}

int kiq_segment_walk_to(kiq_segment_t *seg, uint64_t position, uint64_t end,
                        int (*cb)(const kiq_batch_loc_t *loc, void *ctx), void *ctx)
{
    const kiq_batch_loc_t *last = last_batch(seg);
    if (last && position == last->position && end >= seg->size) return cb(last, ctx); /* no read */
    uint8_t buf[LOOKUP_BUF];
    scan_t s = {.fd = seg->fd, .end = end < seg->size ? end : seg->size, .buf = buf, .cap = sizeof buf};
    char why[256];
    kiq_batch_loc_t loc;
    for (uint64_t pos = position;;) {
        int st = scan_batch(&s, pos, false, &loc, why, sizeof why);
        if (st == SCAN_END) return 0;
        if (st == SCAN_IO) return kiq_error_set("%s: %s", seg->path, kiq_error_get());
        if (st != SCAN_OK) return kiq_error_set("%s: %s at position %" PRIu64, seg->path, why, pos);
        int rc = cb(&loc, ctx);
        if (rc) return rc;
        pos += loc.size;
    }
}

/* A walk looking for the first batch that matches a key; on the caller's stack. */
typedef struct search {
    int64_t key;
    kiq_batch_loc_t *out;
} search_t;

static int ends_at_or_after(const kiq_batch_loc_t *loc, void *ctx)
{
    search_t *s = ctx;
    if (loc->last_offset < s->key) return 0;
    *s->out = *loc;
    return 1;
}

static int reaches_time(const kiq_batch_loc_t *loc, void *ctx)
{
    search_t *s = ctx;
    if (loc->max_timestamp < s->key) return 0;
    *s->out = *loc;
    return 1;
}

int kiq_segment_find(kiq_segment_t *seg, int64_t offset, kiq_batch_loc_t *out)
{
    if (offset >= seg->next_offset) return 0;
    const kiq_batch_loc_t *last = last_batch(seg);
    if (last && offset >= last->base_offset) {
        /* at the tail: the batch holding it is the last one */
        *out = *last;
        return 1;
    }
    kiq_offset_entry_t e;
    kiq_offset_index_lookup(&seg->oix, offset, &e);
    search_t s = {offset, out};
    return kiq_segment_walk(seg, e.position, ends_at_or_after, &s);
}

int kiq_segment_find_time(kiq_segment_t *seg, int64_t ts, kiq_batch_loc_t *out)
{
    if (seg->size == 0 || seg->max_timestamp < ts) return 0;
    /* Everything up to the time entry's offset is older than ts: start at
     * the batch holding that offset (it is itself older, and skipped). */
    kiq_time_entry_t te;
    kiq_offset_entry_t e = {seg->base_offset, 0};
    if (kiq_time_index_lookup(&seg->tix, ts, &te)) kiq_offset_index_lookup(&seg->oix, te.offset, &e);
    search_t s = {ts, out};
    return kiq_segment_walk(seg, e.position, reaches_time, &s);
}

int kiq_segment_whole_within(kiq_segment_t *seg, uint64_t bytes, uint64_t *position, int64_t *next_offset)
{
    /* From the next to last index entry inside the bytes left: its batch
     * ends before the last one starts, so it is whole and tells where the
     * offsets stand. */
    size_t lo = 0, hi = seg->oix.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (seg->oix.slots[mid].pos < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint64_t pos = lo >= 2 ? seg->oix.slots[lo - 2].pos : 0;
    int64_t next = seg->base_offset;
    uint8_t buf[LOOKUP_BUF];
    scan_t s = {.fd = seg->fd, .end = bytes < seg->size ? bytes : seg->size, .buf = buf, .cap = sizeof buf};
    char why[256];
    kiq_batch_loc_t loc;
    int st;
    while ((st = scan_batch(&s, pos, false, &loc, why, sizeof why)) == SCAN_OK) {
        pos += loc.size;
        next = loc.last_offset + 1;
    }
    if (st == SCAN_IO) return kiq_error_set("%s: %s", seg->path, kiq_error_get());
    *position = pos;
    *next_offset = next;
    return 0;
}

int kiq_segment_read(const kiq_segment_t *seg, uint64_t position, void *dst, size_t len)
{
    if (position > seg->size || len > seg->size - position)
        return kiq_error_set("%s: read of %zu bytes at %" PRIu64 " is outside its %" PRIu64 " bytes", seg->path, len,
                             position, seg->size);
    ssize_t r = kiq_pread_full(seg->fd, dst, len, position);
    if (r < 0) return kiq_error_set("%s: %s", seg->path, kiq_error_get());
    if ((size_t)r < len) return kiq_error_set("%s is shorter than expected", seg->path);
    return 0;
}

int kiq_segment_truncate_to(kiq_segment_t *seg, int64_t offset)
{
    kiq_batch_loc_t loc;
    int rc = kiq_segment_find(seg, offset, &loc);
    if (rc <= 0) return rc;
    return kiq_segment_truncate_at(seg, loc.position, loc.base_offset);
}

int kiq_segment_truncate_at(kiq_segment_t *seg, uint64_t position, int64_t offset)
{
    if (cut_file(seg->fd, seg->path, position) < 0) return -1;
    seg->size = position;
    if (kiq_offset_index_truncate_position(&seg->oix, position) < 0 ||
        kiq_time_index_truncate_offset(&seg->tix, offset) < 0)
        return -1;
    /* Rescanning the (short) tail recomputes next offset, largest timestamp
     * and the index spacing for the appends that follow. */
    kiq_segment_recovery_t rep = {0};
    return kiq_segment_recover(seg, true, &rep);
}

/* ---- Durability and teardown ---- */

int kiq_segment_sync(kiq_segment_t *seg)
{
    int fault = kiq_log_dir_sync_fault(seg->log_dir);
    if (fault) errno = fault;
    if (fault || fdatasync(seg->fd) < 0) {
        int saved = errno;
        kiq_error_errno("fdatasync %s", seg->path);
        kiq_log_dir_fail(seg->log_dir, saved, kiq_error_get());
        return -1;
    }
    if (kiq_offset_index_sync(&seg->oix) < 0 || kiq_time_index_sync(&seg->tix) < 0) {
        kiq_log_dir_fail(seg->log_dir, errno, kiq_error_get());
        return -1;
    }
    return 0;
}

/* Kafka's final time index entry, so the file alone tells the segment's
 * largest timestamp. */
static int segment_finish_indexes(kiq_segment_t *seg)
{
    if (seg->size > 0 &&
        kiq_time_index_maybe_append(&seg->tix, seg->max_timestamp, seg->offset_of_max_timestamp, true) < 0)
        return -1;
    if (kiq_offset_index_trim(&seg->oix) < 0 || kiq_time_index_trim(&seg->tix) < 0) return -1;
    return 0;
}

int kiq_segment_seal(kiq_segment_t *seg)
{
    if (segment_finish_indexes(seg) < 0) return -1;
    return kiq_segment_sync(seg);
}

void kiq_segment_close(kiq_segment_t *seg)
{
    if (!seg) return;
    if (!seg->deleted && segment_finish_indexes(seg) < 0)
        KIQ_WARN("%s: closing: %s (the indexes are rebuilt on the next open)", seg->path, kiq_error_get());
    kiq_segment_unref(seg);
}

int kiq_segment_delete(kiq_segment_t *seg)
{
    int rc = 0;
    if (unlink(seg->path) < 0 && errno != ENOENT) rc = kiq_error_errno("unlink %s", seg->path);
    if (kiq_index_file_unlink(&seg->oix.file) < 0 || kiq_index_file_unlink(&seg->tix.file) < 0) rc = -1;
    /* its aborted transactions go with it (log/txn_index.h) */
    char txn[PATH_MAX];
    size_t stem = strlen(seg->path) - strlen(KIQ_LOG_SUFFIX);
    if (snprintf(txn, sizeof txn, "%.*s%s", (int)stem, seg->path, KIQ_TXNINDEX_SUFFIX) < (int)sizeof txn &&
        unlink(txn) < 0 && errno != ENOENT)
        rc = kiq_error_errno("unlink %s", txn);
    seg->deleted = true;
    kiq_segment_unref(seg);
    return rc;
}
