/* What raft.c (the roles, elections, the log and its RPCs) and
 * raft_voters.c (the voter set in force, the leader's view of voters and
 * observers, the majority and high watermark it sets, KIP-853's voter
 * changes) share. Everything here is owned by the host's loop thread, as
 * the kiq_raft_t it belongs to (raft.h). */
#ifndef KIQ_RAFT_RAFT_INTERNAL_H
#define KIQ_RAFT_RAFT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "raft/raft.h"

/* The leader's view of one voter (or observer) in its epoch. */
typedef struct voter {
    int32_t id;
    uint8_t dir[16];
    int64_t log_end, last_fetch_ms, last_caught_up_ms;
    bool begin_acked;   /* answered BeginQuorumEpoch */
    int64_t begin_sent; /* when it was last sent, -1 never */
    /* as candidate or prospective: its answer in this round */
    bool answered, granted;
} voter_t;

/* Owned by the host's loop thread (raft.h). */
struct kiq_raft {
    int32_t node_id;
    uint8_t dir[16];
    voter_t voters[KIQ_RAFT_MAX_VOTERS]; /* the set in force, each with its state */
    int n_voters;
    voter_t observers[KIQ_RAFT_MAX_OBSERVERS]; /* a leader's: non-voters that fetched */
    int n_observers;
    kiq_raft_voter_set_t static_set;   /* controller.quorum.voters */
    kiq_raft_voters_at_t *sets;        /* the log's voter sets, ascending; the last in force */
    int n_sets, cap_sets;
    int n_bootstrap;
    int64_t election_timeout, fetch_timeout, backoff_max, request_timeout;
    const kiq_raft_io_t *io;
    void *ctx;
    uint64_t rng;
    int64_t now;

    kiq_raft_role_t role;
    int32_t epoch, voted_for, leader_id;

    /* the log: its epochs' first offsets, ascending */
    kiq_raft_epoch_end_t *starts;
    int n_starts, cap_starts;
    kiq_raft_epoch_end_t snapshot;
    int64_t log_start, log_end, hw;

    int64_t deadline;      /* the role's timeout (election, fetch, check quorum) */
    bool backing_off;      /* a lost election waits before the next */
    int failed_elections;  /* in a row, for the backoff */
    int64_t elections;
    bool fetch_in_flight, snapshot_pending;
    int64_t fetch_sent_at;
    int probe;             /* an observer's next voter to ask for the leader */
    int32_t lost_leader;   /* the epoch's leader this node timed out on, -1 */
    int64_t epoch_start;   /* a leader's log end when it took the epoch */
    int64_t leader_since;
};

/* raft_voters.c: the set in force's entry for id, NULL if id votes not. */
voter_t *kiq_raft_voter_of(kiq_raft_t *r, int32_t id);
bool kiq_raft_is_voter(kiq_raft_t *r);
/* The voters array follows the set in force (after a set was pushed or
 * truncated away). */
void kiq_raft_apply_set(kiq_raft_t *r);
/* A voter set written at offset, the newest (in force once applied). */
void kiq_raft_push_set(kiq_raft_t *r, int64_t offset, const kiq_raft_voter_set_t *set);
int kiq_raft_majority(const kiq_raft_t *r);
/* The leader's high watermark from its voters' log ends; a leader the
 * committed set leaves out resigns. */
void kiq_raft_update_hw(kiq_raft_t *r);
/* The leader's entry for a non-voter that fetches, NULL for a bootstrap id. */
voter_t *kiq_raft_track_observer(kiq_raft_t *r, int32_t id, const uint8_t *dir);

/* raft.c: appends n entries at the log end (0 or -1); a leader steps down. */
int kiq_raft_append(kiq_raft_t *r, const kiq_raft_entry_t *e, int n);
void kiq_raft_become_resigned(kiq_raft_t *r);

#endif
