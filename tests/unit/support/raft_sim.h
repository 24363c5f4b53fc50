/* A fake clock and network for KRaft's rules (raft/raft.h), shared by
 * test_raft.c and test_raft_voters.c: nodes with in-memory logs and
 * quorum-state files, messages delayed, lost or cut at random by a seed,
 * and the invariants checked as they happen (one leader per epoch, a
 * committed log that never changes, no vote cast twice in an epoch). A
 * kiq_sim_t is the test thread's own. */
#ifndef KIQ_TEST_RAFT_SIM_H
#define KIQ_TEST_RAFT_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "raft/raft.h"

#define KIQ_SIM_MAX_NODES 5
#define KIQ_SIM_MAX_LOG 8192
#define KIQ_SIM_MAX_EPOCHS 4096
#define KIQ_SIM_READ_MAX 32

typedef struct kiq_sim kiq_sim_t;

/* One entry of the fake log: one offset, a value, and the voter set it
 * writes as a mask of node ids (0: none). */
typedef struct kiq_sim_ent {
    int32_t epoch;
    int32_t value;
    int32_t voters;
} kiq_sim_ent_t;

/* One node: its raft (NULL while down), its "disk" and its read buffers. */
typedef struct kiq_sim_node {
    kiq_sim_t *s;
    int32_t id;
    kiq_raft_t *r;
    kiq_sim_ent_t log[KIQ_SIM_MAX_LOG];
    int64_t log_start, log_end, hw;
    kiq_raft_epoch_end_t snapshot;
    kiq_raft_quorum_state_t qs; /* the quorum-state file */
    int persists;
    bool up, paused, wants_snapshot;
    kiq_raft_entry_t read_buf[KIQ_SIM_READ_MAX];
    int32_t read_values[KIQ_SIM_READ_MAX];
    kiq_raft_voter_set_t read_sets[KIQ_SIM_READ_MAX];
} kiq_sim_node_t;

/* A message on the wire, its entries copied. */
typedef struct kiq_sim_wire {
    int64_t at;
    kiq_raft_msg_t m;
    kiq_sim_ent_t *entries;
} kiq_sim_wire_t;

struct kiq_sim {
    kiq_sim_node_t nodes[KIQ_SIM_MAX_NODES];
    int n;
    int64_t now;
    uint64_t rng;
    kiq_sim_wire_t *q;
    int nq, capq;
    bool cut[KIQ_SIM_MAX_NODES][KIQ_SIM_MAX_NODES];
    int loss_pct;
    int64_t min_delay, max_delay;
    int32_t leader_of_epoch[KIQ_SIM_MAX_EPOCHS]; /* -1: none yet */
    kiq_sim_ent_t committed[KIQ_SIM_MAX_LOG]; /* the one committed log, as first seen */
    int64_t n_committed;
    int32_t next_value;
    int64_t election_timeout, fetch_timeout;
    /* a single node driven by hand: what it sent */
    kiq_raft_msg_t sent[64];
    int n_sent;
    bool capture;
    /* kraft.version 1: no configured voters, the log's sets; the
     * bootstrap server is node 1 */
    bool dynamic;
};

uint64_t kiq_sim_rnd(kiq_sim_t *s);
kiq_sim_node_t *kiq_sim_node_of(kiq_sim_t *s, int32_t id);
/* The voter set of a mask of node ids; each one's directory id is its id. */
kiq_raft_voter_set_t kiq_sim_set_of(int32_t mask);
int32_t kiq_sim_mask_of(const kiq_raft_voter_set_t *set);
/* The leader appends value (fails the test if it cannot). */
void kiq_sim_propose(kiq_sim_node_t *nd, int32_t value);
/* nd (re)started from its log and quorum state at the sim's time. */
void kiq_sim_boot(kiq_sim_t *s, kiq_sim_node_t *nd, uint64_t seed);
/* n static voters 1..n, empty, booted. */
void kiq_sim_init(kiq_sim_t *s, int n, uint64_t seed);
void kiq_sim_free(kiq_sim_t *s);
/* nd stops; its log and quorum state stay, as on disk. */
void kiq_sim_crash(kiq_sim_t *s, kiq_sim_node_t *nd);
/* One millisecond of fake time; kiq_sim_run: ms of them. */
void kiq_sim_step(kiq_sim_t *s);
void kiq_sim_run(kiq_sim_t *s, int64_t ms);
kiq_raft_view_t kiq_sim_view(const kiq_sim_node_t *nd);
/* The running leader of the highest epoch, NULL when none. */
kiq_sim_node_t *kiq_sim_leader(kiq_sim_t *s);
/* Runs until some node leads (the test fails after within_ms); that node. */
kiq_sim_node_t *kiq_sim_await_leader(kiq_sim_t *s, int64_t within_ms);
/* Every link of nd's cut (or mended), both ways. */
void kiq_sim_cut_off(kiq_sim_t *s, kiq_sim_node_t *nd, bool cut);
/* A write commits and every running node holds the leader's committed log. */
void kiq_sim_assert_converged(kiq_sim_t *s);

#endif
