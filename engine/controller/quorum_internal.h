/* What the controller quorum's files share (quorum.c: the lifecycle,
 * raft's callbacks, the ticker and the controller's calls; quorum_rpc.c:
 * the Raft RPCs on the wire, both ways; quorum_snapshot.c: snapshots
 * written, served and fetched); see quorum.h. */
#ifndef KIQ_CONTROLLER_QUORUM_INTERNAL_H
#define KIQ_CONTROLLER_QUORUM_INTERNAL_H

#include <pthread.h>

#include "controller/quorum.h"
#include "core/worker.h"
#include "net/peer_channel.h"

/* A follower's Fetch may wait at the leader for news a quarter of the
 * fetch timeout (Kafka's raft: 500 of 2000 ms), so an idle leader still
 * answers well within it; one answered with nothing new or refused is
 * asked again FETCH_IDLE_MS later, so a paused or refusing leader is not
 * asked in a loop. */
#define FETCH_IDLE_MS 5
#define FETCH_MAX_BYTES (1 << 20)
/* What a follower asks of a snapshot at once (Kafka's raft: 8 MiB). */
#define SNAPSHOT_CHUNK_BYTES (1 << 20)

/* Another node this one talks to: a voter, an observer's leader, or a
 * bootstrap server (a negative id). Two channels, made at its first
 * message: one for elections, one for fetches (a fetch never waits
 * behind a vote, nor a vote behind a fetch). */
#define MAX_PEERS (2 * KIQ_RAFT_MAX_VOTERS + 8)
typedef struct peer {
    int32_t id;
    kiq_quorum_endpoint_t ep; /* port 0: not known yet */
    kiq_peer_channel_t *rpc, *fetch;
    bool cut; /* a test dropped the traffic with it, both ways */
} peer_t;

struct kiq_quorum {
    kiq_quorum_config_t cfg;
    kiq_worker_t *ticker; /* set and cleared under mu (answers poke it), stopped outside it */
    pthread_mutex_t mu; /* guards everything below */
    peer_t peers[MAX_PEERS];
    int n_peers;
    /* the voter change waiting for its commit (one at a time) */
    struct {
        bool active;
        int64_t offset, deadline_ms;
        int32_t epoch;
        kiq_quorum_change_fn done;
        void *ctx;
    } change;
    pthread_cond_t moved; /* the high watermark or the role moved */
    kiq_raft_t *raft;
    kiq_quorum_log_t *log;
    int64_t hw;
    kiq_raft_role_t role;
    int32_t epoch, leader;
    kiq_raft_msg_t *reply; /* a handler's answer, while it holds mu */
    bool replied;
    /* a follower's next fetch, held after an empty answer */
    bool fetch_held, last_fetch_empty;
    kiq_raft_msg_t held_fetch;
    int64_t fetch_due_ms;
    /* what the ticker told the hook last */
    int64_t told_hw;
    kiq_raft_role_t told_role;
    int32_t told_epoch;
    bool stopping;
    /* the network as a test breaks it: a paused voter neither ticks nor
     * talks (a stopped process); traffic with a cut peer is dropped both
     * ways, as a lost message is */
    bool paused;
    /* what makes the next snapshot due (the controller writes it) */
    uint64_t bytes_since_snapshot;
    int64_t last_snapshot_ms;
    /* a follower's fetch of the leader's snapshot (FetchSnapshot) */
    struct {
        bool active, in_flight;
        int32_t leader, epoch;
        kiq_raft_epoch_end_t id;
        int64_t position, size; /* size -1 until the leader said */
        int64_t due_ms;         /* the next request, after a failed one */
        uint64_t generation;    /* answers to a dropped fetch are ignored */
    } snap;
};

int64_t kiq_quorum_now_ms(void);
/* Under mu: the peer id names, NULL if none; its channels, made at the
 * first use (0, or -1 where its address is not known or no channel could
 * be made). */
peer_t *kiq_quorum_peer_of(kiq_quorum_t *q, int32_t id);
/* Under mu: where id listens, as a voter set, a bootstrap list or a
 * leader's answer said; a known address stays (its channels are made). */
void kiq_quorum_learn_peer(kiq_quorum_t *q, int32_t id, const char *name, const char *host, int port);
/* Under mu: id's endpoint as known here (this node's own listener for
 * itself; port 0: none known). */
void kiq_quorum_endpoint_of(kiq_quorum_t *q, int32_t id, kiq_quorum_endpoint_t *out);
int kiq_quorum_peer_channels(kiq_quorum_t *q, peer_t *p);
/* s copied into a. */
kiq_str_t kiq_quorum_astr(kiq_arena_t *a, const char *s);
/* n zeroed bytes of a. */
void *kiq_quorum_zalloc(kiq_arena_t *a, size_t n);
bool kiq_quorum_is_metadata_topic(kiq_str_t name);

/* quorum_rpc.c: the request for m (in a; NULL for a reply, which is no
 * request), with its API key and the size of its generated response. */
void *kiq_quorum_request_of(const kiq_raft_msg_t *m, int32_t fetch_wait_ms, kiq_arena_t *a, int16_t *api_key,
                            size_t *resp_size);
/* The answer to `sent` as a message for raft (entries in a); false when
 * it is malformed. */
bool kiq_quorum_reply_of(const kiq_raft_msg_t *sent, const void *resp, kiq_arena_t *a, kiq_raft_msg_t *m);

/* quorum_snapshot.c, under mu: raft's fetch_snapshot callback; a role
 * change drops a snapshot fetch under way; the ticker sends one that
 * waits; appended bytes count toward the next snapshot. */
void kiq_quorum_snapshot_fetch_start(void *ctx, int32_t leader_id, kiq_raft_epoch_end_t id);
void kiq_quorum_snapshot_fetch_drop(kiq_quorum_t *q);
void kiq_quorum_snapshot_tick(kiq_quorum_t *q, int64_t now);

#endif
