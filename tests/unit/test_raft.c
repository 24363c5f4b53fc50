/* KRaft's rules (raft/raft.h) on a fake clock and a fake network: vote
 * granting, PreVote, log matching and truncation by DivergingEpoch, commit
 * only through an entry of the leader's own epoch, a stale leader fenced,
 * a follower brought up from a snapshot, dynamic voters (KIP-853: the set
 * in force from the log, reverted by truncation, one change at a time, a
 * removed leader resigning), and seeded schedules of crashes,
 * pauses, cut links and lost messages checked for one leader per epoch and
 * a committed log that never changes and is never lost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "raft/raft.h"

#define MAX_NODES 5
#define MAX_LOG 8192
#define MAX_EPOCHS 4096
#define READ_MAX 32

typedef struct sim sim_t;

/* One entry of the fake log: one offset, a value, and the voter set it
 * writes as a mask of node ids (0: none). */
typedef struct ent {
    int32_t epoch;
    int32_t value;
    int32_t voters;
} ent_t;

typedef struct node {
    sim_t *s;
    int32_t id;
    kiq_raft_t *r;
    ent_t log[MAX_LOG];
    int64_t log_start, log_end, hw;
    kiq_raft_epoch_end_t snapshot;
    kiq_raft_quorum_state_t qs; /* the quorum-state file */
    int persists;
    bool up, paused, wants_snapshot;
    kiq_raft_entry_t read_buf[READ_MAX];
    int32_t read_values[READ_MAX];
    kiq_raft_voter_set_t read_sets[READ_MAX];
} node_t;

/* A message on the wire, its entries copied. */
typedef struct wire {
    int64_t at;
    kiq_raft_msg_t m;
    ent_t *entries;
} wire_t;

struct sim {
    node_t nodes[MAX_NODES];
    int n;
    int64_t now;
    uint64_t rng;
    wire_t *q;
    int nq, capq;
    bool cut[MAX_NODES][MAX_NODES];
    int loss_pct;
    int64_t min_delay, max_delay;
    int32_t leader_of_epoch[MAX_EPOCHS]; /* -1: none yet */
    ent_t committed[MAX_LOG];            /* the one committed log, as first seen */
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

static uint64_t sim_rnd(sim_t *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static node_t *node_of(sim_t *s, int32_t id)
{
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].id == id)
            return &s->nodes[i];
    return NULL;
}

/* The voter set of a mask of node ids; each one's directory id is its id. */
static kiq_raft_voter_set_t set_of(int32_t mask)
{
    kiq_raft_voter_set_t set = { .n = 0 };
    for (int32_t id = 1; id < 31; id++)
        if (mask & (1 << id))
            set.voters[set.n++] = (kiq_raft_replica_key_t){ .id = id, .dir = { (uint8_t)id } };
    return set;
}

static int32_t mask_of(const kiq_raft_voter_set_t *set)
{
    int32_t mask = 0;
    for (int i = 0; set && i < set->n; i++)
        mask |= 1 << set->voters[i].id;
    return mask;
}

/* ---- the host callbacks */

static void io_send(void *ctx, const kiq_raft_msg_t *m)
{
    node_t *nd = ctx;
    sim_t *s = nd->s;
    if (s->capture) {
        assert_true(s->n_sent < 64);
        s->sent[s->n_sent++] = *m;
        return;
    }
    node_t *to = node_of(s, m->to < 0 ? 1 : m->to); /* a bootstrap server is node 1 */
    int fi = (int)(nd - s->nodes);
    if (!to || s->cut[fi][to - s->nodes] || (s->loss_pct && (int)(sim_rnd(s) % 100) < s->loss_pct))
        return;
    if (s->nq == s->capq) {
        s->capq = s->capq ? s->capq * 2 : 256;
        s->q = realloc(s->q, (size_t)s->capq * sizeof *s->q);
    }
    wire_t *w = &s->q[s->nq++];
    w->at = s->now + s->min_delay + (int64_t)(sim_rnd(s) % (uint64_t)(s->max_delay - s->min_delay + 1));
    w->m = *m;
    w->entries = NULL;
    if (m->type == KIQ_RAFT_FETCH_REPLY && m->fetch_reply.n_entries) {
        w->entries = malloc((size_t)m->fetch_reply.n_entries * sizeof *w->entries);
        for (int i = 0; i < m->fetch_reply.n_entries; i++)
            w->entries[i] = (ent_t){ m->fetch_reply.entries[i].epoch, *(const int32_t *)m->fetch_reply.entries[i].data,
                                     mask_of(m->fetch_reply.entries[i].voters) };
    }
}

static int io_append(void *ctx, int64_t offset, const kiq_raft_entry_t *e, int n)
{
    node_t *nd = ctx;
    assert_int_equal(offset, nd->log_end);
    for (int i = 0; i < n; i++) {
        assert_int_equal(e[i].count, 1);
        assert_true(nd->log_end < MAX_LOG);
        nd->log[nd->log_end++] = (ent_t){ e[i].epoch, *(const int32_t *)e[i].data, mask_of(e[i].voters) };
    }
    return 0;
}

static int io_truncate(void *ctx, int64_t end)
{
    node_t *nd = ctx;
    /* nothing committed is ever taken back */
    assert_true(end >= nd->hw);
    nd->log_end = end;
    return 0;
}

static int io_read(void *ctx, int64_t offset, const kiq_raft_entry_t **e, int *n)
{
    node_t *nd = ctx;
    assert_true(offset >= nd->log_start);
    int k = 0;
    for (int64_t o = offset; o < nd->log_end && k < READ_MAX; o++, k++) {
        nd->read_values[k] = nd->log[o].value;
        nd->read_sets[k] = set_of(nd->log[o].voters);
        nd->read_buf[k] = (kiq_raft_entry_t){ nd->log[o].epoch, 1, &nd->read_values[k], sizeof(int32_t),
                                              nd->log[o].voters ? &nd->read_sets[k] : NULL };
    }
    *e = nd->read_buf;
    *n = k;
    return 0;
}

static int io_persist(void *ctx, const kiq_raft_quorum_state_t *st)
{
    node_t *nd = ctx;
    /* a vote is never cast twice in one epoch, even across restarts */
    if (st->epoch == nd->qs.epoch && nd->qs.voted_for >= 0)
        assert_true(st->voted_for == nd->qs.voted_for);
    assert_true(st->epoch >= nd->qs.epoch);
    nd->qs = *st;
    nd->persists++;
    return 0;
}

static void propose(node_t *nd, int32_t value)
{
    int64_t at;
    assert_int_equal(kiq_raft_propose(nd->r, 1, &value, sizeof value, &at), 0);
}

static void io_became(void *ctx, kiq_raft_role_t role, int32_t epoch, int32_t leader)
{
    node_t *nd = ctx;
    sim_t *s = nd->s;
    if (role != KIQ_RAFT_LEADER)
        return;
    assert_true(epoch > 0 && epoch < MAX_EPOCHS);
    /* one leader per epoch */
    if (s->leader_of_epoch[epoch] >= 0)
        assert_int_equal(s->leader_of_epoch[epoch], nd->id);
    s->leader_of_epoch[epoch] = nd->id;
    propose(nd, -epoch); /* the epoch's LeaderChangeMessage */
}

static void io_committed(void *ctx, int64_t hw)
{
    node_t *nd = ctx;
    sim_t *s = nd->s;
    assert_true(hw > nd->hw);
    assert_true(hw <= nd->log_end);
    /* every node's committed entries are the one committed log */
    for (int64_t o = nd->hw > nd->log_start ? nd->hw : nd->log_start; o < hw; o++) {
        if (o < s->n_committed) {
            if (nd->log[o].epoch != s->committed[o].epoch || nd->log[o].value != s->committed[o].value)
                fail_msg("node %d commits offset %lld as (%d, %d), committed before as (%d, %d)", nd->id, (long long)o,
                         nd->log[o].epoch, nd->log[o].value, s->committed[o].epoch, s->committed[o].value);
        } else {
            assert_int_equal(o, s->n_committed);
            s->committed[s->n_committed++] = nd->log[o];
        }
    }
    nd->hw = hw;
}

static void io_fetch_snapshot(void *ctx, int32_t leader, kiq_raft_epoch_end_t id)
{
    node_t *nd = ctx;
    nd->wants_snapshot = true;
    nd->snapshot = id;
}

static const kiq_raft_io_t IO = {
    .send = io_send, .append = io_append, .truncate = io_truncate, .read = io_read, .persist = io_persist,
    .became = io_became, .committed = io_committed, .fetch_snapshot = io_fetch_snapshot,
};

/* ---- nodes and the clock */

static void node_boot(sim_t *s, node_t *nd, uint64_t seed)
{
    kiq_raft_config_t c = { .node_id = nd->id, .n_voters = s->n, .election_timeout_ms = s->election_timeout,
                            .fetch_timeout_ms = s->fetch_timeout, .election_backoff_max_ms = 1000,
                            .request_timeout_ms = 500, .seed = seed, .state = nd->qs, .snapshot = nd->snapshot,
                            .log_end = nd->log_end, .now_ms = s->now, .io = &IO, .ctx = nd };
    for (int i = 0; i < s->n; i++)
        c.voters[i] = s->nodes[i].id;
    c.dir[0] = (uint8_t)nd->id;
    static kiq_raft_voters_at_t sets[64];
    if (s->dynamic) {
        c.n_voters = 0;
        c.n_bootstrap = 1;
        c.voter_sets = sets;
        for (int64_t o = nd->log_start; o < nd->log_end; o++)
            if (nd->log[o].voters && c.n_voter_sets < 64)
                sets[c.n_voter_sets++] = (kiq_raft_voters_at_t){ o, set_of(nd->log[o].voters) };
    }
    kiq_raft_epoch_end_t starts[MAX_EPOCHS];
    int n = 0;
    for (int64_t o = nd->log_start; o < nd->log_end; o++)
        if (!n || starts[n - 1].epoch != nd->log[o].epoch)
            starts[n++] = (kiq_raft_epoch_end_t){ nd->log[o].epoch, o };
    c.epoch_starts = starts;
    c.n_epoch_starts = n;
    nd->r = kiq_raft_new(&c);
    assert_non_null(nd->r);
    nd->hw = nd->log_start; /* the high watermark is learned again */
    nd->up = true;
}

static void sim_init(sim_t *s, int n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->rng = seed * 2654435761ULL + 1;
    s->min_delay = 1;
    s->max_delay = 5;
    s->election_timeout = 1000;
    s->fetch_timeout = 2000;
    for (int i = 0; i < MAX_EPOCHS; i++)
        s->leader_of_epoch[i] = -1;
    for (int i = 0; i < n; i++) {
        node_t *nd = &s->nodes[i];
        nd->s = s;
        nd->id = i + 1;
        nd->qs = (kiq_raft_quorum_state_t){ 0, -1, -1 };
        nd->snapshot = (kiq_raft_epoch_end_t){ -1, -1 };
    }
    for (int i = 0; i < n; i++)
        node_boot(s, &s->nodes[i], seed);
}

static void sim_free(sim_t *s)
{
    for (int i = 0; i < s->n; i++)
        kiq_raft_free(s->nodes[i].r);
    for (int i = 0; i < s->nq; i++)
        free(s->q[i].entries);
    free(s->q);
}

static void crash(sim_t *s, node_t *nd)
{
    kiq_raft_free(nd->r);
    nd->r = NULL;
    nd->up = false;
}

/* One millisecond: messages due are delivered in the order sent, a paused
 * node's wait (as a stopped process's socket would hold them); then every
 * running node ticks. */
static void sim_step(sim_t *s)
{
    s->now++;
    int keep = 0;
    int nq = s->nq;
    for (int i = 0; i < nq; i++) {
        wire_t w = s->q[i];
        node_t *to = node_of(s, w.m.to < 0 ? 1 : w.m.to);
        if (w.at > s->now || (to->up && to->paused)) {
            s->q[keep++] = w;
            continue;
        }
        if (to->up) {
            kiq_raft_entry_t es[READ_MAX];
            kiq_raft_voter_set_t ss[READ_MAX];
            if (w.entries) {
                for (int k = 0; k < w.m.fetch_reply.n_entries; k++) {
                    ss[k] = set_of(w.entries[k].voters);
                    es[k] = (kiq_raft_entry_t){ w.entries[k].epoch, 1, &w.entries[k].value, sizeof(int32_t),
                                                w.entries[k].voters ? &ss[k] : NULL };
                }
                w.m.fetch_reply.entries = es;
            }
            kiq_raft_receive(to->r, s->now, &w.m);
        }
        free(w.entries);
    }
    /* replies sent during delivery were appended after nq */
    if (s->nq > nq)
        memmove(&s->q[keep], &s->q[nq], (size_t)(s->nq - nq) * sizeof *s->q);
    s->nq = keep + (s->nq - nq);
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].up && !s->nodes[i].paused)
            kiq_raft_tick(s->nodes[i].r, s->now);
}

static void sim_run(sim_t *s, int64_t ms)
{
    for (int64_t end = s->now + ms; s->now < end;)
        sim_step(s);
}

static kiq_raft_view_t view_of(const node_t *nd)
{
    kiq_raft_view_t v;
    kiq_raft_view(nd->r, &v);
    return v;
}

/* The running leader of the highest epoch, NULL when none. */
static node_t *leader(sim_t *s)
{
    node_t *best = NULL;
    kiq_raft_view_t v;
    for (int i = 0; i < s->n; i++) {
        node_t *nd = &s->nodes[i];
        if (!nd->up || nd->paused)
            continue;
        kiq_raft_view(nd->r, &v);
        if (v.role == KIQ_RAFT_LEADER && (!best || v.epoch > view_of(best).epoch))
            best = nd;
    }
    return best;
}

/* ---- one node driven by hand */

/* Node id's log replaced by these epochs (one entry each), its quorum
 * state by (epoch, voted for, leader); restarted at the sim's time. */
static node_t *with_log(sim_t *s, int32_t id, const int32_t *epochs, int n, kiq_raft_quorum_state_t qs)
{
    node_t *nd = node_of(s, id);
    crash(s, nd);
    for (int i = 0; i < n; i++)
        nd->log[i] = (ent_t){ epochs[i], 100 + i, 0 };
    nd->log_end = n;
    nd->qs = qs;
    node_boot(s, nd, 1);
    return nd;
}

static kiq_raft_msg_t vote(int32_t from, int32_t epoch, int32_t last_epoch, int64_t end, bool pre)
{
    kiq_raft_msg_t m = { .type = KIQ_RAFT_VOTE, .from = from, .to = 1, .epoch = epoch, .leader_id = -1 };
    m.vote.last = (kiq_raft_epoch_end_t){ last_epoch, end };
    m.vote.pre_vote = pre;
    return m;
}

/* Delivers m to node 1 and returns its one answer. */
static kiq_raft_msg_t ask(sim_t *s, kiq_raft_msg_t m)
{
    s->n_sent = 0;
    kiq_raft_receive(node_of(s, m.to)->r, s->now, &m);
    assert_int_equal(s->n_sent, 1);
    return s->sent[0];
}

static void test_vote_granting(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 1);
    s.capture = true;
    node_t *n1 = with_log(&s, 1, (int32_t[]){ 1, 1, 1 }, 3, (kiq_raft_quorum_state_t){ 2, -1, -1 });

    /* an up-to-date candidate of a newer epoch: granted, written down first */
    kiq_raft_msg_t re = ask(&s, vote(2, 3, 1, 3, false));
    assert_true(re.vote_reply.granted);
    assert_int_equal(re.epoch, 3);
    assert_int_equal(n1->qs.epoch, 3);
    assert_int_equal(n1->qs.voted_for, 2);
    /* one vote per epoch: another candidate is refused, the same one again granted */
    assert_false(ask(&s, vote(3, 3, 1, 3, false)).vote_reply.granted);
    assert_true(ask(&s, vote(2, 3, 1, 3, false)).vote_reply.granted);
    /* a newer epoch frees the vote, but a shorter log of the same last epoch is refused */
    re = ask(&s, vote(3, 4, 1, 2, false));
    assert_false(re.vote_reply.granted);
    assert_int_equal(n1->qs.epoch, 4);
    assert_int_equal(n1->qs.voted_for, -1);
    /* a longer log of an older last epoch too */
    n1 = with_log(&s, 1, (int32_t[]){ 1, 1, 2 }, 3, n1->qs);
    assert_false(ask(&s, vote(3, 4, 1, 9, false)).vote_reply.granted);
    /* a newer last epoch wins even when shorter */
    assert_true(ask(&s, vote(3, 4, 3, 1, false)).vote_reply.granted);
    /* a stale epoch is told the current one; a non-voter is never granted */
    re = ask(&s, vote(2, 3, 9, 9, false));
    assert_false(re.vote_reply.granted);
    assert_int_equal(re.epoch, 4);
    assert_false(ask(&s, vote(9, 5, 9, 9, false)).vote_reply.granted);
    sim_free(&s);
}

static void test_pre_vote(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 2);
    s.capture = true;
    node_t *n1 = with_log(&s, 1, (int32_t[]){ 1, 2 }, 2, (kiq_raft_quorum_state_t){ 2, -1, -1 });
    int persists = n1->persists;

    /* no leader heard of: granted, and nothing changes here */
    kiq_raft_msg_t re = ask(&s, vote(2, 3, 2, 2, true));
    assert_true(re.vote_reply.granted && re.vote_reply.pre_vote);
    assert_int_equal(view_of(n1).epoch, 2);
    assert_int_equal(view_of(n1).voted_for, -1);
    assert_int_equal(n1->persists, persists);
    /* a log behind this one, or an epoch not past this one, is refused */
    assert_false(ask(&s, vote(2, 3, 1, 5, true)).vote_reply.granted);
    assert_false(ask(&s, vote(2, 2, 2, 2, true)).vote_reply.granted);

    /* a follower that hears from its leader refuses: the asker is the one cut off */
    kiq_raft_msg_t begin = { .type = KIQ_RAFT_BEGIN_EPOCH, .from = 3, .to = 1, .epoch = 3, .leader_id = 3 };
    s.n_sent = 0;
    kiq_raft_receive(n1->r, s.now, &begin);
    assert_int_equal(view_of(n1).role, KIQ_RAFT_FOLLOWER);
    assert_false(ask(&s, vote(2, 4, 2, 2, true)).vote_reply.granted);
    assert_int_equal(view_of(n1).epoch, 3);
    /* once the fetch timeout passes without the leader, it grants */
    s.now += s.fetch_timeout;
    assert_true(ask(&s, vote(2, 4, 2, 2, true)).vote_reply.granted);

    /* its own election: a pre-vote round first, with the epoch unchanged */
    s.n_sent = 0;
    kiq_raft_tick(n1->r, s.now);
    assert_int_equal(view_of(n1).role, KIQ_RAFT_PROSPECTIVE);
    assert_int_equal(view_of(n1).epoch, 3);
    /* two pre-votes, and one fetch to see whether the lost leader is back */
    assert_int_equal(s.n_sent, 3);
    assert_true(s.sent[0].vote.pre_vote && s.sent[0].epoch == 4);
    assert_true(s.sent[2].type == KIQ_RAFT_FETCH && s.sent[2].to == 3);
    kiq_raft_msg_t yes = { .type = KIQ_RAFT_VOTE_REPLY, .from = 2, .to = 1, .epoch = 3, .leader_id = -1 };
    yes.vote_reply.granted = yes.vote_reply.pre_vote = true;
    s.n_sent = 0;
    kiq_raft_receive(n1->r, s.now, &yes);
    /* a majority of pre-votes: now a candidate of epoch 4, voting for itself */
    assert_int_equal(view_of(n1).role, KIQ_RAFT_CANDIDATE);
    assert_int_equal(n1->qs.epoch, 4);
    assert_int_equal(n1->qs.voted_for, 1);
    assert_int_equal(s.n_sent, 2);
    assert_false(s.sent[0].vote.pre_vote);
    yes.epoch = 4;
    yes.vote_reply.pre_vote = false;
    s.n_sent = 0;
    kiq_raft_receive(n1->r, s.now, &yes);
    assert_int_equal(view_of(n1).role, KIQ_RAFT_LEADER);
    assert_int_equal(n1->log[2].epoch, 4); /* its epoch's first entry */
    sim_free(&s);
}

/* Node 1 leads epoch 5 over a log of epochs 1 1 2 2 4 (and its own 5). */
static node_t *leader_of_5(sim_t *s)
{
    node_t *n1 = with_log(s, 1, (int32_t[]){ 1, 1, 2, 2, 4 }, 5, (kiq_raft_quorum_state_t){ 4, -1, -1 });
    s->now += 3 * s->election_timeout;
    kiq_raft_tick(n1->r, s->now);
    kiq_raft_msg_t yes = { .type = KIQ_RAFT_VOTE_REPLY, .from = 2, .to = 1, .epoch = 4, .leader_id = -1 };
    yes.vote_reply.granted = yes.vote_reply.pre_vote = true;
    kiq_raft_receive(n1->r, s->now, &yes);
    yes.epoch = 5;
    yes.vote_reply.pre_vote = false;
    kiq_raft_receive(n1->r, s->now, &yes);
    assert_int_equal(view_of(n1).role, KIQ_RAFT_LEADER);
    assert_int_equal(view_of(n1).epoch, 5);
    assert_int_equal(n1->log_end, 6);
    return n1;
}

static kiq_raft_msg_t fetch(int32_t from, int32_t epoch, int64_t offset, int32_t last_epoch)
{
    kiq_raft_msg_t m = { .type = KIQ_RAFT_FETCH, .from = from, .to = 1, .epoch = epoch, .leader_id = 1 };
    m.fetch.offset = offset;
    m.fetch.last_epoch = last_epoch;
    return m;
}

static void test_log_matching(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 3);
    s.capture = true;
    leader_of_5(&s);
    struct { int64_t offset; int32_t last; int32_t div_epoch; int64_t div_end; } cases[] = {
        { 4, 3, 2, 4 },   /* epoch 3 was never here: its end is epoch 2's */
        { 3, 1, 1, 2 },   /* epoch 1 ends at 2 */
        { 7, 5, 5, 6 },   /* past the end of epoch 5 */
        { 2, 1, -1, -1 }, /* consistent */
        { 5, 4, -1, -1 },
        { 0, 0, -1, -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kiq_raft_msg_t re = ask(&s, fetch(2, 5, cases[i].offset, cases[i].last));
        assert_int_equal(re.type, KIQ_RAFT_FETCH_REPLY);
        assert_int_equal(re.error, KIQ_ERR_NONE);
        assert_int_equal(re.fetch_reply.diverging.epoch, cases[i].div_epoch);
        if (cases[i].div_epoch >= 0)
            assert_int_equal(re.fetch_reply.diverging.end_offset, cases[i].div_end);
        else
            assert_int_equal(re.fetch_reply.n_entries, 6 - cases[i].offset);
    }
    /* an older epoch is fenced */
    assert_int_equal(ask(&s, fetch(2, 4, 0, 0)).error, KIQ_ERR_FENCED_LEADER_EPOCH);
    sim_free(&s);

    /* the follower side, over the fake network: node 3 holds uncommitted
     * entries of epochs 3 and 3 that node 1 never had; it truncates them
     * and ends with node 1's log */
    sim_init(&s, 3, 4);
    s.capture = true;
    node_t *n1 = leader_of_5(&s);
    node_t *n3 = with_log(&s, 3, (int32_t[]){ 1, 1, 3, 3, 3, 3 }, 6, (kiq_raft_quorum_state_t){ 3, -1, -1 });
    s.capture = false;
    s.n_sent = 0;
    kiq_raft_msg_t begin = { .type = KIQ_RAFT_BEGIN_EPOCH, .from = 1, .to = 3, .epoch = 5, .leader_id = 1 };
    kiq_raft_receive(n3->r, s.now, &begin);
    node_of(&s, 2)->paused = true;
    sim_run(&s, 200);
    assert_int_equal(n3->log_end, n1->log_end);
    for (int64_t o = 0; o < n1->log_end; o++)
        assert_int_equal(n3->log[o].epoch, n1->log[o].epoch);
    assert_int_equal(n1->hw, 6);
    assert_int_equal(n3->hw, 6);
    sim_free(&s);
}

static void test_commit_only_current_epoch(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 5);
    s.capture = true;
    node_t *n1 = leader_of_5(&s);
    /* node 2 has all of the older epochs, a majority with node 1: not enough */
    ask(&s, fetch(2, 5, 5, 4));
    assert_int_equal(n1->hw, 0);
    assert_int_equal(view_of(n1).high_watermark, 0);
    /* once it has the entry of epoch 5, everything up to it commits */
    kiq_raft_msg_t re = ask(&s, fetch(2, 5, 6, 5));
    assert_int_equal(n1->hw, 6);
    assert_int_equal(re.fetch_reply.high_watermark, 6);
    /* a later entry needs the majority again */
    propose(n1, 7);
    assert_int_equal(n1->hw, 6);
    ask(&s, fetch(3, 5, 7, 5));
    assert_int_equal(n1->hw, 7);
    kiq_raft_view_t v = view_of(n1);
    assert_int_equal(v.voters[2].log_end, 7);
    assert_int_equal(v.voters[1].log_end, 6);
    sim_free(&s);
}

/* ---- whole quorums on the fake network */

/* Runs until some node leads (bounded); that node. */
static node_t *await_leader(sim_t *s, int64_t within_ms)
{
    for (int64_t end = s->now + within_ms; s->now < end; sim_step(s)) {
        node_t *l = leader(s);
        if (l)
            return l;
    }
    fail_msg("no leader within %lld ms", (long long)within_ms);
    return NULL;
}

static void cut_off(sim_t *s, node_t *nd, bool cut)
{
    int i = (int)(nd - s->nodes);
    for (int j = 0; j < s->n; j++)
        if (j != i)
            s->cut[i][j] = s->cut[j][i] = cut;
}

/* Every running node holds the leader's committed log. */
static void assert_converged(sim_t *s)
{
    node_t *l = await_leader(s, 20000);
    propose(l, s->next_value++);
    sim_run(s, 3000);
    l = leader(s);
    assert_non_null(l);
    assert_int_equal(l->hw, l->log_end);
    assert_int_equal(s->n_committed, l->hw);
    for (int i = 0; i < s->n; i++) {
        node_t *nd = &s->nodes[i];
        if (!nd->up)
            continue;
        assert_int_equal(nd->log_end, l->log_end);
        assert_int_equal(nd->hw, l->hw);
        for (int64_t o = nd->log_start; o < nd->log_end; o++)
            assert_true(nd->log[o].epoch == l->log[o].epoch && nd->log[o].value == l->log[o].value);
    }
}

static void test_stale_leader_fenced(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 6);
    node_t *old = await_leader(&s, 10000);
    for (int i = 0; i < 5; i++)
        propose(old, s.next_value++);
    sim_run(&s, 100);
    int64_t committed = old->hw;
    assert_int_equal(committed, old->log_end);
    int32_t old_epoch = view_of(old).epoch;

    /* cut off, it takes writes it can never commit */
    cut_off(&s, old, true);
    int64_t cut_at = s.now;
    for (int i = 0; i < 3; i++)
        propose(old, 1000 + i);
    node_t *next = NULL;
    while (!next || next == old) {
        sim_step(&s);
        next = leader(&s);
        if (next == old) { /* still the highest epoch: look at the others */
            next = NULL;
            for (int i = 0; i < s.n; i++)
                if (&s.nodes[i] != old && view_of(&s.nodes[i]).role == KIQ_RAFT_LEADER)
                    next = &s.nodes[i];
        }
        assert_true(s.now - cut_at < s.fetch_timeout + 3 * s.election_timeout);
    }
    assert_true(view_of(next).epoch > old_epoch);
    /* check quorum: the old leader steps down by itself */
    sim_run(&s, 2 * s.fetch_timeout);
    assert_int_not_equal(view_of(old).role, KIQ_RAFT_LEADER);
    assert_int_equal(old->hw, committed);
    /* back on the network it follows, and its three writes are gone */
    cut_off(&s, old, false);
    assert_converged(&s);
    for (int64_t o = 0; o < old->log_end; o++)
        assert_true(old->log[o].value < 1000);
    sim_free(&s);
}

static void test_isolated_voter_does_not_disrupt(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 7);
    node_t *l = await_leader(&s, 10000);
    int32_t epoch = view_of(l).epoch;
    node_t *lone = &s.nodes[(l - s.nodes + 1) % 3];
    cut_off(&s, lone, true);
    sim_run(&s, 20000);
    /* its pre-votes find no majority: its epoch stays, however often it tries */
    assert_int_equal(view_of(lone).epoch, epoch);
    assert_true(view_of(lone).elections > 3);
    cut_off(&s, lone, false);
    sim_run(&s, 3000);
    assert_ptr_equal(leader(&s), l);
    assert_int_equal(view_of(l).epoch, epoch);
    assert_converged(&s);
    sim_free(&s);
}

static void test_snapshot(void **state)
{
    static sim_t s;
    sim_init(&s, 3, 8);
    node_t *l = await_leader(&s, 10000);
    node_t *late = &s.nodes[(l - s.nodes + 1) % 3];
    crash(&s, late);
    for (int i = 0; i < 60; i++)
        propose(l, s.next_value++);
    sim_run(&s, 500);
    /* the leader snapshots what is committed and drops that prefix */
    kiq_raft_epoch_end_t id = { l->log[l->hw - 1].epoch, l->hw };
    assert_int_equal(kiq_raft_snapshot_loaded(l->r, id, NULL), 0);
    l->log_start = id.end_offset;
    l->snapshot = id;
    assert_int_equal(view_of(l).log_start, id.end_offset);
    /* a snapshot of what is not committed is refused */
    assert_int_equal(kiq_raft_snapshot_loaded(l->r, (kiq_raft_epoch_end_t){ id.epoch, l->log_end + 1 }, NULL), -1);

    /* a voter that lost its disk comes back empty: it is sent to the snapshot */
    late->log_end = late->log_start = 0;
    late->qs = (kiq_raft_quorum_state_t){ 0, -1, -1 };
    node_boot(&s, late, 8);
    for (int64_t end = s.now + 5000; !late->wants_snapshot; sim_step(&s))
        assert_true(s.now < end);
    assert_int_equal(late->snapshot.end_offset, id.end_offset);
    /* a FetchSnapshot that fails: it fetches again and is sent to it again */
    late->wants_snapshot = false;
    kiq_raft_snapshot_failed(late->r, s.now);
    for (int64_t end = s.now + 5000; !late->wants_snapshot; sim_step(&s))
        assert_true(s.now < end);
    assert_int_equal(late->snapshot.end_offset, id.end_offset);
    /* FetchSnapshot, played by copying the leader's state up to it */
    memcpy(late->log, l->log, sizeof(ent_t) * (size_t)id.end_offset);
    late->log_start = late->log_end = id.end_offset;
    late->wants_snapshot = false;
    assert_int_equal(kiq_raft_snapshot_loaded(late->r, late->snapshot, NULL), 0);
    propose(l, s.next_value++);
    assert_converged(&s);
    assert_int_equal(view_of(late).log_start, id.end_offset);
    sim_free(&s);
}

/* The nemesis: crashes and restarts, pauses, cut links, lost messages and
 * writes, at random by the seed, for a minute of fake time. */
/* ---- dynamic voters (KIP-853) */

/* A kraft.version 1 quorum of n nodes: node 1 formatted standalone (its
 * log starts with the voter set {1}), the others empty, finding node 1
 * through their bootstrap server and fetching as observers. */
static void dynamic_init(sim_t *s, int n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->dynamic = true;
    s->n = n;
    s->rng = seed * 2654435761ULL + 1;
    s->min_delay = 1;
    s->max_delay = 5;
    s->election_timeout = 1000;
    s->fetch_timeout = 2000;
    for (int i = 0; i < MAX_EPOCHS; i++)
        s->leader_of_epoch[i] = -1;
    for (int i = 0; i < n; i++) {
        node_t *nd = &s->nodes[i];
        nd->s = s;
        nd->id = i + 1;
        nd->qs = (kiq_raft_quorum_state_t){ 0, -1, -1 };
        nd->snapshot = (kiq_raft_epoch_end_t){ -1, -1 };
    }
    s->nodes[0].log[0] = (ent_t){ 0, 1000, 1 << 1 };
    s->nodes[0].log_end = 1;
    for (int i = 0; i < n; i++)
        node_boot(s, &s->nodes[i], seed);
}

static int propose_voters(node_t *nd, int32_t mask)
{
    kiq_raft_voter_set_t set = set_of(mask);
    static int32_t value;
    value = 1000 + mask;
    int64_t at;
    return kiq_raft_propose_voters(nd->r, &set, &value, sizeof value, &at);
}

static int change(node_t *nd, int32_t id, bool add)
{
    kiq_raft_replica_key_t k = { .id = id, .dir = { (uint8_t)id } };
    int rc = kiq_raft_voters_check(nd->r, &k, add);
    if (rc != 0)
        return rc;
    kiq_raft_voter_set_t set;
    kiq_raft_voters_changed(nd->r, &k, add, &set);
    return propose_voters(nd, mask_of(&set));
}

static void run_until_committed(sim_t *s, node_t *nd, int64_t within_ms)
{
    for (int64_t end = s->now + within_ms; s->now < end && nd->hw < nd->log_end;)
        sim_step(s);
    assert_int_equal(nd->hw, nd->log_end);
}

/* A running leader other than nd, within a bound. */
static node_t *leader_besides(sim_t *s, node_t *nd, int64_t within_ms)
{
    for (int64_t end = s->now + within_ms; s->now < end; sim_step(s))
        for (int i = 0; i < s->n; i++)
            if (&s->nodes[i] != nd && s->nodes[i].up && view_of(&s->nodes[i]).role == KIQ_RAFT_LEADER)
                return &s->nodes[i];
    fail_msg("no leader besides node %d within %lld ms", nd->id, (long long)within_ms);
    return NULL;
}

static void test_dynamic_voters(void **state)
{
    static sim_t s;
    dynamic_init(&s, 3, 11);
    node_t *n1 = &s.nodes[0], *n2 = &s.nodes[1], *n3 = &s.nodes[2];
    sim_run(&s, 100);
    assert_ptr_equal(leader(&s), n1);
    kiq_raft_view_t v = view_of(n1);
    assert_int_equal(v.kraft_version, 1);
    assert_int_equal(v.n_voters, 1);
    assert_int_equal(v.n_observers, 2); /* 2 and 3 found it through the bootstrap server */
    assert_int_equal(n2->log_end, n1->log_end);
    assert_int_equal(view_of(n2).n_voters, 1);
    assert_int_equal(view_of(n2).role, KIQ_RAFT_FOLLOWER);

    /* majority by the set in force: {1} commits alone */
    n2->paused = n3->paused = true;
    propose(n1, 7);
    run_until_committed(&s, n1, 10);
    n2->paused = n3->paused = false;
    sim_run(&s, 100);

    /* a node that is no observer, and one voter change at a time */
    assert_int_equal(change(n1, 9, true), KIQ_ERR_REQUEST_TIMED_OUT);
    assert_int_equal(change(n1, 9, false), KIQ_ERR_VOTER_NOT_FOUND);
    assert_int_equal(change(n1, 1, false), KIQ_ERR_INVALID_REQUEST);
    assert_int_equal(change(n1, 1, true), KIQ_ERR_DUPLICATE_VOTER);
    assert_int_equal(change(n2, 3, true), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(change(n1, 2, true), 0);
    assert_int_equal(view_of(n1).n_voters, 2); /* in force before it commits */
    assert_int_equal(change(n1, 3, true), KIQ_ERR_REQUEST_TIMED_OUT);
    /* {1, 2} needs node 2 now */
    n2->paused = true;
    sim_run(&s, 50);
    assert_true(n1->hw < n1->log_end);
    n2->paused = false;
    run_until_committed(&s, n1, 100);
    assert_int_equal(change(n1, 3, true), 0);
    run_until_committed(&s, n1, 100);
    sim_run(&s, 50);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(view_of(&s.nodes[i]).n_voters, 3);
        assert_int_equal(s.nodes[i].log_end, n1->log_end);
    }
    assert_int_equal(view_of(n1).n_observers, 0);

    /* two of three commit; the leader lost, the others elect one */
    n3->paused = true;
    propose(n1, 8);
    run_until_committed(&s, n1, 100);
    n3->paused = false;
    crash(&s, n1);
    node_t *l = await_leader(&s, 10000);
    assert_true(l == n2 || l == n3);
    sim_free(&s);
}

static void test_uncommitted_voters_truncated(void **state)
{
    static sim_t s;
    dynamic_init(&s, 3, 12);
    node_t *n1 = &s.nodes[0];
    sim_run(&s, 100);
    assert_int_equal(change(n1, 2, true), 0);
    run_until_committed(&s, n1, 100);
    assert_int_equal(change(n1, 3, true), 0);
    run_until_committed(&s, n1, 100);
    sim_run(&s, 50);
    /* cut off, the leader writes {1, 2}: in force here, never committed */
    cut_off(&s, n1, true);
    assert_int_equal(change(n1, 3, false), 0);
    assert_int_equal(view_of(n1).n_voters, 2);
    int64_t hw = n1->hw;
    node_t *l = leader_besides(&s, n1, 20000);
    propose(l, 9);
    cut_off(&s, n1, false);
    sim_run(&s, 5000);
    /* the entry was cut back and with it the set: {1, 2, 3} again */
    assert_int_equal(view_of(n1).n_voters, 3);
    assert_int_equal(view_of(n1).voters_offset, view_of(l).voters_offset);
    assert_true(n1->hw > hw);
    assert_int_equal(n1->log_end, l->log_end);
    sim_free(&s);
}

static void test_removed_leader_resigns(void **state)
{
    static sim_t s;
    dynamic_init(&s, 3, 13);
    node_t *n1 = &s.nodes[0];
    sim_run(&s, 100);
    assert_int_equal(change(n1, 2, true), 0);
    run_until_committed(&s, n1, 100);
    assert_int_equal(change(n1, 3, true), 0);
    run_until_committed(&s, n1, 100);
    int64_t elections = view_of(n1).elections;
    assert_int_equal(change(n1, 1, false), 0);
    /* committed by {2, 3}; then node 1 steps down and never runs again */
    sim_run(&s, 50);
    assert_int_equal(view_of(n1).role, KIQ_RAFT_RESIGNED);
    node_t *l = leader_besides(&s, n1, 20000);
    sim_run(&s, 10000);
    assert_ptr_equal(leader(&s), l);
    kiq_raft_view_t v = view_of(n1);
    assert_int_equal(v.n_voters, 2);
    assert_true(v.role == KIQ_RAFT_FOLLOWER || v.role == KIQ_RAFT_UNATTACHED);
    assert_int_equal(v.elections, elections);
    propose(l, 10);
    run_until_committed(&s, l, 100);
    sim_run(&s, 100);
    assert_int_equal(n1->log_end, l->log_end); /* it fetches on, as an observer */
    assert_int_equal(view_of(l).n_observers, 1);
    sim_free(&s);
}

static void nemesis(uint64_t seed, int n)
{
    static sim_t s;
    sim_init(&s, n, seed);
    s.loss_pct = 3;
    int64_t next_fault = 2000, next_write = 0;
    struct { node_t *nd; int kind; int64_t until; } fault = { NULL, 0, 0 };
    while (s.now < 60000) {
        sim_step(&s);
        if (s.now >= next_write) {
            node_t *l = leader(&s);
            if (l && s.next_value < 4000)
                propose(l, s.next_value++);
            next_write = s.now + 20 + (int64_t)(sim_rnd(&s) % 40);
        }
        if (fault.nd && s.now >= fault.until) {
            if (fault.kind == 0)
                node_boot(&s, fault.nd, seed + (uint64_t)s.now);
            else if (fault.kind == 1)
                fault.nd->paused = false;
            else
                cut_off(&s, fault.nd, false);
            fault.nd = NULL;
            next_fault = s.now + 1000 + (int64_t)(sim_rnd(&s) % 3000);
        }
        if (!fault.nd && s.now >= next_fault) {
            /* the leader half the time, else anyone */
            node_t *l = leader(&s);
            fault.nd = l && sim_rnd(&s) % 2 ? l : &s.nodes[sim_rnd(&s) % (uint64_t)n];
            fault.kind = (int)(sim_rnd(&s) % 3);
            fault.until = s.now + 500 + (int64_t)(sim_rnd(&s) % 5000);
            if (fault.kind == 0)
                crash(&s, fault.nd);
            else if (fault.kind == 1)
                fault.nd->paused = true;
            else
                cut_off(&s, fault.nd, true);
        }
    }
    if (fault.nd) {
        if (fault.kind == 0)
            node_boot(&s, fault.nd, seed);
        fault.nd->paused = false;
        cut_off(&s, fault.nd, false);
    }
    s.loss_pct = 0;
    assert_converged(&s);
    /* writes went on through the faults */
    assert_true(s.n_committed > 200);
    int epochs = 0;
    for (int e = 0; e < MAX_EPOCHS; e++)
        epochs += s.leader_of_epoch[e] >= 0;
    assert_true(epochs >= 2);
    sim_free(&s);
}

static void test_seeded_schedules(void **state)
{
    for (uint64_t seed = 1; seed <= 24; seed++)
        nemesis(seed, seed % 2 ? 3 : 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vote_granting),
        cmocka_unit_test(test_pre_vote),
        cmocka_unit_test(test_log_matching),
        cmocka_unit_test(test_commit_only_current_epoch),
        cmocka_unit_test(test_stale_leader_fenced),
        cmocka_unit_test(test_isolated_voter_does_not_disrupt),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_seeded_schedules),
        cmocka_unit_test(test_dynamic_voters),
        cmocka_unit_test(test_uncommitted_voters_truncated),
        cmocka_unit_test(test_removed_leader_resigns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
