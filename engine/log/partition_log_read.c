/* Reading a partition log: locating and gathering batches for fetches
 * (copied or as file slices for sendfile), offsets by time. */
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

/* Attempts of a read whose copy raced with a truncation. */
#define READ_ATTEMPTS 3

/* ---- Reading ---- */

/* The last segment whose base offset is <= offset (the first if none). */
size_t kiq_pl_segment_for(const kiq_partition_log_t *l, int64_t offset)
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
    int64_t leo = kiq_pl_active(l)->next_offset;
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
    const size_t first = kiq_pl_segment_for(l, offset);
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

uint64_t kiq_partition_log_generation(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    uint64_t g = l->generation;
    pthread_mutex_unlock(&l->mu);
    return g;
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
