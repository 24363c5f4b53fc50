/* The controller quorum's log on disk, as Kafka keeps it: the partition
 * `__cluster_metadata-0` (RecordBatch v2 batches of metadata records, each
 * stamped with the Raft epoch it was written in as its partition leader
 * epoch) and, beside it, the `quorum-state` file (the epoch, the vote cast
 * in it and the leader known). What raft/raft.h's host needs of its log:
 * entries (one batch each) appended at the log end, cut back, read from an
 * offset, and the epochs the log holds.
 *
 * Owned by the quorum's thread (every call under its lock). */
#ifndef KIQ_CONTROLLER_QUORUM_LOG_H
#define KIQ_CONTROLLER_QUORUM_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "controller/metadata_record.h"
#include "log/log_names.h"
#include "proto/writer.h"
#include "raft/raft.h"

#define KIQ_METADATA_PARTITION_DIR "__cluster_metadata-0"

/* Called by a replay for each record in order; the record's arrays and
 * strings live only during the call. Returns 0 to go on; anything else
 * stops the replay, which then returns it. */
typedef int (*kiq_metadata_replay_fn)(void *ctx, int64_t offset, const kiq_metadata_record_t *r);

typedef struct kiq_quorum_log kiq_quorum_log_t;

/* Opens (creating if needed) `<dir>/__cluster_metadata-0` and reads its
 * quorum-state file (none: epoch 0, no vote, no leader). A torn tail is
 * cut off as after an unclean shutdown. The latest snapshot that reads
 * whole is where the log starts; a damaged one is reported and passed
 * over for the one before, as long as the log still holds every entry
 * after that one. NULL with the reason (also: no snapshot the log can
 * continue from). */
kiq_quorum_log_t *kiq_quorum_log_open(const char *dir, const int32_t *voters, int n_voters);
void kiq_quorum_log_free(kiq_quorum_log_t *l);

/* The log as raft/raft.h's config wants it: the snapshot it starts after
 * (the latest whole one found at the open; none: epoch -1), each epoch's
 * first offset (valid until the next call here), its end and the quorum
 * state. */
void kiq_quorum_log_fill(kiq_quorum_log_t *l, kiq_raft_config_t *cfg);
/* metadata.log.segment.bytes: the roll size from the next append. */
int kiq_quorum_log_set_segment_bytes(kiq_quorum_log_t *l, int32_t bytes);
/* The directory `__cluster_metadata-0`, where the snapshots are too. */
const char *kiq_quorum_log_dir(const kiq_quorum_log_t *l);
/* The snapshot the log starts after (epoch -1: none). */
kiq_raft_epoch_end_t kiq_quorum_log_snapshot(const kiq_quorum_log_t *l);
/* The epoch of the entry just before end (at most the log end, at least
 * the snapshot's end). */
int32_t kiq_quorum_log_epoch_before(kiq_quorum_log_t *l, int64_t end);
/* Bytes of the log's segments. */
uint64_t kiq_quorum_log_size(kiq_quorum_log_t *l);
/* Snapshot id was written here (at most the log end): the log now starts
 * at its end offset, the segments wholly below it are deleted, and so are
 * the snapshots before the previous one. */
int kiq_quorum_log_snapshot_taken(kiq_quorum_log_t *l, kiq_raft_epoch_end_t id);
/* Snapshot id was fetched from the leader: it replaces the whole log,
 * which starts empty at its end offset. */
int kiq_quorum_log_reset_to(kiq_quorum_log_t *l, kiq_raft_epoch_end_t id);

/* Whole batches at offset (the log end): each entry's data is one batch,
 * stamped here with its offset and epoch (a leader's new batch) or already
 * carrying them (a follower's copy of the leader's). Durable on return. */
int kiq_quorum_log_append(kiq_quorum_log_t *l, int64_t offset, const kiq_raft_entry_t *e, int n);
int kiq_quorum_log_truncate(kiq_quorum_log_t *l, int64_t end);
/* The batches from offset, at most about max_bytes (one at least), as
 * entries whose data stays valid until the next call here. */
int kiq_quorum_log_read(kiq_quorum_log_t *l, int64_t offset, int32_t max_bytes, const kiq_raft_entry_t **e, int *n);
/* Writes the quorum-state file (a temporary file renamed over it, synced). */
int kiq_quorum_log_persist(kiq_quorum_log_t *l, const kiq_raft_quorum_state_t *s);
int64_t kiq_quorum_log_end(kiq_quorum_log_t *l);

/* The metadata records [from, to) in offset order (control batches
 * skipped; records of an unknown type skipped with a warning; one that
 * does not decode stops the replay with its offset). */
int kiq_quorum_log_replay(kiq_quorum_log_t *l, int64_t from, int64_t to, kiq_metadata_replay_fn cb, void *ctx);

/* Each control batch of the log (after its snapshot) in offset order, to cb with its base
 * offset (the quorum learns its voter sets); cb's nonzero stops it. 0 or
 * -1 with the reason. */
int kiq_quorum_log_scan_control(kiq_quorum_log_t *l, int (*cb)(void *ctx, int64_t offset, const uint8_t *batch,
                                                               size_t len),
                                void *ctx);

/* The metadata records of one data batch at offsets [from, to), as a
 * replay gives them. */
int kiq_quorum_log_replay_batch(const uint8_t *batch, size_t len, int64_t from, int64_t to, kiq_metadata_replay_fn cb,
                                void *ctx);

/* One batch of the records, for kiq_raft_propose (its offset and epoch
 * are stamped at the append). */
int kiq_quorum_log_batch(const kiq_metadata_record_t *records, size_t n, kiq_wr_t *out);

#endif
