/* The controller quorum on one node (Kafka's KafkaRaftClient): raft/raft.h's
 * rules over the metadata log on disk (quorum_log.h), spoken to the other
 * voters in Kafka's RPCs — Vote, BeginQuorumEpoch, EndQuorumEpoch and
 * Fetch of `__cluster_metadata` — over one kept channel per voter
 * (net/peer_channel.h), and answered here when they ask.
 *
 * The controller writes through it (kiq_quorum_write: its records are
 * proposed and acknowledged once a majority of voters has them) and
 * applies what is committed (kiq_quorum_replay), told by `changed`.
 *
 * Threads: a ticker (core/worker) keeps Raft's time and calls `changed`;
 * the control-plane I/O threads call the handlers; each channel's worker
 * hands its answers in. One mutex guards the Raft state and the log;
 * `changed` runs with it released, so the hook may take its own lock
 * first and then call back in (kiq_quorum_replay, _view). */
#ifndef KIQ_CONTROLLER_QUORUM_H
#define KIQ_CONTROLLER_QUORUM_H

#include <stdbool.h>
#include <stdint.h>

#include "config/listeners.h"
#include "controller/quorum_log.h"
#include "controller/quorum_voters.h"
#include "core/arena.h"
#include "metrics/registry.h"
#include "proto/messages.h"
#include "raft/raft.h"

typedef struct kiq_quorum kiq_quorum_t;

typedef struct kiq_quorum_config {
    int32_t node_id;
    const char *dir; /* the log directory holding __cluster_metadata-0 */
    kiq_voter_t voters[KIQ_RAFT_MAX_VOTERS]; /* controller.quorum.voters */
    int n_voters;
    /* kraft.version 1 (KIP-853), with no voters above: the log's voter
     * sets, the leader found through controller.quorum.bootstrap.servers
     * (ids unused); standalone: a new log starts with this node as its
     * only voter (Kafka's format --standalone) */
    kiq_voter_t bootstrap[KIQ_RAFT_MAX_VOTERS];
    int n_bootstrap;
    bool standalone;
    uint8_t dir_id[16];          /* this node's metadata directory id */
    kiq_quorum_endpoint_t self; /* this node's controller listener */
    /* Kafka's controller.quorum.* settings */
    int64_t election_timeout_ms, fetch_timeout_ms, election_backoff_max_ms, request_timeout_ms;
    /* metadata.log.max.record.bytes.between.snapshots and
     * metadata.log.max.snapshot.interval.ms: a snapshot is due after
     * either, once there is something new to put in it (0: never) */
    int64_t snapshot_max_bytes, snapshot_interval_ms;
    int32_t segment_bytes; /* metadata.log.segment.bytes (0: the log default) */
    kiq_metrics_t *metrics; /* the channels report there (NULL: nowhere) */
    /* TLS and SASL toward the other voters (outlives the quorum); NULL: plaintext */
    const struct kiq_peer_security *security;
    /* The ticker's thread, the quorum's lock released: the high watermark
     * or this node's role moved. */
    void (*changed)(void *ctx);
    /* Under the quorum's lock, so it must not call the quorum: the log
     * grew, the high watermark or the role moved; a held Fetch may have
     * its answer (kiq_quorum_fetch_news). */
    void (*news)(void *ctx);
    void *ctx;
} kiq_quorum_config_t;

/* Opens the log and the quorum state. NULL with the reason. */
kiq_quorum_t *kiq_quorum_new(const kiq_quorum_config_t *cfg);
/* Starts the ticker and the channels. 0 or -1. */
int kiq_quorum_start(kiq_quorum_t *q);
/* A leader resigns (EndQuorumEpoch) when `resign` (a clean stop; a
 * crash, or a kill that plays one, leaves the others to time out), then
 * the ticker and the channels stop and a waiting kiq_quorum_write returns
 * NOT_CONTROLLER; idempotent, NULL is fine. Before the controller that
 * writes through it goes. */
void kiq_quorum_stop(kiq_quorum_t *q, bool resign);
/* Stops, then frees. NULL is fine. */
void kiq_quorum_free(kiq_quorum_t *q);

/* The voters' requests, from a control-plane I/O thread: the answer in
 * resp, its strings and records copied into arena. Fetch is the
 * __cluster_metadata one (kiq_quorum_is_metadata_fetch). */
void kiq_quorum_vote(kiq_quorum_t *q, const kiq_vote_request_t *req, kiq_arena_t *arena, kiq_vote_response_t *resp);
void kiq_quorum_begin_epoch(kiq_quorum_t *q, const kiq_begin_quorum_epoch_request_t *req, kiq_arena_t *arena,
                            kiq_begin_quorum_epoch_response_t *resp);
void kiq_quorum_end_epoch(kiq_quorum_t *q, const kiq_end_quorum_epoch_request_t *req, kiq_arena_t *arena,
                          kiq_end_quorum_epoch_response_t *resp);
/* True when the answer is an idle one (no records, no error, nothing to
 * truncate): the caller may hold it up to the request's max_wait_ms, as
 * Kafka's leader does, and answer again once kiq_quorum_fetch_news. */
bool kiq_quorum_fetch(kiq_quorum_t *q, int16_t version, const kiq_fetch_request_t *req, kiq_arena_t *arena,
                      kiq_fetch_response_t *resp);
/* Whether a Fetch at `offset` answered idle with high watermark `hw` now
 * has news: the log grew past it, the high watermark moved, or this voter
 * no longer leads. */
bool kiq_quorum_fetch_news(kiq_quorum_t *q, int64_t offset, int64_t hw);
void kiq_quorum_describe(kiq_quorum_t *q, const kiq_describe_quorum_request_t *req, kiq_arena_t *arena,
                         kiq_describe_quorum_response_t *resp);
/* Whether a Fetch asks for __cluster_metadata (by name or by its topic id). */
bool kiq_quorum_is_metadata_fetch(int16_t version, const kiq_fetch_request_t *req);

/* The leader's write: records proposed as one batch and waited for until
 * a majority has them (at most timeout_ms). 0 with *last_offset; the
 * Kafka error NOT_CONTROLLER when this node does not lead, or
 * REQUEST_TIMED_OUT (the records may still commit later); the reason in
 * the error slot. */
int kiq_quorum_write(kiq_quorum_t *q, const kiq_metadata_record_t *records, size_t n, int64_t timeout_ms,
                     int64_t *last_offset);
/* The committed records [from, to) (to at most the high watermark). */
int kiq_quorum_replay(kiq_quorum_t *q, int64_t from, int64_t to, kiq_metadata_replay_fn cb, void *ctx);
void kiq_quorum_view(kiq_quorum_t *q, kiq_raft_view_t *out);

/* ---- snapshots (quorum_snapshot.c) */

/* The controller's snapshot of its image, which holds every committed
 * record below `end` (at most the high watermark): written as the
 * snapshot of (end, the epoch of the entry before it), then the log
 * starts there (the segments wholly below deleted). An end at or below
 * the latest snapshot's writes nothing. 0 with *id the latest snapshot,
 * or -1 with the reason. */
int kiq_quorum_snapshot(kiq_quorum_t *q, int64_t end, const kiq_metadata_record_t *records, size_t n,
                        kiq_raft_epoch_end_t *id);
/* Whether a snapshot of the records committed below `applied` is due. */
bool kiq_quorum_snapshot_due(kiq_quorum_t *q, int64_t applied);
/* The end of the snapshot the log starts after, 0 when none. */
int64_t kiq_quorum_log_start(kiq_quorum_t *q);
/* The latest snapshot's records (cb as a replay's); *end its end offset,
 * from which the log replays. 0, or -1 with the reason (a damaged file). */
int kiq_quorum_load_snapshot(kiq_quorum_t *q, kiq_metadata_replay_fn cb, void *ctx, int64_t *end);
/* FetchSnapshot from another voter (this one must lead), as Kafka answers
 * it: a chunk of the snapshot asked for, or SNAPSHOT_NOT_FOUND,
 * POSITION_OUT_OF_RANGE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
 * NOT_LEADER_OR_FOLLOWER. */
void kiq_quorum_fetch_snapshot(kiq_quorum_t *q, const kiq_fetch_snapshot_request_t *req, kiq_arena_t *arena,
                               kiq_fetch_snapshot_response_t *resp);

/* Faults a test injects. A paused voter stops its clock and drops all
 * Raft traffic (a process stopped with SIGSTOP: a leader comes back still
 * believing it leads, until a higher epoch fences it); a cut drops the
 * traffic between this voter and one other, both ways. */
void kiq_quorum_pause(kiq_quorum_t *q, bool paused);
void kiq_quorum_cut(kiq_quorum_t *q, int32_t voter, bool cut);
/* The voter sets (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter;
 * KIP-853), answered by the leader: done(ctx, error) once the new set is
 * committed (0), or with the Kafka error (the reason in the error slot)
 * at once, when the timeout passes (REQUEST_TIMED_OUT) or the leadership
 * goes; from the caller's thread or the quorum's ticker. */
typedef void (*kiq_quorum_change_fn)(void *ctx, int16_t error);
void kiq_quorum_add_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, const kiq_quorum_endpoint_t *ep,
                          int64_t timeout_ms, kiq_quorum_change_fn done, void *ctx);
void kiq_quorum_remove_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, int64_t timeout_ms,
                             kiq_quorum_change_fn done, void *ctx);
/* UpdateRaftVoter: voter id (directory dir) listens at eps[0..n-1] now
 * and speaks kraft.version min_kraft..max_kraft; the set in force is
 * written again with the listener of the name it knew the voter's by (or
 * the first). INVALID_REQUEST for no listener or a range without 1;
 * VOTER_NOT_FOUND unless id with dir votes. */
void kiq_quorum_update_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, const kiq_quorum_endpoint_t *eps,
                             int n, int16_t min_kraft, int16_t max_kraft, int64_t timeout_ms, kiq_quorum_change_fn done,
                             void *ctx);

/* The voter set in force: ids and endpoints (port 0: not known here) of
 * at most KIQ_RAFT_MAX_VOTERS voters; how many. */
int kiq_quorum_voters(kiq_quorum_t *q, int32_t *ids, kiq_quorum_endpoint_t *eps);
/* The voter's control address, false for an id not among the voters. */
bool kiq_quorum_voter_address(const kiq_quorum_t *q, int32_t id, const char **host, int *port);

#endif
