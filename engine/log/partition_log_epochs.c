/* A partition log's leader epochs: the cache checkpointed beside the
 * segments, rebuilt from the batches when it is missing or behind, and the
 * epoch of the last batch. */
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

/* Under the mutex: writes the leader-epoch checkpoint when it is behind
 * the cache. A failure is logged and retried at the next change or close:
 * the batches carry their epochs, so a lost checkpoint is rebuilt. */
void kiq_pl_save_epochs(kiq_partition_log_t *l)
{
    if (l->epochs_saved || kiq_log_dir_offline(l->log_dir)) return;
    if (kiq_leader_epoch_cache_save(l->epochs, l->dir) < 0) {
        KIQ_WARN("%s: leader epoch checkpoint: %s", l->dir, kiq_error_get());
        return;
    }
    l->epochs_saved = true;
}

bool kiq_pl_assign_epoch(kiq_partition_log_t *l, int32_t epoch, int64_t offset)
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
    kiq_pl_assign_epoch(ctx, h->partition_leader_epoch, h->base_offset);
}

static void keep_epoch(const kiq_batch_header_t *h, void *ctx) { *(int32_t *)ctx = h->partition_leader_epoch; }

int32_t kiq_pl_read_last_epoch(kiq_partition_log_t *l)
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

void kiq_pl_load_epochs(kiq_partition_log_t *l)
{
    int rc = kiq_leader_epoch_cache_load(l->epochs, l->dir);
    if (rc < 0) KIQ_WARN("%s: %s; rebuilding the leader epochs from the log", l->dir, kiq_error_get());
    l->epochs_saved = rc == 0;
    if (kiq_leader_epoch_cache_truncate_from_end(l->epochs, kiq_pl_active(l)->next_offset) ||
        kiq_leader_epoch_cache_truncate_from_start(l->epochs, l->start_offset))
        l->epochs_saved = false;
    l->last_epoch = kiq_pl_read_last_epoch(l);
    size_t n = kiq_leader_epoch_cache_count(l->epochs);
    if (rc != 0 || l->last_epoch > kiq_leader_epoch_cache_latest_epoch(l->epochs)) {
        int64_t from = n ? kiq_leader_epoch_cache_entry(l->epochs, n - 1).start_offset : l->start_offset;
        for (size_t i = kiq_pl_segment_for(l, from); i < l->nsegs; i++) {
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
    kiq_pl_save_epochs(l);
}
