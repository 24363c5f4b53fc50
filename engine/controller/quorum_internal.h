/* What the controller quorum's files share (quorum.c: the Raft RPCs and
 * the lifecycle; quorum_snapshot.c: snapshots written, served and
 * fetched); see quorum.h. */
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

/* The channels to one other voter: one for elections, one for fetches
 * (a fetch never waits behind a vote, nor a vote behind a fetch). */
typedef struct link {
    kiq_peer_channel_t *rpc, *fetch;
} link_t;

struct kiq_quorum {
    kiq_quorum_config_t cfg;
    kiq_worker_t *ticker; /* set and cleared under mu (answers poke it), stopped outside it */
    link_t links[KIQ_RAFT_MAX_VOTERS];
    pthread_mutex_t mu; /* guards everything below */
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
     * talks (a stopped process); traffic with a cut voter is dropped both
     * ways, as a lost message is */
    bool paused;
    bool cut[KIQ_RAFT_MAX_VOTERS];
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
int kiq_quorum_voter_index(const kiq_quorum_t *q, int32_t id);
/* s copied into a. */
kiq_str_t kiq_quorum_astr(kiq_arena_t *a, const char *s);
/* n zeroed bytes of a. */
void *kiq_quorum_zalloc(kiq_arena_t *a, size_t n);
bool kiq_quorum_is_metadata_topic(kiq_str_t name);

/* quorum_snapshot.c, under mu: raft's fetch_snapshot callback; a role
 * change drops a snapshot fetch under way; the ticker sends one that
 * waits; appended bytes count toward the next snapshot. */
void kiq_quorum_snapshot_fetch_start(void *ctx, int32_t leader_id, kiq_raft_epoch_end_t id);
void kiq_quorum_snapshot_fetch_drop(kiq_quorum_t *q);
void kiq_quorum_snapshot_tick(kiq_quorum_t *q, int64_t now);

#endif
