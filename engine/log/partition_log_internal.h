/* What the partition log's files share (partition_log.c: opening,
 * appending, flushing, truncation; partition_log_read.c: reading;
 * partition_log_health.c: damage, lost files, data loss;
 * partition_log_retention.c: retention and the cleaner's segments): the
 * log itself and the helpers more than one of them uses (partition_log_
 * txn.c, _epochs.c and _state.c hold the transactions, the leader epochs
 * and the state as read). Only they include it. */
#ifndef KIQ_LOG_PARTITION_LOG_INTERNAL_H
#define KIQ_LOG_PARTITION_LOG_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "log/damaged_ranges.h"
#include "log/data_loss.h"
#include "log/leader_epoch_cache.h"
#include "log/partition_log.h"
#include "log/producer_state.h"
#include "log/txn_index.h"

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

/* A segment being written back from the descriptor still open on it
 * (health); opening finishes or drops such files. */
#define KIQ_PL_RESTORED_SUFFIX ".log.restored"

/* active_first_ts before it is read back */
#define KIQ_PL_UNKNOWN_TS INT64_MIN

static inline kiq_segment_t *kiq_pl_active(const kiq_partition_log_t *l) { return l->segs[l->nsegs - 1]; }

/* The last stable offset: the high watermark, or the first offset of the
 * earliest open transaction below it. */
static inline int64_t kiq_pl_lso(const kiq_partition_log_t *l)
{
    return l->first_unstable >= 0 && l->first_unstable < l->high_watermark ? l->first_unstable : l->high_watermark;
}

/* The helpers they share, each called under the log's mutex. */

/* The last segment whose base offset is <= offset (the first if none). */
size_t kiq_pl_segment_for(const kiq_partition_log_t *l, int64_t offset);
/* Closes the active segment and opens the next at the log end. */
int kiq_pl_roll(kiq_partition_log_t *l);
/* Segment i opened again from its files (after they changed under it). */
int kiq_pl_reopen_segment(kiq_partition_log_t *l, size_t i);
/* Records the loss of [from, to] in the directory, with the reason. */
void kiq_pl_note_loss(kiq_partition_log_t *l, int64_t from, int64_t to, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The leader epoch checkpoint written when it changed. */
void kiq_pl_save_epochs(kiq_partition_log_t *l);

/* Under the mutex: records that epoch starts at offset; true when that is
 * a new entry. */
bool kiq_pl_assign_epoch(kiq_partition_log_t *l, int32_t epoch, int64_t offset);
/* Under the mutex: fsyncs the active segment (earlier ones were synced
 * when rolled) and moves the recovery point to the LEO; *done (may be
 * NULL) says from where and when. */
int kiq_pl_flush_locked(kiq_partition_log_t *l, kiq_log_flush_t *done);
/* Under the mutex (or before the log is shared): the cache from the
 * checkpoint, cut to the log's offsets; rebuilt from the batch headers
 * when the file is missing or malformed, and completed from them when the
 * log holds a newer epoch than the file (a crash between an append and
 * the checkpoint write). */
void kiq_pl_load_epochs(kiq_partition_log_t *l);
/* Under the mutex: producer_id's transaction from txn_first to the abort
 * marker at marker_offset (in segment segment_base) is remembered; the
 * producer's own transaction must be over in the table already. */
void kiq_pl_note_aborted(kiq_partition_log_t *l, int64_t producer_id, int64_t txn_first, int64_t marker_offset,
                         int64_t segment_base);
/* Under the mutex: the epoch of the last batch in the log, or the cache's
 * latest when there is none (or it cannot be read). */
int32_t kiq_pl_read_last_epoch(kiq_partition_log_t *l);
/* Under the mutex (or before the log is shared): the producers' state from
 * the newest snapshot at or below the LEO plus the batch headers after it,
 * or from every batch header when there is no snapshot and
 * scan_without_snapshot. A failure leaves what was rebuilt so far, logged:
 * the log itself is sound, and the worst outcome is a retried batch not
 * recognised as a duplicate. */
void kiq_pl_rebuild_producers(kiq_partition_log_t *l, bool scan_without_snapshot);
void kiq_pl_recompute_unstable(kiq_partition_log_t *l);

#endif
