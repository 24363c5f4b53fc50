/* KRaft's rules (KIP-595, PreVote from KIP-996, snapshots from KIP-630,
 * dynamic voters from KIP-853) as
 * a state machine with no I/O: it is given messages and the time, and it
 * answers through the host's callbacks (send a message, append, truncate
 * or read the log, write the quorum state, report a role or a commit). The
 * host turns kiq_raft_msg_t into Kafka's wire RPCs (Vote, BeginQuorumEpoch,
 * EndQuorumEpoch, Fetch of __cluster_metadata) and back; the unit tests
 * drive it with a fake clock and a fake network instead.
 *
 * Kafka's quorum is pull-based: followers Fetch from the leader with
 * (offset, epoch of their last entry); the leader answers with entries, a
 * DivergingEpoch when the two logs differ (the follower truncates), or a
 * snapshot id when the offset is below its log start. The leader's high
 * watermark is the offset a majority of voters has fetched past, and only
 * once an entry of its own epoch is among them (the host appends its
 * epoch's LeaderChangeMessage as soon as it is told it leads).
 *
 * The voters are either fixed by the config (kraft.version 0) or kept in
 * the log (kraft.version 1): an entry may carry a voter set (the host's
 * VotersRecord), and the latest one in the log, committed or not, is the
 * set in force; a truncation past it brings back the one before. Majority,
 * high watermark, elections and check-quorum use the set in force; a node
 * outside it never runs and fetches as an observer, which the leader
 * tracks. One change at a time: a new set is proposed only once the last
 * one committed; a leader the committed set leaves out resigns.
 *
 * A kiq_raft_t is owned by one thread (the host's loop); every call and
 * every callback happens on it. Callbacks must not free the raft. */
#ifndef KIQ_RAFT_RAFT_H
#define KIQ_RAFT_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KIQ_RAFT_MAX_VOTERS 16
#define KIQ_RAFT_MAX_OBSERVERS 16
/* An observer's bootstrap servers are peers -2, -3, ... (as Kafka numbers
 * controller.quorum.bootstrap.servers): the host knows their addresses. */
#define KIQ_RAFT_BOOTSTRAP_ID(i) (-2 - (i))

/* A replica of the quorum: its node id and the directory id of its
 * metadata log (all zero: not known, as with static voters). */
typedef struct kiq_raft_replica_key {
    int32_t id;
    uint8_t dir[16];
} kiq_raft_replica_key_t;

/* A voter set (the host's VotersRecord, less the endpoints it keeps). */
typedef struct kiq_raft_voter_set {
    kiq_raft_replica_key_t voters[KIQ_RAFT_MAX_VOTERS];
    int n;
} kiq_raft_voter_set_t;

/* A voter set written at an offset of the log. */
typedef struct kiq_raft_voters_at {
    int64_t offset;
    kiq_raft_voter_set_t set;
} kiq_raft_voters_at_t;

typedef struct kiq_raft kiq_raft_t;

typedef enum {
    KIQ_RAFT_UNATTACHED,  /* an epoch, no leader known */
    KIQ_RAFT_FOLLOWER,    /* fetching from the epoch's leader */
    KIQ_RAFT_PROSPECTIVE, /* asking for pre-votes; the epoch is unchanged */
    KIQ_RAFT_CANDIDATE,   /* a new epoch, asking for votes */
    KIQ_RAFT_LEADER,
    KIQ_RAFT_RESIGNED,    /* a leader that stepped down, waiting for the next */
} kiq_raft_role_t;

typedef enum {
    KIQ_RAFT_VOTE,
    KIQ_RAFT_VOTE_REPLY,
    KIQ_RAFT_BEGIN_EPOCH,
    KIQ_RAFT_BEGIN_EPOCH_REPLY,
    KIQ_RAFT_END_EPOCH,
    KIQ_RAFT_END_EPOCH_REPLY,
    KIQ_RAFT_FETCH,
    KIQ_RAFT_FETCH_REPLY,
} kiq_raft_msg_type_t;

/* An epoch and the offset its entries end at (exclusive). */
typedef struct kiq_raft_epoch_end {
    int32_t epoch; /* -1: none */
    int64_t end_offset;
} kiq_raft_epoch_end_t;

/* A run of `count` offsets written in one epoch (for the engine a record
 * batch of the metadata log); the data is the host's. */
typedef struct kiq_raft_entry {
    int32_t epoch;
    int32_t count;
    const void *data;
    size_t len;
    const kiq_raft_voter_set_t *voters; /* the set this entry writes, NULL: none */
} kiq_raft_entry_t;

typedef struct kiq_raft_msg {
    kiq_raft_msg_type_t type;
    int32_t from, to;
    int32_t epoch;     /* the sender's; a vote request's: the epoch it asks for */
    int32_t leader_id; /* the sender's leader for that epoch, -1 none */
    int16_t error;     /* replies: a Kafka error code */
    union {
        struct {
            kiq_raft_epoch_end_t last; /* the candidate's last entry's epoch and its log end */
            bool pre_vote;
        } vote;
        struct {
            bool granted;
            bool pre_vote;
        } vote_reply;
        struct {
            int32_t successors[KIQ_RAFT_MAX_VOTERS]; /* who should run first */
            int n_successors;
        } end_epoch;
        struct {
            int64_t offset;
            int32_t last_epoch; /* of the entry before offset */
            uint8_t dir[16];    /* the fetcher's directory id (Fetch v17) */
        } fetch;
        struct {
            int64_t high_watermark;
            int64_t offset; /* where the entries start */
            kiq_raft_epoch_end_t diverging; /* epoch -1: none */
            kiq_raft_epoch_end_t snapshot;  /* epoch -1: none; else fetch this snapshot first */
            const kiq_raft_entry_t *entries;
            int n_entries;
        } fetch_reply;
    };
} kiq_raft_msg_t;

/* What the quorum-state file holds; written before a vote is cast or an
 * epoch adopted, so a restarted voter never votes twice in one epoch. */
typedef struct kiq_raft_quorum_state {
    int32_t epoch;
    int32_t voted_for; /* -1 */
    int32_t leader_id; /* -1 */
} kiq_raft_quorum_state_t;

typedef struct kiq_raft_io {
    void (*send)(void *ctx, const kiq_raft_msg_t *m);
    /* Writes entries at offset (the log's end); 0 or -1. */
    int (*append)(void *ctx, int64_t offset, const kiq_raft_entry_t *e, int n);
    /* Drops everything from end_offset on (never below the high watermark). */
    int (*truncate)(void *ctx, int64_t end_offset);
    /* The entries from offset (a boundary the log returned before), valid
     * until the next callback; 0 entries at the end. */
    int (*read)(void *ctx, int64_t offset, const kiq_raft_entry_t **e, int *n);
    int (*persist)(void *ctx, const kiq_raft_quorum_state_t *s);
    /* A new role; a leader's host appends its epoch's first entry here
     * (kiq_raft_propose), which is what lets the high watermark move. */
    void (*became)(void *ctx, kiq_raft_role_t role, int32_t epoch, int32_t leader_id);
    void (*committed)(void *ctx, int64_t high_watermark);
    /* The leader's log starts after this snapshot: fetch it (FetchSnapshot),
     * then kiq_raft_snapshot_loaded. */
    void (*fetch_snapshot)(void *ctx, int32_t leader_id, kiq_raft_epoch_end_t id);
} kiq_raft_io_t;

typedef struct kiq_raft_config {
    int32_t node_id;
    uint8_t dir[16]; /* this node's directory id */
    int32_t voters[KIQ_RAFT_MAX_VOTERS]; /* controller.quorum.voters; empty: learnt from the log */
    int n_voters;
    /* kraft.version 1: the voter sets the log holds, ascending by offset
     * (copied); the latest is in force */
    const kiq_raft_voters_at_t *voter_sets;
    int n_voter_sets;
    int n_bootstrap; /* controller.quorum.bootstrap.servers: peers KIQ_RAFT_BOOTSTRAP_ID(0..n-1) */
    int64_t election_timeout_ms;      /* controller.quorum.election.timeout.ms */
    int64_t fetch_timeout_ms;         /* controller.quorum.fetch.timeout.ms */
    int64_t election_backoff_max_ms;  /* controller.quorum.election.backoff.max.ms */
    int64_t request_timeout_ms;       /* controller.quorum.request.timeout.ms: a request resent after */
    uint64_t seed;                    /* randomized timeouts, reproducible in tests */
    kiq_raft_quorum_state_t state;    /* as read from the quorum-state file */
    /* The log as the host has it: where it starts (a snapshot's end) with
     * that snapshot's epoch, and each epoch's first offset. */
    kiq_raft_epoch_end_t snapshot;    /* epoch -1: none, the log starts at 0 */
    const kiq_raft_epoch_end_t *epoch_starts; /* {epoch, start offset}, ascending */
    int n_epoch_starts;
    int64_t log_end;
    int64_t now_ms;
    const kiq_raft_io_t *io;
    void *ctx;
} kiq_raft_config_t;

/* A voter or an observer as the leader sees it (DescribeQuorum's ReplicaState). */
typedef struct kiq_raft_voter_view {
    int32_t id;
    uint8_t dir[16];
    int64_t log_end;           /* -1: not heard from in this epoch */
    int64_t last_fetch_ms;     /* -1 */
    int64_t last_caught_up_ms; /* -1 */
} kiq_raft_voter_view_t;

typedef struct kiq_raft_view {
    kiq_raft_role_t role;
    int32_t node_id, epoch, leader_id, voted_for;
    int64_t high_watermark, log_start, log_end;
    kiq_raft_epoch_end_t snapshot; /* the log starts after it; epoch -1: none */
    int32_t last_epoch;
    int votes_granted; /* as candidate or prospective */
    int64_t elections;   /* started here, pre-votes included */
    kiq_raft_voter_view_t voters[KIQ_RAFT_MAX_VOTERS]; /* the set in force */
    int n_voters;
    kiq_raft_voter_view_t observers[KIQ_RAFT_MAX_OBSERVERS]; /* a leader's: those fetching lately */
    int n_observers;
    int kraft_version;       /* 1: the voters come from the log */
    int64_t voters_offset;   /* where the set in force was written, -1: the config's */
} kiq_raft_view_t;

/* NULL with the reason in the error slot (a voter set too large, a log
 * whose epochs go backwards). */
kiq_raft_t *kiq_raft_new(const kiq_raft_config_t *cfg);
void kiq_raft_free(kiq_raft_t *r);

void kiq_raft_tick(kiq_raft_t *r, int64_t now_ms);
/* A message for this node; stale or malformed ones are answered or dropped
 * as the protocol says. */
void kiq_raft_receive(kiq_raft_t *r, int64_t now_ms, const kiq_raft_msg_t *m);
/* The leader appends one entry of its epoch; its first offset in *offset.
 * -1 (NOT_LEADER_OR_FOLLOWER in the error slot) anywhere else. */
int kiq_raft_propose(kiq_raft_t *r, int32_t count, const void *data, size_t len, int64_t *offset);
/* The leader steps down (shutdown): EndQuorumEpoch to the others. */
void kiq_raft_resign(kiq_raft_t *r, int64_t now_ms);
/* The host's log now starts at id (a snapshot taken here, at most the high
 * watermark, or one fetched from the leader, which replaces the log and,
 * with it, the voter sets it held: the snapshot's own set, voters (NULL:
 * none, kraft.version 0), is then the one in force). */
int kiq_raft_snapshot_loaded(kiq_raft_t *r, kiq_raft_epoch_end_t id, const kiq_raft_voter_set_t *voters);
/* A follower's snapshot fetch moved on (a chunk came): the leader is
 * alive, so the fetch timeout starts again, as a Fetch answer does. */
void kiq_raft_snapshot_progress(kiq_raft_t *r, int64_t now_ms);
/* A follower's snapshot fetch failed (the leader has a newer one, or
 * none): it fetches again and learns what to fetch instead. */
void kiq_raft_snapshot_failed(kiq_raft_t *r, int64_t now_ms);

/* Whether the leader may change the voter set now, adding (add) or
 * removing key (directory id all zero: any): 0, or the Kafka error as
 * KIP-853's leader answers, the reason in the error slot —
 * NOT_LEADER_OR_FOLLOWER; UNSUPPORTED_VERSION under kraft.version 0;
 * REQUEST_TIMED_OUT while this epoch has committed nothing, the last
 * change is uncommitted, or the one added is not an observer caught up
 * lately; DUPLICATE_VOTER, VOTER_NOT_FOUND; INVALID_REQUEST to remove the
 * last voter. */
int kiq_raft_voters_check(kiq_raft_t *r, const kiq_raft_replica_key_t *key, bool add);
/* Whether the leader may write the set in force again with voter key's
 * new endpoints (UpdateRaftVoter; the host keeps the endpoints): 0, or as
 * kiq_raft_voters_check but VOTER_NOT_FOUND unless key, directory id
 * included, is a voter of the set in force. */
int kiq_raft_voter_update_check(kiq_raft_t *r, const kiq_raft_replica_key_t *key);
/* The set in force with key added or removed (after a check). */
void kiq_raft_voters_changed(const kiq_raft_t *r, const kiq_raft_replica_key_t *key, bool add,
                             kiq_raft_voter_set_t *out);
/* The leader appends the entry writing `set` (data: the host's batch of
 * one VotersRecord); in force at once, committed by the new set's
 * majority. 0 with *offset, or a Kafka error as kiq_raft_voters_check. */
int kiq_raft_propose_voters(kiq_raft_t *r, const kiq_raft_voter_set_t *set, const void *data, size_t len,
                            int64_t *offset);

/* The voter set written last below offset end (what a snapshot ending
 * there holds): false under kraft.version 0 or where none is. */
bool kiq_raft_voters_before(const kiq_raft_t *r, int64_t end, kiq_raft_voter_set_t *out);
void kiq_raft_view(const kiq_raft_t *r, kiq_raft_view_t *out);
const char *kiq_raft_role_name(kiq_raft_role_t role);

#endif
