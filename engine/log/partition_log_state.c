/* A partition log's state as the others read it (offsets, high
 * watermark, epochs, segments, producers, flushing settings) and its
 * truncation. */
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

int kiq_partition_log_truncate_to(kiq_partition_log_t *l, int64_t offset)
{
    pthread_mutex_lock(&l->mu);
    int rc = 0;
    int64_t leo = kiq_pl_active(l)->next_offset;
    if (offset < l->start_offset || offset > leo) {
        rc = kiq_error_set("%s: cannot truncate to %" PRId64 ", outside [%" PRId64 ", %" PRId64 "]", l->dir, offset,
                           l->start_offset, leo);
        goto out;
    }
    if (offset == leo) goto out;
    l->generation++;
    while (l->nsegs > 1 && kiq_pl_active(l)->base_offset >= offset) {
        kiq_segment_t *seg = kiq_pl_active(l);
        l->nsegs--;
        if (kiq_segment_delete(seg) < 0) KIQ_WARN("truncating %s: %s", l->dir, kiq_error_get());
    }
    l->active_first_ts = KIQ_PL_UNKNOWN_TS;
    rc = kiq_segment_truncate_to(kiq_pl_active(l), offset);
    if (l->recovery_point > kiq_pl_active(l)->next_offset) l->recovery_point = kiq_pl_active(l)->next_offset;
    /* the producers' last batches may be gone: what is left says */
    if (kiq_txn_index_truncate(l->aborted, kiq_pl_active(l)->next_offset) < 0)
        KIQ_WARN("truncating %s: %s", l->dir, kiq_error_get());
    kiq_pl_rebuild_producers(l, true);
    if (kiq_leader_epoch_cache_truncate_from_end(l->epochs, kiq_pl_active(l)->next_offset)) l->epochs_saved = false;
    kiq_pl_save_epochs(l);
    l->last_epoch = kiq_pl_read_last_epoch(l);
    if (l->high_watermark > kiq_pl_active(l)->next_offset) l->high_watermark = kiq_pl_active(l)->next_offset;
    kiq_damaged_ranges_cut(&l->damaged, kiq_pl_active(l)->next_offset);
    if (rc == 0)
        KIQ_INFO("%s: truncated to offset %" PRId64 " (log end was %" PRId64 ")", l->dir, kiq_pl_active(l)->next_offset, leo);
out:
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int kiq_partition_log_end_offset_for_epoch(kiq_partition_log_t *l, int32_t epoch, int32_t *out_epoch,
                                           int64_t *out_end_offset)
{
    pthread_mutex_lock(&l->mu);
    kiq_leader_epoch_cache_end_offset_for(l->epochs, epoch, kiq_pl_active(l)->next_offset, out_epoch, out_end_offset);
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
    int64_t leo = kiq_pl_active(l)->next_offset;
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
    int64_t v = kiq_pl_active(l)->next_offset;
    pthread_mutex_unlock(&l->mu);
    return v;
}

void kiq_partition_log_positions(kiq_partition_log_t *l, kiq_log_positions_t *out)
{
    pthread_mutex_lock(&l->mu);
    out->start_offset = l->start_offset;
    out->end_offset = kiq_pl_active(l)->next_offset;
    out->high_watermark = l->high_watermark;
    out->last_stable_offset = kiq_pl_lso(l);
    out->last_batch_epoch = l->last_epoch;
    out->damaged = l->damaged.n > 0;
    pthread_mutex_unlock(&l->mu);
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

int kiq_partition_log_flush(kiq_partition_log_t *l)
{
    pthread_mutex_lock(&l->mu);
    int rc = kiq_pl_flush_locked(l, NULL);
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
        rc = kiq_pl_flush_locked(l, done) < 0 ? -1 : 1;
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
