/* A partition's leader-epoch cache, as Kafka keeps it: per leader epoch
 * that wrote to the log, the first offset written in it, in increasing
 * order of both. A follower compares it with the leader's to find where
 * its log diverges (OffsetForLeaderEpoch, Fetch v12 diverging_epoch).
 *
 * Persisted as `leader-epoch-checkpoint` in the partition directory, in
 * Kafka's text format: a version line "0", a count line, then one
 * "epoch startOffset" line per entry, oldest first.
 *
 * The cache is owned by a partition log and guarded by that log's mutex:
 * none of the functions below lock. */
#ifndef KIQ_LOG_LEADER_EPOCH_CACHE_H
#define KIQ_LOG_LEADER_EPOCH_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KIQ_LEADER_EPOCH_CHECKPOINT "leader-epoch-checkpoint"
/* Kafka's answers when no epoch or end offset is known. */
#define KIQ_UNDEFINED_EPOCH (-1)
#define KIQ_UNDEFINED_EPOCH_OFFSET (-1)

/* One epoch and the first offset written in it. A value. */
typedef struct kiq_epoch_entry {
    int32_t epoch;
    int64_t start_offset;
} kiq_epoch_entry_t;

typedef struct kiq_leader_epoch_cache kiq_leader_epoch_cache_t;

kiq_leader_epoch_cache_t *kiq_leader_epoch_cache_new(void);
void kiq_leader_epoch_cache_free(kiq_leader_epoch_cache_t *c);
void kiq_leader_epoch_cache_clear(kiq_leader_epoch_cache_t *c);
size_t kiq_leader_epoch_cache_count(const kiq_leader_epoch_cache_t *c);
/* The i-th entry, oldest first; i < count. */
kiq_epoch_entry_t kiq_leader_epoch_cache_entry(const kiq_leader_epoch_cache_t *c, size_t i);

/* Records that epoch started at start_offset: appended when epoch is
 * higher than the latest one and start_offset not below the latest
 * entry's. The latest epoch again keeps its first start offset (silently:
 * every append of an epoch comes here); a lower epoch or an offset going
 * backwards is ignored with a warning, as Kafka did before it truncated
 * such conflicts. A negative epoch (a batch without one) is ignored.
 * 1 when an entry was added, 0 when nothing changed, -1 out of memory. */
int kiq_leader_epoch_cache_assign(kiq_leader_epoch_cache_t *c, int32_t epoch, int64_t start_offset);

/* The latest epoch, or KIQ_UNDEFINED_EPOCH when the cache is empty. */
int32_t kiq_leader_epoch_cache_latest_epoch(const kiq_leader_epoch_cache_t *c);

/* Kafka's endOffsetFor, the answer to OffsetForLeaderEpoch, for a log
 * whose end offset is leo:
 * - the latest epoch: (it, leo);
 * - an epoch below the first known: (epoch, the first entry's start
 *   offset) — what is before was removed from the log, and the follower
 *   replicates from there;
 * - an epoch between known ones: (the largest known epoch <= epoch, the
 *   start offset of the next higher one), the end of that epoch here;
 * - KIQ_UNDEFINED_EPOCH, an epoch above the latest, or an empty cache:
 *   (KIQ_UNDEFINED_EPOCH, KIQ_UNDEFINED_EPOCH_OFFSET). */
void kiq_leader_epoch_cache_end_offset_for(const kiq_leader_epoch_cache_t *c, int32_t epoch, int64_t leo,
                                           int32_t *out_epoch, int64_t *out_end_offset);

/* The epoch offset was written in: that of the last entry whose start
 * offset is <= offset; KIQ_UNDEFINED_EPOCH when offset is below them all. */
int32_t kiq_leader_epoch_cache_epoch_for_offset(const kiq_leader_epoch_cache_t *c, int64_t offset);

/* After the log was truncated to end at offset: drops the entries whose
 * start offset is >= offset. True when something was dropped. */
bool kiq_leader_epoch_cache_truncate_from_end(kiq_leader_epoch_cache_t *c, int64_t offset);
/* After the log start moved up to offset: the entry covering offset stays
 * with its start offset raised to it, the older ones are dropped. True
 * when something changed. */
bool kiq_leader_epoch_cache_truncate_from_start(kiq_leader_epoch_cache_t *c, int64_t offset);

/* Writes `<dir>/leader-epoch-checkpoint`: a temp file, fsynced, renamed
 * over it, then the directory fsynced, so a crash leaves the old or the
 * new file whole. 0 or -1. */
int kiq_leader_epoch_cache_save(const kiq_leader_epoch_cache_t *c, const char *dir);
/* Replaces the cache with `<dir>/leader-epoch-checkpoint`. 0 when loaded;
 * 1 when there is no such file; -1 when it is unreadable or malformed
 * (bad version, count not matching the lines, an entry that does not
 * parse, negative values, epochs or offsets going backwards), the reason
 * in the error slot. On anything but 0 the cache is left empty. */
int kiq_leader_epoch_cache_load(kiq_leader_epoch_cache_t *c, const char *dir);

#endif
