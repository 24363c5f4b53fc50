#include "log/partition_log.h"

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

/* Attempts of a read whose copy raced with a truncation. */
#define READ_ATTEMPTS 3

/* Guarded by mu, except dir, which never changes after open. */
struct kiq_partition_log {
    pthread_mutex_t mu;
    char *dir;
    kiq_log_config_t cfg;
    kiq_segment_t **segs; /* by base offset; the last is active; never empty */
    size_t nsegs, cap;
    int64_t start_offset;
    /* Bumped whenever bytes already in the log are removed, so a copy made
     * outside the mutex can tell it may have read something else. */
    uint64_t generation;
    kiq_segment_recovery_t recovery;
    /* Time and size policies, -1 for none (kiq_partition_log_set_retention). */
    int64_t segment_ms, retention_ms, retention_bytes;
    /* Max timestamp of the active segment's first batch, which segment.ms
     * is measured from (Kafka's rolling-based timestamp); UNKNOWN_TS until
     * read back from the file after open, roll or truncation. */
    int64_t active_first_ts;
    /* segment.jitter.ms, and how much earlier than segment.ms the active
     * segment rolls: drawn below it (and below segment.ms) for each
     * segment, -1 until drawn. */
    int64_t segment_jitter_ms, active_jitter;
    /* Durability: everything below recovery_point is fsynced; unflushed
     * messages were appended after the last flush, the oldest of them at
     * unflushed_since (monotonic ms, -1 when none); flush.messages and
     * flush.ms (INT64_MAX: leave it to the OS); fsyncs done by flushes. */
    int64_t recovery_point;
    int64_t unflushed, unflushed_since;
    int64_t flush_messages, flush_ms;
    uint64_t flushes;
    /* The directory's health, shared with the other logs in it (NULL:
     * none); every segment points at it too. */
    kiq_log_dir_t *log_dir;
    /* Idempotent producers: their epochs and last batches (producer_state.h). */
    kiq_producer_state_t *producers;
    /* Aborted transactions (txn_index.h), and the first offset of the
     * oldest ongoing transaction (-1: none), which bounds the last stable
     * offset. */
    kiq_txn_index_t *aborted;
    int64_t first_unstable;
    /* Leader epochs and where each starts (leader_epoch_cache.h);
     * epochs_saved when the checkpoint file says the same. */
    kiq_leader_epoch_cache_t *epochs;
    bool epochs_saved;
    /* partitionLeaderEpoch of the last batch in the log: what a follower
     * sends as last_fetched_epoch; the cache's latest when the log holds
     * no batch. */
    int32_t last_epoch;
    /* In [start_offset, LEO]; set by the replication layer, the LEO found
     * at open until then. */
    int64_t high_watermark;
    /* What must not be served as it lies (damaged_ranges.h). */
    kiq_damaged_ranges_t damaged;
    /* The data loss recorded in the directory (data_loss.h); findings 0:
     * none, or acknowledged. */
    kiq_data_loss_t loss;
};

#define UNKNOWN_TS INT64_MIN

static kiq_segment_t *active(const kiq_partition_log_t *l) { return l->segs[l->nsegs - 1]; }

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

/* A segment file deleted under the broker is written back from its open
 * descriptor to this name first, then linked to its own. */
#define RESTORED_SUFFIX ".log.restored"

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
            kiq_log_segment_name_parse(e->d_name, RESTORED_SUFFIX, &base)) {
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
              l->dir, active(l)->next_offset, n - from, bases[from], bytes);
    if (kiq_fsync_dir(l->dir) < 0) KIQ_WARN("%s: %s", l->dir, kiq_error_get());
}

/* Records that offsets [from, to) are lost (data_loss.h): in the partition
 * directory, where it keeps the partition marked until an operator
 * acknowledges it, and in the log. Logged once per range found. Under the
 * mutex, or before the log is shared. */
static void note_loss(kiq_partition_log_t *l, int64_t from, int64_t to, const char *fmt, ...)
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

static size_t segment_for(const kiq_partition_log_t *l, int64_t offset);

/* ---- Transactions ---- */

typedef struct unstable_ctx {
    int64_t min;
    int64_t skip; /* a producer whose transaction is ending; -1 */
} unstable_ctx_t;

static void min_unstable(const kiq_producer_entry_t *e, void *ctx)
{
    unstable_ctx_t *u = ctx;
    if (e->txn_first_offset >= 0 && e->producer_id != u->skip && (u->min < 0 || e->txn_first_offset < u->min))
        u->min = e->txn_first_offset;
}

/* Under the mutex: the oldest ongoing transaction's first offset, but for
 * producer skip's. -1 when none. */
static int64_t oldest_unstable(const kiq_partition_log_t *l, int64_t skip)
{
    unstable_ctx_t u = {-1, skip};
    kiq_producer_state_foreach(l->producers, min_unstable, &u);
    return u.min;
}

static void recompute_unstable(kiq_partition_log_t *l) { l->first_unstable = oldest_unstable(l, -1); }

/* Under the mutex: producer_id's transaction from txn_first to the abort
 * marker at marker_offset (in segment segment_base) is remembered; the
 * producer's own transaction must be over in the table already. */
static void note_aborted(kiq_partition_log_t *l, int64_t producer_id, int64_t txn_first, int64_t marker_offset,
                         int64_t segment_base)
{
    if (txn_first < 0) return; /* nothing of it reached this partition */
    int64_t unstable = oldest_unstable(l, producer_id);
    kiq_aborted_t e = {
        .producer_id = producer_id,
        .first_offset = txn_first,
        .last_offset = marker_offset,
        .last_stable_offset = unstable >= 0 && unstable < marker_offset ? unstable : marker_offset + 1,
        .segment_base = segment_base,
    };
    if (kiq_txn_index_add(l->aborted, &e) < 0)
        KIQ_ERROR("%s: the aborted transaction of producer %" PRId64 " at %" PRId64 "..%" PRId64
                  " is not in its .txnindex: %s", l->dir, producer_id, txn_first, marker_offset, kiq_error_get());
}

/* A marker replayed from the log (open, truncation). */
static void replayed_marker(void *ctx, const kiq_batch_header_t *h, int64_t txn_first, bool abort)
{
    kiq_partition_log_t *l = ctx;
    if (!abort) return;
    size_t i = segment_for(l, h->base_offset);
    note_aborted(l, h->producer_id, txn_first, h->base_offset, l->segs[i]->base_offset);
}

/* Under the mutex (or before the log is shared): the producers' state from
 * the newest snapshot at or below the LEO plus the batch headers after it,
 * or from every batch header when there is no snapshot and
 * scan_without_snapshot. A failure leaves what was rebuilt so far, logged:
 * the log itself is sound, and the worst outcome is a retried batch not
 * recognised as a duplicate. */
static void rebuild_producers(kiq_partition_log_t *l, bool scan_without_snapshot)
{
    kiq_marker_watch_t watch = {replayed_marker, l};
    int64_t leo = active(l)->next_offset, from = -1;
    if (kiq_producer_state_delete_snapshots_above(l->dir, leo) < 0 ||
        kiq_producer_state_load_snapshot(l->producers, l->dir, leo, &from) < 0) {
        KIQ_WARN("%s: producer state snapshots: %s", l->dir, kiq_error_get());
        kiq_producer_state_clear(l->producers);
        from = -1;
    }
    if (from < 0 && !scan_without_snapshot) return;
    if (from < l->start_offset) from = l->start_offset;
    for (size_t i = segment_for(l, from); i < l->nsegs; i++) {
        if (kiq_producer_state_scan_segment(l->producers, l->segs[i], from, &watch) < 0) {
            KIQ_WARN("%s: rebuilding the producer state: %s", l->dir, kiq_error_get());
            break;
        }
    }
    recompute_unstable(l);
    KIQ_DEBUG("%s: %zu producers known (snapshot at %" PRId64 ", headers scanned up to %" PRId64 ")", l->dir,
              kiq_producer_state_count(l->producers), from, leo);
}

/* ---- Leader epochs ---- */

/* Under the mutex: writes the leader-epoch checkpoint when it is behind
 * the cache. A failure is logged and retried at the next change or close:
 * the batches carry their epochs, so a lost checkpoint is rebuilt. */
static void save_epochs(kiq_partition_log_t *l)
{
    if (l->epochs_saved || kiq_log_dir_offline(l->log_dir)) return;
    if (kiq_leader_epoch_cache_save(l->epochs, l->dir) < 0) {
        KIQ_WARN("%s: leader epoch checkpoint: %s", l->dir, kiq_error_get());
        return;
    }
    l->epochs_saved = true;
}

/* Under the mutex: records that epoch starts at offset; true when that is
 * a new entry. */
static bool assign_epoch(kiq_partition_log_t *l, int32_t epoch, int64_t offset)
{
    int rc = kiq_leader_epoch_cache_assign(l->epochs, epoch, offset);
    if (rc < 0) KIQ_ERROR("%s: leader epoch %" PRId32 " is not remembered: %s", l->dir, epoch, kiq_error_get());
    if (rc <= 0) return false;
    l->epochs_saved = false;
    return true;
}

/* Calls cb with the header of each batch of seg whose last offset is >=
 * from, in file order (61 bytes read per batch, nothing decompressed).
 * 0, or -1 at a header that cannot be read or does not fit. */
static int walk_headers(kiq_segment_t *seg, int64_t from, void (*cb)(const kiq_batch_header_t *h, void *ctx),
                        void *ctx)
{
    if (from >= seg->next_offset) return 0;
    uint64_t pos = 0;
    if (from > seg->base_offset) {
        kiq_batch_loc_t loc;
        int rc = kiq_segment_find(seg, from, &loc);
        if (rc <= 0) return rc;
        pos = loc.position;
    }
    uint8_t head[KIQ_BATCH_HEADER_SIZE];
    while (pos < seg->size) {
        kiq_batch_header_t h;
        if (seg->size - pos < sizeof head || kiq_segment_read(seg, pos, head, sizeof head) < 0 ||
            kiq_batch_header_parse(head, sizeof head, &h) < 0 ||
            h.batch_length < KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_LOG_OVERHEAD || kiq_batch_size(&h) > seg->size - pos)
            return kiq_error_set("%s: no sound batch header at position %" PRIu64, seg->path, pos);
        cb(&h, ctx);
        pos += kiq_batch_size(&h);
    }
    return 0;
}

static void assign_from_header(const kiq_batch_header_t *h, void *ctx)
{
    assign_epoch(ctx, h->partition_leader_epoch, h->base_offset);
}

static void keep_epoch(const kiq_batch_header_t *h, void *ctx) { *(int32_t *)ctx = h->partition_leader_epoch; }

/* Under the mutex: the epoch of the last batch in the log, or the cache's
 * latest when there is none (or it cannot be read). */
static int32_t read_last_epoch(kiq_partition_log_t *l)
{
    for (size_t i = l->nsegs; i-- > 0;) {
        kiq_segment_t *seg = l->segs[i];
        if (seg->size == 0) continue;
        int32_t epoch = KIQ_UNDEFINED_EPOCH;
        if (walk_headers(seg, seg->next_offset - 1, keep_epoch, &epoch) == 0) return epoch;
        KIQ_WARN("%s: reading the last batch's leader epoch: %s", l->dir, kiq_error_get());
        break;
    }
    return kiq_leader_epoch_cache_latest_epoch(l->epochs);
}

/* Under the mutex (or before the log is shared): the cache from the
 * checkpoint, cut to the log's offsets; rebuilt from the batch headers
 * when the file is missing or malformed, and completed from them when the
 * log holds a newer epoch than the file (a crash between an append and
 * the checkpoint write). */
static void load_epochs(kiq_partition_log_t *l)
{
    int rc = kiq_leader_epoch_cache_load(l->epochs, l->dir);
    if (rc < 0) KIQ_WARN("%s: %s; rebuilding the leader epochs from the log", l->dir, kiq_error_get());
    l->epochs_saved = rc == 0;
    if (kiq_leader_epoch_cache_truncate_from_end(l->epochs, active(l)->next_offset) ||
        kiq_leader_epoch_cache_truncate_from_start(l->epochs, l->start_offset))
        l->epochs_saved = false;
    l->last_epoch = read_last_epoch(l);
    size_t n = kiq_leader_epoch_cache_count(l->epochs);
    if (rc != 0 || l->last_epoch > kiq_leader_epoch_cache_latest_epoch(l->epochs)) {
        int64_t from = n ? kiq_leader_epoch_cache_entry(l->epochs, n - 1).start_offset : l->start_offset;
        for (size_t i = segment_for(l, from); i < l->nsegs; i++) {
            if (walk_headers(l->segs[i], from, assign_from_header, l) < 0) {
                KIQ_WARN("%s: rebuilding the leader epochs: %s", l->dir, kiq_error_get());
                break;
            }
        }
        KIQ_DEBUG("%s: %zu leader epochs rebuilt from offset %" PRId64, l->dir,
                  kiq_leader_epoch_cache_count(l->epochs), from);
        /* the first batch may begin below the log start */
        kiq_leader_epoch_cache_truncate_from_start(l->epochs, l->start_offset);
    }
    /* The checkpoint described more than is left, or the scan found more. */
    save_epochs(l);
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
    l->active_first_ts = UNKNOWN_TS;
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
            note_loss(l, seg->next_offset, bases[i + 1], "%s was found cut at offset %" PRId64 " at open", seg->path,
                      seg->next_offset);
        }
        if (i > 0 && bases[i - 1] < orphans.hi && orphans.hi < bases[i])
            note_loss(l, orphans.lo, seg->base_offset, "segment file %020" PRId64 "%s is missing (its index files "
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
    if (recovery_point > active(l)->next_offset)
        note_loss(l, active(l)->next_offset, recovery_point, "the log ends at offset %" PRId64 " but was flushed up "
                  "to %" PRId64 " (recovery-point-offset-checkpoint): a segment file is missing or was cut outside "
                  "the broker", active(l)->next_offset, recovery_point);
    else if (orphans.tail >= active(l)->next_offset && orphans.tail_end > orphans.tail)
        /* (empty ones tell of no record) */
        note_loss(l, orphans.tail, orphans.tail_end, "segment file %020" PRId64 "%s is missing (its index files "
                  "were left, naming offsets up to %" PRId64 ")", orphans.tail, KIQ_LOG_SUFFIX, orphans.tail_end - 1);
    /* What recovery left is what the disk holds now. */
    l->recovery_point = active(l)->next_offset;
    if (load_aborted(l) < 0) goto fail_loaded;
    rebuild_producers(l, !cfg->clean_shutdown);
    load_epochs(l);
    l->high_watermark = active(l)->next_offset;
    KIQ_DEBUG("opened %s: %zu segments, offsets %" PRId64 "..%" PRId64, dir, l->nsegs, l->start_offset,
              active(l)->next_offset);
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
        if (kiq_segment_sync(active(l)) < 0) KIQ_WARN("closing %s: %s", l->dir, kiq_error_get());
        /* the next open then reads no batch headers at all */
        if (kiq_producer_state_count(l->producers) > 0 &&
            kiq_producer_state_write_snapshot(l->producers, l->dir, active(l)->next_offset) < 0)
            KIQ_WARN("closing %s: producer state snapshot: %s", l->dir, kiq_error_get());
        save_epochs(l);
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

/* Under the mutex: fsyncs the active segment (earlier ones were synced
 * when rolled) and moves the recovery point to the LEO; *done (may be
 * NULL) says from where and when. */
static int flush_locked(kiq_partition_log_t *l, kiq_log_flush_t *done)
{
    kiq_log_flush_t f = {l->recovery_point, active(l)->next_offset, kiq_clock_mono_ns(), 0};
    if (kiq_segment_sync(active(l)) < 0) return -1;
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
static int roll(kiq_partition_log_t *l)
{
    kiq_segment_t *old = active(l);
    if (kiq_segment_seal(old) < 0) return -1;
    kiq_segment_t *seg = kiq_segment_create(l->dir, old->next_offset, &l->cfg);
    if (!seg) return -1;
    if (push_segment(l, seg) < 0) {
        kiq_segment_delete(seg);
        return -1;
    }
    if (kiq_fsync_dir(l->dir) < 0) KIQ_WARN("rolling %s: %s", l->dir, kiq_error_get());
    l->active_first_ts = UNKNOWN_TS;
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
    if (l->active_first_ts == UNKNOWN_TS) {
        int64_t ts = -1;
        if (kiq_segment_walk(active(l), 0, first_batch_ts, &ts) < 0) return false;
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
    kiq_segment_t *seg = active(l);
    bool rolled = false;
    if (seg->size > 0 && (seg->size + len > (uint64_t)l->cfg.segment_bytes || kiq_segment_index_full(seg) ||
                          last - seg->base_offset > INT32_MAX || time_to_roll(l, max_ts))) {
        if (roll(l) < 0) return -1;
        seg = active(l);
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
    if (seg->size == len) l->active_first_ts = UNKNOWN_TS;
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
    return flush_locked(l, &res->flush);
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
    if (assign_epoch(l, leader_epoch, first)) save_epochs(l);
    l->last_epoch = leader_epoch;
    res->base_offset = first;
    res->last_offset = last;
    res->written_ns = kiq_clock_mono_ns();
    /* told before the fsync: the append's time is not the fsync's */
    if (watch) watch->appended(watch->ctx, res);
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

uint64_t kiq_partition_log_txn_guard(kiq_partition_log_t *l, int64_t producer_id, int16_t producer_epoch,
                                     bool *ongoing)
{
    pthread_mutex_lock(&l->mu);
    const kiq_producer_entry_t *e = kiq_producer_state_get(l->producers, producer_id);
    *ongoing = e && e->epoch == producer_epoch && e->txn_first_offset >= 0;
    uint64_t g = kiq_producer_state_guard(l->producers, producer_id);
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
    const int64_t first = active(l)->next_offset;
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
    int64_t leo = active(l)->next_offset;
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
                note_aborted(l, h.producer_id, txn_first, h.base_offset, res->segment_base);
        }
        new_epoch |= assign_epoch(l, h.partition_leader_epoch, h.base_offset);
        l->last_epoch = h.partition_leader_epoch;
    }
    if (txns) recompute_unstable(l);
    if (new_epoch) save_epochs(l);
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
    const int64_t offset = active(l)->next_offset;
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
    kiq_producer_state_guard_end(l->producers, m->producer_id, 0);
    if (kiq_producer_state_put(l->producers, &e) < 0)
        KIQ_ERROR("%s: producer %" PRId64 " is not remembered: %s", l->dir, m->producer_id, kiq_error_get());
    if (!m->commit) note_aborted(l, m->producer_id, txn_first, offset, res->segment_base);
    recompute_unstable(l);
    rc = appended(l, leader_epoch, offset, offset, watch, res);
out:
    pthread_mutex_unlock(&l->mu);
    kiq_wr_free(&w);
    return rc;
}

int64_t kiq_partition_log_last_stable_offset(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t lso = l->high_watermark;
    if (l->first_unstable >= 0 && l->first_unstable < lso) lso = l->first_unstable;
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

/* ---- Reading ---- */

/* The last segment whose base offset is <= offset (the first if none). */
static size_t segment_for(const kiq_partition_log_t *l, int64_t offset)
{
    size_t lo = 0, hi = l->nsegs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->segs[mid]->base_offset <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Gathers consecutive batches of one segment into the current slice; on
 * the stack of kiq_partition_log_locate, under the log's mutex. */
typedef struct gather {
    int64_t max_offset;
    uint64_t budget;
    uint64_t total; /* over all slices so far */
    bool stop;      /* budget or max_offset reached: no further segment either */
    kiq_log_slice_t *slice;
} gather_t;

static int gather_batch(const kiq_batch_loc_t *loc, void *ctx)
{
    gather_t *g = ctx;
    bool first = g->total == 0;
    if (loc->base_offset >= g->max_offset || (!first && g->total + loc->size > g->budget)) {
        g->stop = true;
        return 1;
    }
    if (g->slice->length == 0) {
        g->slice->position = loc->position;
        g->slice->base_offset = loc->base_offset;
    }
    g->slice->length += loc->size;
    g->slice->last_offset = loc->last_offset;
    g->total += loc->size;
    return 0;
}

int kiq_partition_log_locate(kiq_partition_log_t *l, int64_t offset, int32_t max_bytes, int64_t max_offset,
                             kiq_log_slices_t *out)
{
    out->n = 0;
    pthread_mutex_lock(&l->mu);
    out->generation = l->generation;
    int64_t leo = active(l)->next_offset;
    if (offset < l->start_offset || offset > leo) {
        kiq_error_set("%s: offset %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", l->dir, offset, l->start_offset,
                      leo);
        pthread_mutex_unlock(&l->mu);
        return KIQ_LOG_OUT_OF_RANGE;
    }
    if (offset >= leo || offset >= max_offset) {
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    gather_t g = {.max_offset = max_offset, .budget = max_bytes > 0 ? (uint64_t)max_bytes : 0};
    const size_t first = segment_for(l, offset);
    for (size_t i = first; i < l->nsegs && !g.stop && out->n < KIQ_LOG_MAX_SLICES; i++) {
        kiq_segment_t *seg = l->segs[i];
        /* A read ends where damage begins, and one starting there is
         * refused: the damaged bytes never go out as they are. */
        const kiq_damaged_range_t *bad = kiq_damaged_ranges_in(&l->damaged, seg->base_offset);
        if (bad && bad->serve) bad = NULL;
        if (bad && (i == first ? offset : seg->base_offset) >= bad->from) {
            if (g.total > 0) break;
            kiq_error_set("%s: offset %" PRId64 " is behind the damage found at offset %" PRId64
                          " of segment %" PRId64 ": %s", l->dir, offset, bad->from, bad->segment_base, bad->why);
            pthread_mutex_unlock(&l->mu);
            kiq_log_slices_release(out);
            return KIQ_LOG_CORRUPT;
        }
        kiq_batch_loc_t loc;
        int rc = kiq_segment_find(seg, offset, &loc);
        if (rc == 0) continue;
        kiq_log_slice_t *s = &out->s[out->n];
        *s = (kiq_log_slice_t){.seg = seg, .fd = seg->fd};
        g.slice = s;
        uint64_t end = bad ? bad->position : seg->size;
        if (rc > 0) rc = kiq_segment_walk_to(seg, loc.position, end, gather_batch, &g);
        if (bad) g.stop = true;
        if (rc < 0) {
            pthread_mutex_unlock(&l->mu);
            kiq_log_slices_release(out);
            return -1;
        }
        if (s->length > 0) {
            kiq_segment_ref(seg);
            out->n++;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return (int)g.total;
}

void kiq_log_slices_release(kiq_log_slices_t *s)
{
    for (int i = 0; i < s->n; i++) kiq_segment_unref(s->s[i].seg);
    s->n = 0;
}

bool kiq_partition_log_unchanged(kiq_partition_log_t *l, uint64_t generation)
{
    pthread_mutex_lock(&l->mu);
    bool same = l->generation == generation;
    pthread_mutex_unlock(&l->mu);
    return same;
}

int kiq_partition_log_read(kiq_partition_log_t *l, int64_t offset, int32_t max_bytes, int64_t max_offset,
                           kiq_wr_t *out)
{
    const size_t start = out->len;
    for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        kiq_log_slices_t sl;
        int total = kiq_partition_log_locate(l, offset, max_bytes, max_offset, &sl);
        if (total <= 0) return total;
        bool whole = true;
        for (int i = 0; i < sl.n && whole; i++) {
            uint8_t *dst = kiq_wr_reserve(out, sl.s[i].length);
            if (!dst) {
                kiq_log_slices_release(&sl);
                out->len = start;
                return kiq_error_set("%s: out of memory reading %" PRIu32 " bytes", l->dir, sl.s[i].length);
            }
            ssize_t r = kiq_pread_full(sl.s[i].fd, dst, sl.s[i].length, sl.s[i].position);
            if (r < 0) {
                kiq_log_slices_release(&sl);
                out->len = start;
                return kiq_error_set("%s: %s", sl.s[i].seg->path, kiq_error_get());
            }
            whole = (size_t)r == sl.s[i].length;
        }
        kiq_log_slices_release(&sl);
        if (whole && kiq_partition_log_unchanged(l, sl.generation)) return total;
        out->len = start;
    }
    return kiq_error_set("%s: the log kept being truncated while reading offset %" PRId64, l->dir, offset);
}

int kiq_partition_log_offset_for_time(kiq_partition_log_t *l, int64_t ts, int64_t *offset)
{
    int rc = 0;
    *offset = -1;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nsegs; i++) {
        kiq_batch_loc_t loc;
        rc = kiq_segment_find_time(l->segs[i], ts, &loc);
        if (rc < 0) break;
        if (rc > 0) {
            *offset = loc.base_offset > l->start_offset ? loc.base_offset : l->start_offset;
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* ---- Truncation and state ---- */

int kiq_partition_log_truncate_to(kiq_partition_log_t *l, int64_t offset)
{
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    int64_t leo = active(l)->next_offset;
    if (offset < l->start_offset || offset > leo) {
        rc = kiq_error_set("%s: cannot truncate to %" PRId64 ", outside [%" PRId64 ", %" PRId64 "]", l->dir, offset,
                           l->start_offset, leo);
        goto out;
    }
    if (offset == leo) goto out;
    l->generation++;
    while (l->nsegs > 1 && active(l)->base_offset >= offset) {
        kiq_segment_t *seg = active(l);
        l->nsegs--;
        if (kiq_segment_delete(seg) < 0) KIQ_WARN("truncating %s: %s", l->dir, kiq_error_get());
    }
    l->active_first_ts = UNKNOWN_TS;
    rc = kiq_segment_truncate_to(active(l), offset);
    if (l->recovery_point > active(l)->next_offset) l->recovery_point = active(l)->next_offset;
    /* the producers' last batches may be gone: what is left says */
    if (kiq_txn_index_truncate(l->aborted, active(l)->next_offset) < 0)
        KIQ_WARN("truncating %s: %s", l->dir, kiq_error_get());
    rebuild_producers(l, true);
    if (kiq_leader_epoch_cache_truncate_from_end(l->epochs, active(l)->next_offset)) l->epochs_saved = false;
    save_epochs(l);
    l->last_epoch = read_last_epoch(l);
    if (l->high_watermark > active(l)->next_offset) l->high_watermark = active(l)->next_offset;
    kiq_damaged_ranges_cut(&l->damaged, active(l)->next_offset);
    if (rc == 0)
        KIQ_INFO("%s: truncated to offset %" PRId64 " (log end was %" PRId64 ")", l->dir, active(l)->next_offset, leo);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int kiq_partition_log_end_offset_for_epoch(kiq_partition_log_t *l, int32_t epoch, int32_t *out_epoch,
                                           int64_t *out_end_offset)
{
    pthread_mutex_lock(&l->mu);
    kiq_leader_epoch_cache_end_offset_for(l->epochs, epoch, active(l)->next_offset, out_epoch, out_end_offset);
    pthread_mutex_unlock(&l->mu);
    return 0;
}

int32_t kiq_partition_log_latest_epoch(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int32_t v = kiq_leader_epoch_cache_latest_epoch(l->epochs);
    pthread_mutex_unlock(&l->mu);
    return v;
}

int32_t kiq_partition_log_last_batch_epoch(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int32_t v = l->last_epoch;
    pthread_mutex_unlock(&l->mu);
    return v;
}

int kiq_partition_log_epochs(kiq_partition_log_t *l, kiq_epoch_entry_t *out, int max)
{
    pthread_mutex_lock(&l->mu);
    int n = (int)kiq_leader_epoch_cache_count(l->epochs);
    for (int i = 0; i < n && i < max; i++) out[i] = kiq_leader_epoch_cache_entry(l->epochs, (size_t)i);
    pthread_mutex_unlock(&l->mu);
    return n;
}

int64_t kiq_partition_log_high_watermark(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t v = l->high_watermark;
    pthread_mutex_unlock(&l->mu);
    return v;
}

void kiq_partition_log_set_high_watermark(kiq_partition_log_t *l, int64_t hw)
{
    pthread_mutex_lock(&l->mu);
    int64_t leo = active(l)->next_offset;
    l->high_watermark = hw > leo ? leo : hw < l->start_offset ? l->start_offset : hw;
    pthread_mutex_unlock(&l->mu);
}

int64_t kiq_partition_log_start_offset(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t v = l->start_offset;
    pthread_mutex_unlock(&l->mu);
    return v;
}

int64_t kiq_partition_log_end_offset(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t v = active(l)->next_offset;
    pthread_mutex_unlock(&l->mu);
    return v;
}

int kiq_partition_log_segments(kiq_partition_log_t *l, kiq_log_segment_info_t *out, int max)
{
    pthread_mutex_lock(&l->mu);
    int n = (int)l->nsegs;
    for (int i = 0; i < n && i < max; i++) {
        const kiq_segment_t *s = l->segs[i];
        out[i] = (kiq_log_segment_info_t){
            .base_offset = s->base_offset,
            .next_offset = s->next_offset,
            .size = s->size,
            .max_timestamp = s->max_timestamp,
            .index_entries = s->oix.count,
            .time_index_entries = s->tix.count,
        };
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

uint64_t kiq_partition_log_size(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t n = 0;
    for (size_t i = 0; i < l->nsegs; i++) n += l->segs[i]->size;
    pthread_mutex_unlock(&l->mu);
    return n;
}

typedef struct producers_copy {
    kiq_producer_entry_t *out;
    size_t n;
} producers_copy_t;

static void copy_producer(const kiq_producer_entry_t *e, void *ctx)
{
    producers_copy_t *c = ctx;
    c->out[c->n++] = *e;
}

size_t kiq_partition_log_producers(kiq_partition_log_t *l, kiq_arena_t *arena, kiq_producer_entry_t **out)
{
    pthread_mutex_lock(&l->mu);
    size_t n = kiq_producer_state_count(l->producers);
    producers_copy_t c = {kiq_arena_calloc(arena, n ? n : 1, sizeof *c.out), 0};
    kiq_producer_state_foreach(l->producers, copy_producer, &c);
    pthread_mutex_unlock(&l->mu);
    *out = c.out;
    return c.n;
}

void kiq_partition_log_recovery(kiq_partition_log_t *l, kiq_segment_recovery_t *out)
{
    pthread_mutex_lock(&l->mu);
    *out = l->recovery;
    pthread_mutex_unlock(&l->mu);
}

const char *kiq_partition_log_dir(const kiq_partition_log_t *l) { return l->dir; }

void kiq_partition_log_set_log_dir(kiq_partition_log_t *l, kiq_log_dir_t *log_dir)
{
    pthread_mutex_lock(&l->mu);
    l->log_dir = log_dir;
    for (size_t i = 0; i < l->nsegs; i++) l->segs[i]->log_dir = log_dir;
    pthread_mutex_unlock(&l->mu);
}

bool kiq_partition_log_offline(kiq_partition_log_t *l) { return kiq_log_dir_offline(l->log_dir); }

bool kiq_partition_log_writable(kiq_partition_log_t *l) { return kiq_log_dir_writable(l->log_dir); }

/* Under the mutex: marks seg's bytes from position (its batch starting at
 * offset from) to its end as not to be served. 1 when that is news. */
static int damage_locked(kiq_partition_log_t *l, const kiq_segment_t *seg, uint64_t position, int64_t from,
                         const char *why)
{
    kiq_damaged_range_t r = {.segment_base = seg->base_offset, .position = position, .from = from,
                             .to = seg->next_offset};
    snprintf(r.why, sizeof r.why, "%s", why);
    int fresh = kiq_damaged_ranges_add(&l->damaged, &r);
    if (fresh < 0) KIQ_ERROR("%s: the damage at offset %" PRId64 " is not remembered: %s", l->dir, from, kiq_error_get());
    return fresh > 0;
}

int kiq_partition_log_damage(kiq_partition_log_t *l, const kiq_segment_t *seg, uint64_t position, int64_t from,
                             const char *why)
{
    pthread_mutex_lock(&l->mu);
    size_t i = 0;
    while (i < l->nsegs && l->segs[i] != seg) i++;
    int fresh = i < l->nsegs && damage_locked(l, seg, position, from, why);
    pthread_mutex_unlock(&l->mu);
    return fresh;
}

int64_t kiq_partition_log_damaged(kiq_partition_log_t *l, char *why, size_t n)
{
    pthread_mutex_lock(&l->mu);
    const kiq_damaged_range_t *first = l->damaged.n ? &l->damaged.r[0] : NULL;
    int64_t at = first ? first->segment_base : -1;
    if (why && n) snprintf(why, n, "%s", first ? first->why : "");
    pthread_mutex_unlock(&l->mu);
    return at;
}

static int reopen_segment(kiq_partition_log_t *l, size_t i);

/* Under the mutex: segment i's file was deleted under the broker, but its
 * bytes are still open here: they are written back under its name (never
 * over a file put there meanwhile) and the segment reopened from it, so
 * nothing is lost. 0, or -1 when they could not be. */
static int restore_segment(kiq_partition_log_t *l, size_t i)
{
    kiq_segment_t *seg = l->segs[i];
    char tmp[PATH_MAX], path[PATH_MAX];
    snprintf(path, sizeof path, "%s", seg->path);
    if (kiq_log_segment_path(tmp, sizeof tmp, l->dir, seg->base_offset, RESTORED_SUFFIX) < 0 ||
        kiq_copy_file(seg->fd, tmp, seg->size) < 0)
        return -1;
    if (link(tmp, path) < 0) {
        kiq_error_errno("link %s to %s", tmp, path);
        unlink(tmp);
        return -1;
    }
    unlink(tmp);
    if (kiq_fsync_dir(l->dir) < 0) return -1;
    const int64_t next = seg->next_offset;
    if (reopen_segment(l, i) < 0) return -1;
    if (l->segs[i]->next_offset != next)
        return kiq_error_set("%s holds offsets up to %" PRId64 " once written back, not %" PRId64, path,
                             l->segs[i]->next_offset, next);
    return 0;
}

/* Under the mutex: the bytes of segment i from the batch at position on
 * (first offset from) are lost, for the reason why. The segment's bytes
 * are known unreadable past there when cut: it is cut there too, and the
 * log skips the gap as it skips what compaction removed. An active segment
 * is rolled first, so that appends go on into a sound file and the
 * offsets handed out stay taken. The range is marked damaged either way,
 * for a replica to fetch it again, and the loss recorded. */
static void segment_lost(kiq_partition_log_t *l, size_t i, uint64_t position, int64_t from, bool cut,
                         const char *why)
{
    kiq_segment_t *seg = l->segs[i];
    const int64_t to = seg->next_offset;
    if (i + 1 == l->nsegs && roll(l) < 0)
        KIQ_ERROR("%s: cannot roll past %s: %s", l->dir, seg->path, kiq_error_get());
    bool closed = i + 1 < l->nsegs;
    if (cut && closed) {
        l->generation++;
        if (kiq_segment_truncate_at(seg, position, from) < 0)
            KIQ_ERROR("%s: cutting %s to its whole batches: %s", l->dir, seg->path, kiq_error_get());
    }
    kiq_damaged_range_t r = {.segment_base = seg->base_offset, .position = position, .from = from, .to = to,
                             .serve = closed};
    snprintf(r.why, sizeof r.why, "%s", why);
    if (kiq_damaged_ranges_add(&l->damaged, &r) < 0)
        KIQ_ERROR("%s: the damage at offset %" PRId64 " is not remembered: %s", l->dir, from, kiq_error_get());
    note_loss(l, from, to, "%s", why);
}

/* Under the mutex: an acknowledgement made meanwhile (the record removed)
 * is taken. */
static void refresh_loss(kiq_partition_log_t *l)
{
    if (l->loss.findings == 0 || kiq_data_loss_marked(l->dir)) return;
    KIQ_WARN("%s: the data loss of offsets %" PRId64 "..%" PRId64 " was acknowledged", l->dir, l->loss.from,
             l->loss.to - 1);
    l->loss = (kiq_data_loss_t){0};
}

int kiq_partition_log_check_files(kiq_partition_log_t *l, bool all)
{
    pthread_mutex_lock(&l->mu);
    int found = 0;
    refresh_loss(l);
    for (size_t i = all ? 0 : l->nsegs - 1; i < l->nsegs && !kiq_log_dir_offline(l->log_dir); i++) {
        kiq_segment_t *seg = l->segs[i];
        struct stat st;
        char why[512];
        /* a segment found damaged or cut once is not looked at again */
        if (fstat(seg->fd, &st) < 0 || kiq_damaged_ranges_in(&l->damaged, seg->base_offset)) continue;
        if (st.st_nlink == 0) {
            found++;
            int64_t base = seg->base_offset, next = seg->next_offset;
            snprintf(why, sizeof why, "%s was deleted under the broker", seg->path);
            if (restore_segment(l, i) == 0) {
                KIQ_ERROR("%s: %s; written back from the open file (offsets %" PRId64 "..%" PRId64 ")", l->dir, why,
                          base, next - 1);
                continue;
            }
            size_t len = strlen(why);
            snprintf(why + len, sizeof why - len, " and cannot be written back: %s", kiq_error_get());
            /* still readable here until the broker stops */
            segment_lost(l, i, 0, base, false, why);
        } else if ((uint64_t)st.st_size < seg->size) {
            found++;
            uint64_t pos;
            int64_t from;
            if (kiq_segment_whole_within(seg, (uint64_t)st.st_size, &pos, &from) < 0) {
                pos = 0;
                from = seg->base_offset;
            }
            snprintf(why, sizeof why, "%s was cut to %lld bytes under the broker (it held %" PRIu64 ")", seg->path,
                     (long long)st.st_size, seg->size);
            segment_lost(l, i, pos, from, true, why);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return found;
}

int kiq_partition_log_data_loss(kiq_partition_log_t *l, kiq_data_loss_t *out)
{
    pthread_mutex_lock(&l->mu);
    *out = l->loss;
    pthread_mutex_unlock(&l->mu);
    return out->findings > 0;
}

int kiq_partition_log_flush(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int rc = flush_locked(l, NULL);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

void kiq_partition_log_set_flush(kiq_partition_log_t *l, int64_t flush_messages, int64_t flush_ms)
{
    pthread_mutex_lock(&l->mu);
    l->flush_messages = flush_messages > 0 ? flush_messages : INT64_MAX;
    l->flush_ms = flush_ms >= 0 ? flush_ms : INT64_MAX;
    pthread_mutex_unlock(&l->mu);
}

int kiq_partition_log_flush_if_due(kiq_partition_log_t *l, int64_t now_ms, kiq_log_flush_t *done)
{
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    if (l->unflushed > 0 && l->flush_ms != INT64_MAX && now_ms - l->unflushed_since >= l->flush_ms &&
        !kiq_log_dir_offline(l->log_dir))
        rc = flush_locked(l, done) < 0 ? -1 : 1;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int64_t kiq_partition_log_recovery_point(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int64_t v = l->recovery_point;
    pthread_mutex_unlock(&l->mu);
    return v;
}

uint64_t kiq_partition_log_flush_count(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t v = l->flushes;
    pthread_mutex_unlock(&l->mu);
    return v;
}

void kiq_partition_log_set_config(kiq_partition_log_t *l, const kiq_log_config_t *cfg)
{
    pthread_mutex_lock(&l->mu);
    l->cfg.segment_bytes = cfg->segment_bytes;
    l->cfg.index_interval_bytes = cfg->index_interval_bytes;
    l->cfg.segment_index_bytes = cfg->segment_index_bytes;
    pthread_mutex_unlock(&l->mu);
}

void kiq_partition_log_set_retention(kiq_partition_log_t *l, int64_t segment_ms, int64_t retention_ms,
                                     int64_t retention_bytes)
{
    pthread_mutex_lock(&l->mu);
    if (segment_ms != l->segment_ms) l->active_jitter = -1; /* drawn below the old one */
    l->segment_ms = segment_ms;
    l->retention_ms = retention_ms;
    l->retention_bytes = retention_bytes;
    pthread_mutex_unlock(&l->mu);
}

void kiq_partition_log_set_roll_jitter(kiq_partition_log_t *l, int64_t jitter_ms)
{
    pthread_mutex_lock(&l->mu);
    if (jitter_ms != l->segment_jitter_ms) {
        l->segment_jitter_ms = jitter_ms;
        l->active_jitter = -1;
    }
    pthread_mutex_unlock(&l->mu);
}

/* ---- Retention ---- */

/* Under the mutex, after the log start offset moved up: the epochs and
 * the high watermark follow it. */
static void start_moved(kiq_partition_log_t *l)
{
    if (kiq_leader_epoch_cache_truncate_from_start(l->epochs, l->start_offset)) {
        l->epochs_saved = false;
        save_epochs(l);
    }
    if (l->high_watermark < l->start_offset) l->high_watermark = l->start_offset;
    kiq_txn_index_drop_below(l->aborted, l->start_offset);
}

/* Under the mutex: removes the n oldest segments (never the active one)
 * and moves the log start up to the first one left. Readers holding
 * references keep reading the unlinked files; offsets at or above the new
 * start are untouched, so the generation stays. */
static void drop_oldest(kiq_partition_log_t *l, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        kiq_segment_t *seg = l->segs[i];
        KIQ_INFO("%s: deleting segment %" PRId64 " (offsets up to %" PRId64 ", %" PRIu64 " bytes): %s", l->dir,
                 seg->base_offset, seg->next_offset - 1, seg->size, why);
        if (kiq_segment_delete(seg) < 0) KIQ_WARN("deleting a segment of %s: %s", l->dir, kiq_error_get());
    }
    memmove(l->segs, l->segs + n, (l->nsegs - n) * sizeof *l->segs);
    l->nsegs -= n;
    if (l->segs[0]->base_offset > l->start_offset) l->start_offset = l->segs[0]->base_offset;
    if (n && kiq_fsync_dir(l->dir) < 0) KIQ_WARN("deleting segments of %s: %s", l->dir, kiq_error_get());
    start_moved(l);
}

/* Segments (from the oldest, never the active one) lying wholly below the
 * log start offset. */
static size_t below_start(const kiq_partition_log_t *l)
{
    size_t n = 0;
    while (n + 1 < l->nsegs && l->segs[n + 1]->base_offset <= l->start_offset) n++;
    return n;
}

/* The segment's newest timestamp, or its file's mtime when it holds none
 * (Kafka's fallback for batches without timestamps). */
static int64_t segment_newest(const kiq_segment_t *seg)
{
    if (seg->max_timestamp >= 0) return seg->max_timestamp;
    struct stat st;
    if (fstat(seg->fd, &st) < 0) return INT64_MAX;
    return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

int kiq_partition_log_enforce_retention(kiq_partition_log_t *l, int64_t now_ms)
{
    pthread_mutex_lock(&l->mu);
    int deleted = 0;
    if (kiq_log_dir_offline(l->log_dir)) {
        pthread_mutex_unlock(&l->mu);
        return 0;
    }
    size_t n = below_start(l);
    if (n) drop_oldest(l, n, "below the log start offset");
    deleted += (int)n;
    if (l->retention_ms >= 0) {
        n = 0;
        while (n + 1 < l->nsegs && now_ms - segment_newest(l->segs[n]) > l->retention_ms) n++;
        if (n) drop_oldest(l, n, "older than retention.ms");
        deleted += (int)n;
    }
    if (l->retention_bytes >= 0) {
        uint64_t total = 0;
        for (size_t i = 0; i < l->nsegs; i++) total += l->segs[i]->size;
        n = 0;
        while (n + 1 < l->nsegs && total >= (uint64_t)l->retention_bytes + l->segs[n]->size &&
               total > (uint64_t)l->retention_bytes)
            total -= l->segs[n++]->size;
        if (n) drop_oldest(l, n, "partition larger than retention.bytes");
        deleted += (int)n;
    }
    pthread_mutex_unlock(&l->mu);
    return deleted;
}

int kiq_partition_log_advance_start(kiq_partition_log_t *l, int64_t offset)
{
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    int64_t leo = active(l)->next_offset;
    if (offset > leo) {
        kiq_error_set("%s: log start offset %" PRId64 " is beyond the log end %" PRId64, l->dir, offset, leo);
        rc = KIQ_LOG_OUT_OF_RANGE;
    } else if (offset > l->start_offset) {
        KIQ_INFO("%s: log start offset %" PRId64 " -> %" PRId64, l->dir, l->start_offset, offset);
        l->start_offset = offset;
        size_t n = below_start(l);
        if (n)
            drop_oldest(l, n, "below the log start offset");
        else
            start_moved(l);
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* ---- Log cleaner support ---- */

/* Under the mutex: segment i becomes what its file holds now, opened with
 * rebuilt indexes (and sealed unless it is the active one). Readers
 * holding the old one keep reading its own descriptor. 0, or -1 with the
 * old one kept. */
static int reopen_segment(kiq_partition_log_t *l, size_t i)
{
    kiq_segment_t *old = l->segs[i];
    kiq_segment_recovery_t rep = {0};
    kiq_segment_t *seg = kiq_segment_open(l->dir, old->base_offset, &l->cfg, true, &rep);
    if (!seg) return -1;
    seg->log_dir = l->log_dir;
    if (i + 1 < l->nsegs && kiq_segment_seal(seg) < 0) KIQ_WARN("sealing %s: %s", seg->path, kiq_error_get());
    /* Its files are another's now: its close must not touch the paths. */
    old->deleted = true;
    l->segs[i] = seg;
    kiq_segment_unref(old);
    return 0;
}

int kiq_partition_log_closed_segments(kiq_partition_log_t *l, kiq_log_closed_segment_t **out, uint64_t *generation)
{
    *out = NULL;
    pthread_mutex_lock(&l->mu);
    /* The cleaner leaves an offline directory alone. */
    size_t n = kiq_log_dir_offline(l->log_dir) ? 0 : l->nsegs - 1;
    *generation = l->generation;
    if (n > 0) {
        *out = calloc(n, sizeof **out);
        if (!*out) {
            pthread_mutex_unlock(&l->mu);
            return kiq_error_set("out of memory");
        }
        for (size_t i = 0; i < n; i++) {
            kiq_segment_t *seg = l->segs[i];
            (*out)[i] = (kiq_log_closed_segment_t){
                .seg = kiq_segment_ref(seg),
                .base_offset = seg->base_offset,
                .next_offset = seg->next_offset,
                .size = seg->size,
                .max_timestamp = seg->max_timestamp,
            };
        }
    }
    pthread_mutex_unlock(&l->mu);
    return (int)n;
}

void kiq_partition_log_closed_release(kiq_log_closed_segment_t *segs, int n)
{
    for (int i = 0; i < n; i++) kiq_segment_unref(segs[i].seg);
    free(segs);
}

int kiq_partition_log_replace_segment(kiq_partition_log_t *l, kiq_segment_t *old, uint64_t generation)
{
    char swap[PATH_MAX], logp[PATH_MAX], oix[PATH_MAX], tix[PATH_MAX];
    int64_t base = old->base_offset;
    if (kiq_log_segment_path(swap, sizeof swap, l->dir, base, KIQ_SWAP_SUFFIX) < 0 ||
        kiq_log_segment_path(logp, sizeof logp, l->dir, base, KIQ_LOG_SUFFIX) < 0 ||
        kiq_log_segment_path(oix, sizeof oix, l->dir, base, KIQ_INDEX_SUFFIX) < 0 ||
        kiq_log_segment_path(tix, sizeof tix, l->dir, base, KIQ_TIMEINDEX_SUFFIX) < 0)
        return -1;
    pthread_mutex_lock(&l->mu);
    size_t i = 0;
    while (i + 1 < l->nsegs && l->segs[i] != old) i++;
    if (i + 1 >= l->nsegs || l->generation != generation) {
        pthread_mutex_unlock(&l->mu);
        KIQ_INFO("%s: segment %" PRId64 " changed while it was cleaned; dropping the cleaned copy", l->dir, base);
        if (unlink(swap) < 0 && errno != ENOENT) return kiq_error_errno("unlink %s", swap);
        return 1;
    }
    int rc = -1;
    /* Indexes first: a crash after this leaves a log without indexes
     * (rebuilt on open) and the swap, which open then finishes. */
    if (unlink(oix) < 0 && errno != ENOENT) {
        kiq_error_errno("unlink %s", oix);
        goto out;
    }
    if (unlink(tix) < 0 && errno != ENOENT) {
        kiq_error_errno("unlink %s", tix);
        goto out;
    }
    if (rename(swap, logp) < 0) {
        kiq_error_errno("rename %s to %s", swap, logp);
        goto out;
    }
    if (kiq_fsync_dir(l->dir) < 0) KIQ_WARN("swapping a cleaned segment of %s: %s", l->dir, kiq_error_get());
    rc = reopen_segment(l, i);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
}
