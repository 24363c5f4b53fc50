/* A partition log's transactions as opening and appending keep them:
 * the producers rebuilt from the snapshot and the log, the oldest open
 * transaction (the last stable offset), the aborted ones indexed. */
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

void kiq_pl_recompute_unstable(kiq_partition_log_t *l) { l->first_unstable = oldest_unstable(l, -1); }

void kiq_pl_note_aborted(kiq_partition_log_t *l, int64_t producer_id, int64_t txn_first, int64_t marker_offset,
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
    size_t i = kiq_pl_segment_for(l, h->base_offset);
    kiq_pl_note_aborted(l, h->producer_id, txn_first, h->base_offset, l->segs[i]->base_offset);
}

void kiq_pl_rebuild_producers(kiq_partition_log_t *l, bool scan_without_snapshot)
{
    kiq_marker_watch_t watch = {replayed_marker, l};
    int64_t leo = kiq_pl_active(l)->next_offset, from = -1;
    if (kiq_producer_state_delete_snapshots_above(l->dir, leo) < 0 ||
        kiq_producer_state_load_snapshot(l->producers, l->dir, leo, &from) < 0) {
        KIQ_WARN("%s: producer state snapshots: %s", l->dir, kiq_error_get());
        kiq_producer_state_clear(l->producers);
        from = -1;
    }
    if (from < 0 && !scan_without_snapshot) return;
    if (from < l->start_offset) from = l->start_offset;
    for (size_t i = kiq_pl_segment_for(l, from); i < l->nsegs; i++) {
        if (kiq_producer_state_scan_segment(l->producers, l->segs[i], from, &watch) < 0) {
            KIQ_WARN("%s: rebuilding the producer state: %s", l->dir, kiq_error_get());
            break;
        }
    }
    kiq_pl_recompute_unstable(l);
    KIQ_DEBUG("%s: %zu producers known (snapshot at %" PRId64 ", headers scanned up to %" PRId64 ")", l->dir,
              kiq_producer_state_count(l->producers), from, leo);
}
