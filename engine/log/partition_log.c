/* A partition's log: opening it (recovery), appending, flushing, the
 * producers' and transactions' state, truncation; reading, health and
 * retention are in partition_log_{read,health,retention}.c. */
#include "log/partition_log_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "log/damaged_ranges.h"
#include "log/data_loss.h"
#include "log/file_io.h"
#include "log/leader_epoch_cache.h"
#include "log/log_names.h"
#include "log/producer_state.h"
#include "log/txn_index.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"

static int push_segment(kiq_partition_log_t *l, kiq_segment_t *seg)
{
    if (l->nsegs == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        kiq_segment_t **p = realloc(l->segs, cap * sizeof *p);
        if (!p) return kiq_error_set("out of memory");
        l->segs = p;
        l->cap = cap;
    }
    seg->log_dir = l->log_dir;
    l->segs[l->nsegs++] = seg;
    return 0;
}

/* ---- Opening ---- */

static bool has_base(const int64_t *bases, size_t n, int64_t base)
{
    return bsearch(&base, bases, n, sizeof *bases, kiq_log_cmp_offsets) != NULL;
}

/* Index files found without their .log. The broker deletes segments only
 * at either end of a log, the .log first: such a file between two
 * segments means a .log deleted under it; one past the last that names
 * offsets means the same, unless a crash cut a truncation short between
 * two unlinks. -1: none. */
typedef struct orphans {
    int64_t lo, hi;   /* the lowest and highest base offsets between segments */
    int64_t tail;     /* the highest past the last segment */
    int64_t tail_end; /* the offset after the highest one its indexes name */
} orphans_t;

/* The base offsets of the .log files in dir, sorted; index files without
 * their .log (left by a crash while a segment was created or deleted) are
 * removed, and told in *o. */
static int list_segments(const char *dir, int64_t **bases_out, size_t *n_out, orphans_t *o)
{
    *o = (orphans_t){-1, -1, -1, -1};
    if (kiq_log_segment_bases(dir, KIQ_LOG_SUFFIX, bases_out, n_out) != 0) return -1;
    DIR *d = opendir(dir);
    if (!d) {
        free(*bases_out);
        return kiq_error_errno("open directory %s", dir);
    }
    struct dirent *e;
    int64_t base;
    const int64_t *bases = *bases_out;
    const size_t n = *n_out;
    while ((e = readdir(d))) {
        if ((kiq_log_segment_name_parse(e->d_name, KIQ_INDEX_SUFFIX, &base) ||
             kiq_log_segment_name_parse(e->d_name, KIQ_TIMEINDEX_SUFFIX, &base) ||
             kiq_log_segment_name_parse(e->d_name, KIQ_TXNINDEX_SUFFIX, &base)) &&
            !has_base(bases, n, base)) {
            KIQ_WARN("%s/%s has no log file; removing it", dir, e->d_name);
            if (n > 1 && base > bases[0] && base < bases[n - 1]) {
                if (o->lo < 0 || base < o->lo) o->lo = base;
                if (base > o->hi) o->hi = base;
            } else if ((n == 0 || base > bases[n - 1]) && base >= o->tail) {
                char path[PATH_MAX];
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                int64_t end = kiq_log_segment_name_parse(e->d_name, KIQ_INDEX_SUFFIX, &base)
                                  ? kiq_offset_index_file_end(path, base)
                                  : base;
                if (base > o->tail) o->tail_end = base;
                o->tail = base;
                if (end > o->tail_end) o->tail_end = end;
            }
            if (unlinkat(dirfd(d), e->d_name, 0) < 0) KIQ_WARN("unlink %s/%s: %s", dir, e->d_name, strerror(errno));
        }
    }
    closedir(d);
    return 0;
}


/* Completes or undoes what a crash interrupted in the cleaner (see
 * KIQ_SWAP_SUFFIX) or in restoring a segment file: a .cleaned or
 * .restored file may be partial and goes; a .swap file
 * is whole, so it replaces its segment, whose indexes are removed first
 * (they describe the old file and are rebuilt). */
static int finish_cleaning(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return kiq_error_errno("open directory %s", dir);
    struct dirent *e;
    int64_t base;
    bool changed = false;
    char path[PATH_MAX], to[PATH_MAX];
    while ((e = readdir(d))) {
        if (kiq_log_segment_name_parse(e->d_name, KIQ_CLEANED_SUFFIX, &base) ||
            kiq_log_segment_name_parse(e->d_name, KIQ_PL_RESTORED_SUFFIX, &base)) {
            KIQ_WARN("%s/%s: removing an unfinished copy", dir, e->d_name);
            if (unlinkat(dirfd(d), e->d_name, 0) < 0) KIQ_WARN("unlink %s/%s: %s", dir, e->d_name, strerror(errno));
            changed = true;
        } else if (kiq_log_segment_name_parse(e->d_name, KIQ_SWAP_SUFFIX, &base)) {
            KIQ_WARN("%s/%s: finishing an interrupted segment swap", dir, e->d_name);
            if (kiq_log_segment_path(path, sizeof path, dir, base, KIQ_INDEX_SUFFIX) == 0) unlink(path);
            if (kiq_log_segment_path(path, sizeof path, dir, base, KIQ_TIMEINDEX_SUFFIX) == 0) unlink(path);
            if (kiq_log_segment_path(path, sizeof path, dir, base, KIQ_SWAP_SUFFIX) < 0 ||
                kiq_log_segment_path(to, sizeof to, dir, base, KIQ_LOG_SUFFIX) < 0) {
                closedir(d);
                return -1;
            }
            if (rename(path, to) < 0) {
                closedir(d);
                return kiq_error_errno("rename %s to %s", path, to);
            }
            changed = true;
        }
    }
    closedir(d);
    return changed ? kiq_fsync_dir(dir) : 0;
}

static void log_release(kiq_partition_log_t *l)
{
    kiq_leader_epoch_cache_free(l->epochs);
    kiq_producer_state_free(l->producers);
    kiq_txn_index_free(l->aborted);
    kiq_damaged_ranges_free(&l->damaged);
    pthread_mutex_destroy(&l->mu);
    free(l->segs);
    free(l->dir);
    free(l);
}

/* Segments from this index on are rescanned from their start at open. */
static size_t first_to_scan(const int64_t *bases, size_t n, const kiq_log_config_t *cfg, int64_t recovery_point)
{
    if (cfg->clean_shutdown || n == 0) return n;
    if (recovery_point < 0) return n - 1;
    size_t k = 0;
    while (k + 1 < n && bases[k + 1] <= recovery_point) k++;
    return k;
}

/* Under construction: a segment other than the last was cut short by
 * recovery, so the segments after it (from index `from`) follow a gap and
 * are deleted; the loss is reported loudly. */
static void drop_after_corruption(kiq_partition_log_t *l, const int64_t *bases, size_t from, size_t n)
{
    uint64_t bytes = 0;
    for (size_t i = from; i < n; i++) {
        static const char *const suffixes[] = {KIQ_LOG_SUFFIX, KIQ_INDEX_SUFFIX, KIQ_TIMEINDEX_SUFFIX,
                                               KIQ_TXNINDEX_SUFFIX};
        for (size_t j = 0; j < sizeof suffixes / sizeof *suffixes; j++) {
            char path[PATH_MAX];
            struct stat st;
            if (kiq_log_segment_path(path, sizeof path, l->dir, bases[i], suffixes[j]) < 0) continue;
            if (j == 0 && stat(path, &st) == 0) bytes += (uint64_t)st.st_size;
            if (unlink(path) < 0 && errno != ENOENT) KIQ_WARN("unlink %s: %s", path, strerror(errno));
        }
    }
    KIQ_ERROR("%s: DATA LOSS: the log is truncated at offset %" PRId64 " after a corrupt batch; %zu later "
              "segment(s) (from offset %" PRId64 ", %" PRIu64 " bytes) are deleted",
              l->dir, kiq_pl_active(l)->next_offset, n - from, bases[from], bytes);
    if (kiq_fsync_dir(l->dir) < 0) KIQ_WARN("%s: %s", l->dir, kiq_error_get());
}

/* Records that offsets [from, to) are lost (data_loss.h): in the partition
 * directory, where it keeps the partition marked until an operator
 * acknowledges it, and in the log. Logged once per range found. Under the
 * mutex, or before the log is shared. */
void kiq_pl_note_loss(kiq_partition_log_t *l, int64_t from, int64_t to, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int rc = kiq_data_loss_record(l->dir, from, to, why, &l->loss);
    if (rc == 0) return;
    KIQ_ERROR("%s: DATA LOSS of offsets %" PRId64 "..%" PRId64 ": %s; the partition stays marked until "
              "`kafkaiq verify --acknowledge %s`", l->dir, from, to - 1, why, l->dir);
    if (rc > 0) return;
    KIQ_ERROR("%s: the data loss is not recorded on disk: %s", l->dir, kiq_error_get());
    if (l->loss.findings == 0) {
        l->loss = (kiq_data_loss_t){.from = from, .to = to, .at_ms = kiq_clock_wall_ms(), .findings = 1};
        snprintf(l->loss.why, sizeof l->loss.why, "%s", why);
    }
}

/* Before the log is shared: the aborted transactions of the segments
 * there are, from their .txnindex files. */
static int load_aborted(kiq_partition_log_t *l)
{
    int64_t *bases = malloc(l->nsegs * sizeof *bases);
    if (!bases) return kiq_error_set("out of memory");
    for (size_t i = 0; i < l->nsegs; i++) bases[i] = l->segs[i]->base_offset;
    int rc = kiq_txn_index_load(l->aborted, bases, l->nsegs);
    free(bases);
    kiq_txn_index_drop_below(l->aborted, l->start_offset);
    return rc;
}

kiq_partition_log_t *kiq_partition_log_open(const char *dir, const kiq_log_config_t *cfg)
{
    return kiq_partition_log_open_at(dir, cfg, -1);
}

kiq_partition_log_t *kiq_partition_log_open_at(const char *dir, const kiq_log_config_t *cfg, int64_t recovery_point)
{
    if (kiq_log_config_check(cfg) < 0 || kiq_mkdir_p(dir) < 0) return NULL;
    kiq_partition_log_t *l = calloc(1, sizeof *l);
    if (!l) {
        kiq_error_set("out of memory");
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    l->cfg = *cfg;
    l->segment_ms = l->retention_ms = l->retention_bytes = -1;
    l->active_first_ts = KIQ_PL_UNKNOWN_TS;
    l->active_jitter = -1;
    l->unflushed_since = -1;
    l->flush_messages = l->flush_ms = INT64_MAX;
    l->dir = strdup(dir);
    l->producers = kiq_producer_state_new();
    l->epochs = kiq_leader_epoch_cache_new();
    l->aborted = kiq_txn_index_new(dir);
    l->first_unstable = -1;
    if (!l->dir || !l->producers || !l->epochs || !l->aborted) {
        kiq_error_set("out of memory");
        log_release(l);
        return NULL;
    }
    int rc = kiq_data_loss_load(dir, &l->loss);
    if (rc < 0) { /* an unreadable record marks all the same */
        l->loss = (kiq_data_loss_t){.from = -1, .to = -1, .at_ms = -1, .findings = 1};
        snprintf(l->loss.why, sizeof l->loss.why, "%s", kiq_error_get());
    }
    if (rc != 0)
        KIQ_ERROR("%s: data loss not acknowledged: offsets %" PRId64 "..%" PRId64 ": %s (%d finding(s); "
                  "`kafkaiq verify --acknowledge %s` once dealt with)", dir, l->loss.from, l->loss.to - 1,
                  l->loss.why, l->loss.findings, dir);
    int64_t *bases = NULL;
    size_t n = 0;
    orphans_t orphans;
    if (finish_cleaning(dir) < 0 || list_segments(dir, &bases, &n, &orphans) < 0) {
        log_release(l);
        return NULL;
    }
    size_t scan_from = first_to_scan(bases, n, cfg, recovery_point);
    if (scan_from + 1 < n)
        KIQ_INFO("%s: recovering %zu segments from the recovery point %" PRId64, dir, n - scan_from, recovery_point);
    for (size_t i = 0; i < n; i++) {
        bool last = i + 1 == n;
        uint64_t cut_before = l->recovery.bytes_truncated;
        kiq_segment_t *seg = kiq_segment_open(dir, bases[i], cfg, i >= scan_from, &l->recovery);
        if (!seg || push_segment(l, seg) < 0) {
            kiq_segment_unref(seg);
            goto fail;
        }
        if (!last && l->recovery.bytes_truncated > cut_before) {
            if (i >= scan_from) { /* not flushed: what follows cannot be durable either (Kafka's rule) */
                l->recovery.corrupt_middle = true;
                drop_after_corruption(l, bases, i + 1, n);
                break;
            }
            /* flushed once whole, so cut by something else: the segments
             * after it are kept, and the log skips what is gone */
            kiq_pl_note_loss(l, seg->next_offset, bases[i + 1], "%s was found cut at offset %" PRId64 " at open", seg->path,
                      seg->next_offset);
        }
        if (i > 0 && bases[i - 1] < orphans.hi && orphans.hi < bases[i])
            kiq_pl_note_loss(l, orphans.lo, seg->base_offset, "segment file %020" PRId64 "%s is missing (its index files "
                      "were left)", orphans.lo, KIQ_LOG_SUFFIX);
        if (i > 0 && l->segs[i - 1]->next_offset > seg->base_offset)
            KIQ_WARN("%s: segment %" PRId64 " overlaps the previous one, which ends at %" PRId64, dir,
                     seg->base_offset, l->segs[i - 1]->next_offset);
    }
    if (n == 0) {
        kiq_segment_t *seg = kiq_segment_create(dir, 0, cfg);
        if (!seg || push_segment(l, seg) < 0) {
            kiq_segment_unref(seg);
            goto fail;
        }
        if (kiq_fsync_dir(dir) < 0) goto fail;
    }
    free(bases);
    l->start_offset = l->segs[0]->base_offset;
    /* Flushed up to the checkpoint once, now ending short of it: a segment
     * deleted or cut outside the broker. Never silent. */
    if (recovery_point > kiq_pl_active(l)->next_offset)
        kiq_pl_note_loss(l, kiq_pl_active(l)->next_offset, recovery_point, "the log ends at offset %" PRId64 " but was flushed up "
                  "to %" PRId64 " (recovery-point-offset-checkpoint): a segment file is missing or was cut outside "
                  "the broker", kiq_pl_active(l)->next_offset, recovery_point);
    else if (orphans.tail >= kiq_pl_active(l)->next_offset && orphans.tail_end > orphans.tail)
        /* (empty ones tell of no record) */
        kiq_pl_note_loss(l, orphans.tail, orphans.tail_end, "segment file %020" PRId64 "%s is missing (its index files "
                  "were left, naming offsets up to %" PRId64 ")", orphans.tail, KIQ_LOG_SUFFIX, orphans.tail_end - 1);
    /* What recovery left is what the disk holds now. */
    l->recovery_point = kiq_pl_active(l)->next_offset;
    if (load_aborted(l) < 0) goto fail_loaded;
    kiq_pl_rebuild_producers(l, !cfg->clean_shutdown);
    kiq_pl_load_epochs(l);
    l->high_watermark = kiq_pl_active(l)->next_offset;
    KIQ_DEBUG("opened %s: %zu segments, offsets %" PRId64 "..%" PRId64, dir, l->nsegs, l->start_offset,
              kiq_pl_active(l)->next_offset);
    return l;
fail:
    free(bases);
fail_loaded:
    for (size_t i = 0; i < l->nsegs; i++) kiq_segment_unref(l->segs[i]);
    log_release(l);
    return NULL;
}

void kiq_partition_log_free(kiq_partition_log_t *l)
{
    if (!l) return;
    /* An offline directory is not trusted with more writes: recovery
     * checks what reached it on the next open. */
    if (!kiq_log_dir_offline(l->log_dir)) {
        if (kiq_segment_sync(kiq_pl_active(l)) < 0) KIQ_WARN("closing %s: %s", l->dir, kiq_error_get());
        /* the next open then reads no batch headers at all */
        if (kiq_producer_state_count(l->producers) > 0 &&
            kiq_producer_state_write_snapshot(l->producers, l->dir, kiq_pl_active(l)->next_offset) < 0)
            KIQ_WARN("closing %s: producer state snapshot: %s", l->dir, kiq_error_get());
        kiq_pl_save_epochs(l);
    }
    for (size_t i = 0; i < l->nsegs; i++) kiq_segment_close(l->segs[i]);
    log_release(l);
}

int kiq_partition_log_delete(kiq_partition_log_t *l)
{
    int rc = 0;
    for (size_t i = 0; i < l->nsegs; i++)
        if (kiq_segment_delete(l->segs[i]) < 0) rc = -1;
    /* Whatever else lives there (checkpoints, snapshots) goes too. */
    DIR *d = opendir(l->dir);
    if (!d) {
        rc = kiq_error_errno("open directory %s", l->dir);
    } else {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            if (unlinkat(dirfd(d), e->d_name, 0) < 0) rc = kiq_error_errno("unlink %s/%s", l->dir, e->d_name);
        }
        closedir(d);
        if (rmdir(l->dir) < 0) rc = kiq_error_errno("rmdir %s", l->dir);
    }
    log_release(l);
    return rc;
}

/* ---- Flushing ---- */

int64_t kiq_partition_log_now_ms(void) { return kiq_clock_mono_ms(); }

int kiq_pl_flush_locked(kiq_partition_log_t *l, kiq_log_flush_t *done)
{
    kiq_log_flush_t f = {l->recovery_point, kiq_pl_active(l)->next_offset, kiq_clock_mono_ns(), 0, -1};
    if (kiq_segment_sync(kiq_pl_active(l)) < 0) return -1;
    f.ended_ns = kiq_clock_mono_ns();
    if (done) *done = f;
    l->recovery_point = f.to;
    l->unflushed = 0;
    l->unflushed_since = -1;
    l->flushes++;
    return 0;
}

/* ---- Appending ---- */

/* Makes a fresh active segment at the LEO; the old one is sealed first so
 * that only the active segment ever needs a full recovery scan. */
int kiq_pl_roll(kiq_partition_log_t *l)
{
    kiq_segment_t *old = kiq_pl_active(l);
    if (kiq_segment_seal(old) < 0) return -1;
    kiq_segment_t *seg = kiq_segment_create(l->dir, old->next_offset, &l->cfg);
    if (!seg) return -1;
    if (push_segment(l, seg) < 0) {
        kiq_segment_delete(seg);
        return -1;
    }
    if (kiq_fsync_dir(l->dir) < 0) KIQ_WARN("rolling %s: %s", l->dir, kiq_error_get());
    l->active_first_ts = KIQ_PL_UNKNOWN_TS;
    l->active_jitter = -1;
    /* Sealing synced everything before the new segment. */
    if (old->next_offset > l->recovery_point) l->recovery_point = old->next_offset;
    l->unflushed = 0;
    l->unflushed_since = -1;
    /* Kafka snapshots at each roll too: a restart after a crash then reads
     * the headers of the last segment only. */
    if (kiq_producer_state_count(l->producers) > 0 &&
        kiq_producer_state_write_snapshot(l->producers, l->dir, seg->base_offset) < 0)
        KIQ_WARN("rolling %s: producer state snapshot: %s", l->dir, kiq_error_get());
    KIQ_DEBUG("%s: rolled to segment %" PRId64 " (previous: %" PRIu64 " bytes)", l->dir, seg->base_offset,
              old->size);
    return 0;
}

static int first_batch_ts(const kiq_batch_loc_t *loc, void *ctx)
{
    *(int64_t *)ctx = loc->max_timestamp;
    return 1;
}

/* A random jitter below jitter_ms and segment_ms (Kafka's
 * randomSegmentJitter); 0 when there is none. */
static int64_t draw_jitter(int64_t jitter_ms, int64_t segment_ms)
{
    int64_t bound = jitter_ms < segment_ms ? jitter_ms : segment_ms;
    uint64_t r;
    if (bound <= 0 || getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) return 0;
    return (int64_t)(r % (uint64_t)bound);
}

/* Whether an append whose newest timestamp is max_ts must roll first by
 * segment.ms less the segment's jitter; under the mutex, the active
 * segment not empty. */
static bool time_to_roll(kiq_partition_log_t *l, int64_t max_ts)
{
    if (l->segment_ms < 0 || max_ts < 0) return false;
    if (l->active_first_ts == KIQ_PL_UNKNOWN_TS) {
        int64_t ts = -1;
        if (kiq_segment_walk(kiq_pl_active(l), 0, first_batch_ts, &ts) < 0) return false;
        l->active_first_ts = ts;
    }
    if (l->active_jitter < 0) l->active_jitter = draw_jitter(l->segment_jitter_ms, l->segment_ms);
    return l->active_first_ts >= 0 && max_ts - l->active_first_ts > l->segment_ms - l->active_jitter;
}

/* Under the mutex: writes batches whose offsets first..last are assigned
 * (increasing, from the LEO on) to the active segment, rolling first when
 * it is full by size, index, relative offsets or segment.ms. 0, or -1
 * with the log unchanged. */
static int write_batches(kiq_partition_log_t *l, const uint8_t *batches, size_t len, int64_t first, int64_t last,
                         int64_t max_ts, kiq_log_append_result_t *res)
{
    if (last - first > INT32_MAX)
        return kiq_error_set("%s: append spans %" PRId64 " offsets, more than a segment can index", l->dir,
                             last - first + 1);
    kiq_segment_t *seg = kiq_pl_active(l);
    bool rolled = false;
    if (seg->size > 0 && (seg->size + len > (uint64_t)l->cfg.segment_bytes || kiq_segment_index_full(seg) ||
                          last - seg->base_offset > INT32_MAX || time_to_roll(l, max_ts))) {
        if (kiq_pl_roll(l) < 0) return -1;
        seg = kiq_pl_active(l);
        rolled = true;
    }
    res->segment_base = seg->base_offset;
    res->position = (int64_t)seg->size;
    if (kiq_segment_append(seg, batches, len) < 0) {
        /* Leave no empty segment behind: the previous one is active again. */
        if (rolled) {
            char why[512];
            snprintf(why, sizeof why, "%s", kiq_error_get());
            l->nsegs--;
            kiq_segment_delete(seg);
            kiq_error_set("%s", why);
        }
        return -1;
    }
    if (seg->size == len) l->active_first_ts = KIQ_PL_UNKNOWN_TS;
    return 0;
}

/* Under the mutex, after an append of `messages` offsets: the flush
 * flush.messages asks for. 0 or -1 (the fsync failed). */
static int count_unflushed(kiq_partition_log_t *l, int64_t messages, kiq_log_append_result_t *res)
{
    if (l->unflushed == 0) l->unflushed_since = kiq_partition_log_now_ms();
    l->unflushed += messages;
    if (l->unflushed < l->flush_messages) return 0;
    res->flushed = true;
    int rc = kiq_pl_flush_locked(l, &res->flush);
    res->flush.messages = l->flush_messages;
    return rc;
}

/* What an append reports before it did anything. */
static void result_init(kiq_log_append_result_t *res)
{
    *res = (kiq_log_append_result_t){.base_offset = -1, .last_offset = -1, .timestamp = -1, .segment_base = -1,
                                     .position = -1, .written_ns = -1, .txn_first_offset = -1, .txn_producer = -1};
}

/* Under the mutex, after a leader's batches first..last were written at
 * leader_epoch: the epoch cache, the watch, and the flush flush.messages
 * asks for. 0 or -1 (the fsync failed). */
static int appended(kiq_partition_log_t *l, int32_t leader_epoch, int64_t first, int64_t last,
                    const kiq_log_append_watch_t *watch, kiq_log_append_result_t *res)
{
    /* Every batch of the append has this epoch: it starts at the first
     * one if it is new. */
    if (kiq_pl_assign_epoch(l, leader_epoch, first)) kiq_pl_save_epochs(l);
    l->last_epoch = leader_epoch;
    res->base_offset = first;
    res->last_offset = last;
    res->written_ns = kiq_clock_mono_ns();
    /* told before the fsync: the append's time is not the fsync's */
    if (watch) {
        const kiq_segment_t *seg = kiq_pl_active(l);
        res->segment_path = seg->base_offset == res->segment_base ? seg->path : NULL;
        watch->appended(watch->ctx, res);
        res->segment_path = NULL;
    }
    return count_unflushed(l, last - first + 1, res);
}

/* Producer entries an append changes, committed to the table only once
 * its batches are written; a later batch of the same append is checked
 * against the earlier ones. On the appending thread's stack. */
#define PENDING_LOCAL 4
typedef struct pending {
    kiq_producer_entry_t local[PENDING_LOCAL];
    kiq_producer_entry_t *e; /* local, or malloc'd when more producers come */
    size_t n, cap;
} pending_t;

static kiq_producer_entry_t *pending_find(pending_t *p, int64_t producer_id)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->e[i].producer_id == producer_id) return &p->e[i];
    return NULL;
}

static kiq_producer_entry_t *pending_add(pending_t *p, const kiq_producer_entry_t *e)
{
    if (p->n == p->cap) {
        size_t cap = p->cap * 2;
        kiq_producer_entry_t *n = p->e == p->local ? malloc(cap * sizeof *n) : realloc(p->e, cap * sizeof *n);
        if (!n) return NULL;
        if (p->e == p->local) memcpy(n, p->local, sizeof p->local);
        p->e = n;
        p->cap = cap;
    }
    p->e[p->n] = *e;
    return &p->e[p->n++];
}

/* Under the mutex: checks the batch h (its offsets assigned) of an
 * idempotent producer against the state plus what this append already
 * did, and records it in pend. 0 (res->duplicate may be set), a Kafka
 * error code, or -1. */
/* Under l->mu: whether the directory takes no appends now (offline, or
 * full until there is room), the reason set. */
static bool refuses_appends(kiq_partition_log_t *l)
{
    if (kiq_log_dir_writable(l->log_dir)) return false;
    int full = kiq_log_dir_full(l->log_dir);
    if (full)
        kiq_error_set("%s: log directory %s is full (%s)", l->dir, kiq_log_dir_path(l->log_dir), strerror(full));
    else
        kiq_error_set("%s: log directory %s is offline", l->dir, kiq_log_dir_path(l->log_dir));
    return true;
}

static int check_producer(kiq_partition_log_t *l, pending_t *pend, const kiq_batch_header_t *h, uint64_t txn_guard,
                          kiq_log_append_result_t *res)
{
    kiq_producer_entry_t *pe = pending_find(pend, h->producer_id);
    const kiq_producer_entry_t *cur = pe ? pe : kiq_producer_state_get(l->producers, h->producer_id);
    if (txn_guard && kiq_batch_is_transactional(h) &&
        !(cur && cur->epoch == h->producer_epoch && cur->txn_first_offset >= 0) &&
        !kiq_producer_state_guard_holds(l->producers, h->producer_id, txn_guard)) {
        kiq_error_set("%s: the transaction of producer %" PRId64 " epoch %d ended while its coordinator was asked "
                      "about its first records here", l->dir, h->producer_id, h->producer_epoch);
        return KIQ_ERR_INVALID_TXN_STATE;
    }
    bool dup;
    kiq_producer_batch_t orig;
    int err = kiq_producer_entry_check(cur, h, &dup, &orig);
    if (err == KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER && cur->epoch == h->producer_epoch) {
        /* the missing batch was refused here a moment ago: this one waits
         * for it the same way (producer_state.h) */
        int32_t missing = kiq_producer_entry_next_seq(cur);
        int16_t again = kiq_producer_state_refused(l->producers, h->producer_id, h->producer_epoch, missing,
                                                   kiq_clock_mono_ns());
        if (again) {
            kiq_error_set("%s: producer %" PRId64 " epoch %d: its batch at sequence %" PRId32
                          " was refused here a moment ago (error %d); it must come before sequence %" PRId32,
                          l->dir, h->producer_id, h->producer_epoch, missing, again, h->base_sequence);
            return again;
        }
    }
    if (err) return err;
    if (dup) {
        res->duplicate = true;
        res->base_offset = orig.first_offset;
        res->last_offset = orig.last_offset;
        res->timestamp = orig.timestamp;
        return 0;
    }
    if (!pe) {
        kiq_producer_entry_t fresh;
        if (cur)
            fresh = *cur;
        else
            kiq_producer_entry_init(&fresh, h->producer_id, h->producer_epoch);
        if (!(pe = pending_add(pend, &fresh))) return kiq_error_set("out of memory");
    }
    kiq_producer_entry_update(pe, h);
    return 0;
}

void kiq_partition_log_note_refused(kiq_partition_log_t *l, const uint8_t *batches, size_t len, int16_t err)
{
    kiq_batch_header_t h;
    if (!batches || kiq_batch_header_parse(batches, len, &h) < 0 || h.producer_id < 0) return;
    pthread_mutex_lock(&l->mu);
    kiq_producer_state_note_refusal(l->producers, &h, err, kiq_clock_mono_ns());
    pthread_mutex_unlock(&l->mu);
}

uint64_t kiq_partition_log_txn_guard(kiq_partition_log_t *l, int64_t producer_id, int16_t producer_epoch, bool v2,
                                     bool *ongoing)
{
    pthread_mutex_lock(&l->mu);
    const kiq_producer_entry_t *e = kiq_producer_state_get(l->producers, producer_id);
    *ongoing = e && e->epoch == producer_epoch && e->txn_first_offset >= 0;
    uint64_t g = kiq_producer_state_guard(l->producers, producer_id, v2 ? producer_epoch : -1);
    pthread_mutex_unlock(&l->mu);
    return g;
}

void kiq_partition_log_txn_guard_end(kiq_partition_log_t *l, int64_t producer_id, uint64_t guard)
{
    pthread_mutex_lock(&l->mu);
    kiq_producer_state_guard_end(l->producers, producer_id, guard);
    pthread_mutex_unlock(&l->mu);
}

int kiq_partition_log_append_checked(kiq_partition_log_t *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                                     uint64_t txn_guard, const kiq_log_append_watch_t *watch,
                                     kiq_log_append_result_t *res)
{
    result_init(res);
    if (len == 0) return kiq_error_set("%s: nothing to append", l->dir);
    if (len > INT32_MAX) return kiq_error_set("%s: append of %zu bytes is too large", l->dir, len);
    pending_t pend;
    pend.e = pend.local;
    pend.n = 0;
    pend.cap = PENDING_LOCAL;
    pthread_mutex_lock(&l->mu);
    int rc = -1;
    if (refuses_appends(l)) goto out;
    const int64_t first = kiq_pl_active(l)->next_offset;
    int64_t next = first;
    int64_t max_ts = -1;
    kiq_batch_iter_t it;
    const uint8_t *b;
    size_t blen;
    kiq_batch_header_t h;
    int r;
    kiq_batch_iter_init(&it, batches, len, false);
    while ((r = kiq_batch_iter_next(&it, &b, &blen, &h)) == 1) {
        if (h.magic != KIQ_BATCH_MAGIC || h.last_offset_delta < 0) {
            kiq_error_set("%s: not a v2 batch with a sane last offset delta", l->dir);
            goto out;
        }
        uint8_t *mb = batches + (b - batches);
        kiq_batch_set_base_offset(mb, next);
        kiq_batch_set_leader_epoch(mb, leader_epoch);
        h.base_offset = next;
        if (res->txn_producer < 0 && kiq_batch_is_transactional(&h)) res->txn_producer = h.producer_id;
        if (h.producer_id >= 0) {
            rc = check_producer(l, &pend, &h, txn_guard, res);
            /* a retried batch: the whole append is answered as before */
            if (rc != 0 || res->duplicate) goto out;
            rc = -1;
        }
        next += (int64_t)h.last_offset_delta + 1;
        if (h.max_timestamp > max_ts) max_ts = h.max_timestamp;
    }
    if (r < 0) goto out;
    const int64_t last = next - 1;
    if (write_batches(l, batches, len, first, last, max_ts, res) < 0) goto out;
    for (size_t i = 0; i < pend.n; i++) {
        if (kiq_producer_state_put(l->producers, &pend.e[i]) < 0)
            KIQ_ERROR("%s: producer %" PRId64 " is not remembered: %s", l->dir, pend.e[i].producer_id,
                      kiq_error_get());
        int64_t txn = pend.e[i].txn_first_offset;
        if (txn >= 0) kiq_producer_state_guard_end(l->producers, pend.e[i].producer_id, 0);
        if (txn >= 0 && (l->first_unstable < 0 || txn < l->first_unstable)) l->first_unstable = txn;
    }
    rc = appended(l, leader_epoch, first, last, watch, res);
out:
    pthread_mutex_unlock(&l->mu);
    if (pend.e != pend.local) free(pend.e);
    return rc;
}

int kiq_partition_log_append(kiq_partition_log_t *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                             int64_t *base_offset_out, int64_t *last_offset_out)
{
    kiq_log_append_result_t res;
    int rc = kiq_partition_log_append_checked(l, batches, len, leader_epoch, 0, NULL, &res);
    if (rc != 0) return -1;
    if (base_offset_out) *base_offset_out = res.base_offset;
    if (last_offset_out) *last_offset_out = res.last_offset;
    return 0;
}

/* Records "<dir>: <what>: <the reason already recorded>", copied out of
 * the error slot first as that is what gets rewritten. -1. */
static int wrap_error(const char *dir, const char *what)
{
    char why[512];
    snprintf(why, sizeof why, "%s", kiq_error_get());
    return kiq_error_set("%s: %s: %s", dir, what, why);
}

/* The checks of a follower append that need no lock: framing, v2, CRC and
 * offsets increasing from batch to batch. *first, *last and *max_ts get
 * the offsets and newest timestamp, *messages the offsets the batches
 * span. 0 or -1. */
static int check_follower_batches(const kiq_partition_log_t *l, const uint8_t *batches, size_t len, int64_t *first,
                                  int64_t *last, int64_t *max_ts, int64_t *messages)
{
    kiq_batch_iter_t it;
    const uint8_t *b;
    size_t blen;
    kiq_batch_header_t h;
    int r;
    *first = *last = *max_ts = -1;
    *messages = 0;
    kiq_batch_iter_init(&it, batches, len, false);
    while ((r = kiq_batch_iter_next(&it, &b, &blen, &h)) == 1) {
        if (kiq_batch_check(b, blen, NULL) != 0) return wrap_error(l->dir, "a replicated batch");
        if (h.last_offset_delta < 0 || h.base_offset < 0)
            return kiq_error_set("%s: replicated batch with offsets %" PRId64 "+%" PRId32, l->dir, h.base_offset,
                                 h.last_offset_delta);
        if (*first < 0)
            *first = h.base_offset;
        else if (h.base_offset <= *last)
            return kiq_error_set("%s: replicated batch at offset %" PRId64 " does not follow offset %" PRId64, l->dir,
                                 h.base_offset, *last);
        *last = kiq_batch_last_offset(&h);
        *messages += (int64_t)h.last_offset_delta + 1;
        if (h.max_timestamp > *max_ts) *max_ts = h.max_timestamp;
    }
    if (r < 0) return wrap_error(l->dir, "replicated data");
    if (*first < 0) return kiq_error_set("%s: nothing to append", l->dir);
    return 0;
}

int kiq_partition_log_append_follower(kiq_partition_log_t *l, const uint8_t *batches, size_t len,
                                      kiq_log_append_result_t *res)
{
    result_init(res);
    if (len > INT32_MAX) return kiq_error_set("%s: append of %zu bytes is too large", l->dir, len);
    int64_t first, last, max_ts, messages;
    if (check_follower_batches(l, batches, len, &first, &last, &max_ts, &messages) < 0) return -1;
    pthread_mutex_lock(&l->mu);
    int rc = -1;
    int64_t leo = kiq_pl_active(l)->next_offset;
    if (refuses_appends(l)) goto out;
    if (first < leo) {
        kiq_error_set("%s: replicated batches start at offset %" PRId64 ", below the log end %" PRId64
                      ": the follower must truncate or fetch from its log end",
                      l->dir, first, leo);
        goto out;
    }
    if (first > leo)
        KIQ_DEBUG("%s: replicated batches start at %" PRId64 " past the log end %" PRId64 " (a compacted leader)",
                  l->dir, first, leo);
    if (write_batches(l, batches, len, first, last, max_ts, res) < 0) goto out;
    kiq_batch_iter_t it;
    const uint8_t *b;
    size_t blen;
    kiq_batch_header_t h;
    bool new_epoch = false, txns = false;
    kiq_batch_iter_init(&it, batches, len, false);
    while (kiq_batch_iter_next(&it, &b, &blen, &h) == 1) {
        /* The leader accepted the batch: its producer state follows, whatever it holds. */
        int64_t txn_first;
        if (kiq_producer_state_replay(l->producers, &h, &txn_first) < 0)
            KIQ_ERROR("%s: producer %" PRId64 " is not remembered: %s", l->dir, h.producer_id, kiq_error_get());
        if (kiq_batch_is_transactional(&h)) {
            txns = true;
            if (kiq_batch_is_control(&h) && h.producer_id >= 0 && kiq_batch_control_type(b, blen) == KIQ_CONTROL_ABORT)
                kiq_pl_note_aborted(l, h.producer_id, txn_first, h.base_offset, res->segment_base);
        }
        new_epoch |= kiq_pl_assign_epoch(l, h.partition_leader_epoch, h.base_offset);
        l->last_epoch = h.partition_leader_epoch;
    }
    if (txns) kiq_pl_recompute_unstable(l);
    if (new_epoch) kiq_pl_save_epochs(l);
    res->base_offset = first;
    res->last_offset = last;
    res->written_ns = kiq_clock_mono_ns();
    rc = count_unflushed(l, messages, res);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int kiq_partition_log_producer(kiq_partition_log_t *l, int64_t producer_id, kiq_producer_entry_t *out)
{
    pthread_mutex_lock(&l->mu);
    const kiq_producer_entry_t *e = kiq_producer_state_get(l->producers, producer_id);
    if (e) *out = *e;
    pthread_mutex_unlock(&l->mu);
    return e != NULL;
}

size_t kiq_partition_log_expire_producers(kiq_partition_log_t *l, int64_t now_ms, int64_t expiration_ms)
{
    pthread_mutex_lock(&l->mu);
    size_t n = kiq_producer_state_expire(l->producers, now_ms - expiration_ms);
    pthread_mutex_unlock(&l->mu);
    if (n) KIQ_DEBUG("%s: %zu producer(s) expired (producer.id.expiration.ms)", l->dir, n);
    return n;
}

size_t kiq_partition_log_producer_count(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    size_t n = kiq_producer_state_count(l->producers);
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* The control batch of a marker into w: one record, key (version 0, type),
 * value EndTxnMarker (version 0, coordinator epoch), as Kafka writes it. */
static int build_marker(const kiq_txn_marker_t *m, int64_t now_ms, kiq_wr_t *w)
{
    uint8_t key[4], value[6];
    kiq_put_be16(key, 0);
    kiq_put_be16(key + 2, m->commit ? KIQ_CONTROL_COMMIT : KIQ_CONTROL_ABORT);
    kiq_put_be16(value, 0);
    kiq_put_be32(value + 2, (uint32_t)m->coordinator_epoch);
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now_ms);
    kiq_batch_builder_set_producer(&bb, m->producer_id, m->producer_epoch, -1);
    bb.transactional = true;
    bb.control = true;
    int rc = kiq_batch_builder_add(&bb, key, sizeof key, value, sizeof value, NULL, 0, now_ms);
    if (rc == 0) rc = kiq_batch_builder_finish(&bb, w);
    kiq_batch_builder_free(&bb);
    return rc;
}

int kiq_partition_log_append_marker(kiq_partition_log_t *l, const kiq_txn_marker_t *m, int32_t leader_epoch,
                                    const kiq_log_append_watch_t *watch, kiq_log_append_result_t *res)
{
    result_init(res);
    if (m->producer_id < 0 || m->producer_epoch < 0)
        return kiq_error_set("%s: a marker for producer %" PRId64 " epoch %d", l->dir, m->producer_id,
                             m->producer_epoch), KIQ_ERR_INVALID_PRODUCER_EPOCH;
    kiq_wr_t w;
    kiq_wr_init(&w);
    int64_t now = kiq_clock_wall_ms();
    if (build_marker(m, now, &w) < 0) {
        kiq_wr_free(&w);
        return -1;
    }
    pthread_mutex_lock(&l->mu);
    int rc = -1;
    if (refuses_appends(l)) goto out;
    const kiq_producer_entry_t *cur = kiq_producer_state_get(l->producers, m->producer_id);
    kiq_producer_entry_t e;
    if (cur)
        e = *cur;
    else
        kiq_producer_entry_init(&e, m->producer_id, m->producer_epoch);
    if (m->producer_epoch < e.epoch) {
        rc = KIQ_ERR_INVALID_PRODUCER_EPOCH;
        kiq_error_set("%s: a marker of producer %" PRId64 " at epoch %d, older than its epoch %d", l->dir,
                      m->producer_id, m->producer_epoch, e.epoch);
        goto out;
    }
    if (m->coordinator_epoch < e.coordinator_epoch) {
        rc = KIQ_ERR_TRANSACTION_COORDINATOR_FENCED;
        kiq_error_set("%s: a marker of producer %" PRId64 " from coordinator epoch %d, older than %d", l->dir,
                      m->producer_id, m->coordinator_epoch, e.coordinator_epoch);
        goto out;
    }
    const int64_t offset = kiq_pl_active(l)->next_offset;
    kiq_batch_set_base_offset(w.buf, offset);
    kiq_batch_set_leader_epoch(w.buf, leader_epoch);
    kiq_batch_header_t h;
    if (kiq_batch_header_parse(w.buf, w.len, &h) < 0 ||
        write_batches(l, w.buf, w.len, offset, offset, now, res) < 0)
        goto out;
    int64_t txn_first = e.txn_first_offset;
    res->txn_first_offset = txn_first;
    kiq_producer_entry_update(&e, &h);
    e.coordinator_epoch = m->coordinator_epoch;
    kiq_producer_state_guard_marker(l->producers, m->producer_id, m->producer_epoch);
    if (kiq_producer_state_put(l->producers, &e) < 0)
        KIQ_ERROR("%s: producer %" PRId64 " is not remembered: %s", l->dir, m->producer_id, kiq_error_get());
    if (!m->commit) kiq_pl_note_aborted(l, m->producer_id, txn_first, offset, res->segment_base);
    kiq_pl_recompute_unstable(l);
    rc = appended(l, leader_epoch, offset, offset, watch, res);
out:
    pthread_mutex_unlock(&l->mu);
    kiq_wr_free(&w);
    return rc;
}

int64_t kiq_partition_log_last_stable_offset(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t lso = kiq_pl_lso(l);
    pthread_mutex_unlock(&l->mu);
    return lso;
}

size_t kiq_partition_log_aborted_count(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    size_t n = kiq_txn_index_count(l->aborted);
    pthread_mutex_unlock(&l->mu);
    return n;
}

size_t kiq_partition_log_aborted(kiq_partition_log_t *l, int64_t from, int64_t upper, kiq_arena_t *arena,
                                 kiq_aborted_t **out)
{
    pthread_mutex_lock(&l->mu);
    size_t n = kiq_txn_index_collect(l->aborted, from, upper, arena, out);
    pthread_mutex_unlock(&l->mu);
    return n;
}
