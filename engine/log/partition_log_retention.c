/* A partition log's retention (time, size, the start offset moving up)
 * and the segments the log cleaner reads and replaces. */
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

/* ---- Retention ---- */

/* Under the mutex, after the log start offset moved up: the epochs and
 * the high watermark follow it. */
static void start_moved(kiq_partition_log_t *l)
{
    if (kiq_leader_epoch_cache_truncate_from_start(l->epochs, l->start_offset)) {
        l->epochs_saved = false;
        kiq_pl_save_epochs(l);
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
        /* As Kafka does: an active segment past retention goes too, once
         * every record in it is committed, a fresh one rolled in its place
         * (a test that moves the clock a week ahead sees its data go). */
        kiq_segment_t *active = kiq_pl_active(l);
        if (n + 1 == l->nsegs && active->size > 0 && active->max_timestamp >= 0 &&
            now_ms - active->max_timestamp > l->retention_ms && l->high_watermark >= active->next_offset &&
            kiq_pl_roll(l) == 0)
            n++;
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
    int64_t leo = kiq_pl_active(l)->next_offset;
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
int kiq_pl_reopen_segment(kiq_partition_log_t *l, size_t i)
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
    rc = kiq_pl_reopen_segment(l, i);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
}
