/* Metadata snapshots on disk, as Kafka's KRaft writes them (KIP-630): the
 * file `<end offset, 20 digits>-<epoch, 10 digits>.checkpoint` beside the
 * `__cluster_metadata-0` log, holding RecordBatch v2 batches with offsets
 * from 0: a control batch with the SnapshotHeaderRecord (control type 3)
 * (and, under kraft.version 1, the KRaftVersionRecord and VotersRecord of
 * the voter set in force there, as Kafka writes them after the header),
 * the metadata records that rebuild the image at that end offset, and a
 * control batch with the SnapshotFooterRecord (type 4). The id (end
 * offset, epoch) names the log entries the snapshot replaces: every one
 * below the end offset, the last of them written in that epoch.
 *
 * A snapshot is written whole to `<name>.part`, synced, then renamed; one
 * fetched from the leader (FetchSnapshot) is written there chunk by chunk
 * and renamed once complete and checked.
 *
 * Pure file functions: any thread, on paths and buffers the caller owns;
 * the quorum calls them under its lock. */
#ifndef KIQ_CONTROLLER_METADATA_SNAPSHOT_H
#define KIQ_CONTROLLER_METADATA_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "controller/quorum_log.h"
#include "controller/quorum_voters.h"
#include "core/arena.h"
#include "raft/raft.h"

#define KIQ_METADATA_SNAPSHOT_SUFFIX ".checkpoint"
#define KIQ_METADATA_SNAPSHOT_PART_SUFFIX ".checkpoint.part"

/* Kafka's control record types of a snapshot's first and last batch. */
#define KIQ_CONTROL_SNAPSHOT_HEADER 3
#define KIQ_CONTROL_SNAPSHOT_FOOTER 4

/* "<dir>/<end offset>-<epoch><suffix>" into buf; -1 when it does not fit. */
int kiq_snapshot_path(char *buf, size_t n, const char *dir, kiq_raft_epoch_end_t id, const char *suffix);
/* The snapshots in dir (their names only; none checked), ascending by end
 * offset, at most max into out; how many there are, or -1 with the reason.
 * Left-over `.part` files (a write or a fetch cut short) are removed. */
int kiq_snapshot_list(const char *dir, kiq_raft_epoch_end_t *out, int max);

/* A snapshot's voter set and its endpoints (kraft.version 1). */
typedef struct kiq_snapshot_voters {
    kiq_raft_voter_set_t set;
    kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
} kiq_snapshot_voters_t;

/* Writes records as snapshot id in dir (durable on return, an existing one
 * replaced), voters (NULL: none, kraft.version 0) in its header batch.
 * last_timestamp: the append time of the last entry it holds. */
int kiq_snapshot_write(const char *dir, kiq_raft_epoch_end_t id, int64_t last_timestamp,
                       const kiq_snapshot_voters_t *voters, const kiq_metadata_record_t *records, size_t n);
/* Checks a snapshot's bytes — whole batches with good CRCs, offsets from 0
 * without gaps, the header first, the footer last and nothing after it —
 * and calls cb for each metadata record in order (cb may be NULL: a check
 * only; the offset given is the end offset minus one, where the state it
 * rebuilds stands). 0, what cb returned, or -1 with the reason. */
int kiq_snapshot_parse(const uint8_t *p, size_t len, kiq_raft_epoch_end_t id, kiq_metadata_replay_fn cb, void *ctx);
/* kiq_snapshot_parse over snapshot id's file in dir; the reason names it. */
int kiq_snapshot_load(const char *dir, kiq_raft_epoch_end_t id, kiq_metadata_replay_fn cb, void *ctx);
/* The voter set snapshot id holds: 1 with *out, 0 when it holds none
 * (kraft.version 0), -1 with the reason. */
int kiq_snapshot_voters(const char *dir, kiq_raft_epoch_end_t id, kiq_snapshot_voters_t *out);
/* Removes snapshot id's file. */
int kiq_snapshot_remove(const char *dir, kiq_raft_epoch_end_t id);

/* The leader's answer to a FetchSnapshot: up to max_bytes of snapshot id
 * from position, copied into arena, and the snapshot's size. 0, or the
 * Kafka error SNAPSHOT_NOT_FOUND (no such file) or POSITION_OUT_OF_RANGE
 * (position negative or not below the size), or -1 (an I/O error), each
 * with the reason. */
int kiq_snapshot_read_chunk(const char *dir, kiq_raft_epoch_end_t id, int64_t position, int32_t max_bytes,
                            kiq_arena_t *arena, const uint8_t **data, int32_t *len, int64_t *size);
/* A follower's fetched chunk, written at position of `<name>.part`. */
int kiq_snapshot_part_write(const char *dir, kiq_raft_epoch_end_t id, int64_t position, const void *data,
                            size_t len);
/* The fetch is complete: the part file must be `size` bytes and a whole
 * snapshot (kiq_snapshot_parse); then it is synced and renamed into place.
 * Otherwise it is removed and -1 returned with the reason. */
int kiq_snapshot_part_finish(const char *dir, kiq_raft_epoch_end_t id, int64_t size);

#endif
