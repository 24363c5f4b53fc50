/* A partition log's health: its directory, what the scrubber found
 * damaged, segment files lost or cut under it (written back or recorded),
 * and the data loss kept until an operator acknowledges it. */
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

/* Under the mutex: segment i's file was deleted under the broker, but its
 * bytes are still open here: they are written back under its name (never
 * over a file put there meanwhile) and the segment reopened from it, so
 * nothing is lost. 0, or -1 when they could not be. */
static int restore_segment(kiq_partition_log_t *l, size_t i)
{
    kiq_segment_t *seg = l->segs[i];
    char tmp[PATH_MAX], path[PATH_MAX];
    snprintf(path, sizeof path, "%s", seg->path);
    if (kiq_log_segment_path(tmp, sizeof tmp, l->dir, seg->base_offset, KIQ_PL_RESTORED_SUFFIX) < 0 ||
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
    if (kiq_pl_reopen_segment(l, i) < 0) return -1;
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
    if (i + 1 == l->nsegs && kiq_pl_roll(l) < 0)
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
    kiq_pl_note_loss(l, from, to, "%s", why);
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
