/* The fake clock and network of the raft tests; see raft_sim.h. */
#include "support/raft_sim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

uint64_t kiq_sim_rnd(kiq_sim_t *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

kiq_sim_node_t *kiq_sim_node_of(kiq_sim_t *s, int32_t id)
{
    for (int i = 0; i < s->n; i++)
        if (s->nodes[i].id == id)
            return &s->nodes[i];
    return NULL;
}

kiq_raft_voter_set_t kiq_sim_set_of(int32_t mask)
{
    kiq_raft_voter_set_t set = { .n = 0 };
    for (int32_t id = 1; id < 31; id++)
        if (mask & (1 << id))
            set.voters[set.n++] = (kiq_raft_replica_key_t){ .id = id, .dir = { (uint8_t)id } };
    return set;
}

int32_t kiq_sim_mask_of(const kiq_raft_voter_set_t *set)
{
    int32_t mask = 0;
    for (int i = 0; set && i < set->n; i++)
        mask |= 1 << set->voters[i].id;
    return mask;
}

/* ---- the host callbacks */

static void io_send(void *ctx, const kiq_raft_msg_t *m)
{
    kiq_sim_node_t *nd = ctx;
    kiq_sim_t *s = nd->s;
    if (s->capture) {
        assert_true(s->n_sent < 64);
        s->sent[s->n_sent++] = *m;
        return;
    }
    kiq_sim_node_t *to = kiq_sim_node_of(s, m->to < 0 ? 1 : m->to); /* a bootstrap server is node 1 */
    int fi = (int)(nd - s->nodes);
    if (!to || s->cut[fi][to - s->nodes] || (s->loss_pct && (int)(kiq_sim_rnd(s) % 100) < s->loss_pct))
        return;
    if (s->nq == s->capq) {
        s->capq = s->capq ? s->capq * 2 : 256;
        s->q = realloc(s->q, (size_t)s->capq * sizeof *s->q);
    }
    kiq_sim_wire_t *w = &s->q[s->nq++];
    w->at = s->now + s->min_delay + (int64_t)(kiq_sim_rnd(s) % (uint64_t)(s->max_delay - s->min_delay + 1));
    w->m = *m;
    w->entries = NULL;
    if (m->type == KIQ_RAFT_FETCH_REPLY && m->fetch_reply.n_entries) {
        w->entries = malloc((size_t)m->fetch_reply.n_entries * sizeof *w->entries);
        for (int i = 0; i < m->fetch_reply.n_entries; i++)
            w->entries[i] = (kiq_sim_ent_t){ m->fetch_reply.entries[i].epoch, *(const int32_t *)m->fetch_reply.entries[i].data,
                                     kiq_sim_mask_of(m->fetch_reply.entries[i].voters) };
    }
}

static int io_append(void *ctx, int64_t offset, const kiq_raft_entry_t *e, int n)
{
    kiq_sim_node_t *nd = ctx;
    assert_int_equal(offset, nd->log_end);
    for (int i = 0; i < n; i++) {
        assert_int_equal(e[i].count, 1);
        assert_true(nd->log_end < KIQ_SIM_MAX_LOG);
        nd->log[nd->log_end++] = (kiq_sim_ent_t){ e[i].epoch, *(const int32_t *)e[i].data, kiq_sim_mask_of(e[i].voters) };
    }
    return 0;
}

static int io_truncate(void *ctx, int64_t end)
{
    kiq_sim_node_t *nd = ctx;
    /* nothing committed is ever taken back */
    assert_true(end >= nd->hw);
    nd->log_end = end;
    return 0;
}

static int io_read(void *ctx, int64_t offset, const kiq_raft_entry_t **e, int *n)
{
    kiq_sim_node_t *nd = ctx;
    assert_true(offset >= nd->log_start);
    int k = 0;
    for (int64_t o = offset; o < nd->log_end && k < KIQ_SIM_READ_MAX; o++, k++) {
        nd->read_values[k] = nd->log[o].value;
        nd->read_sets[k] = kiq_sim_set_of(nd->log[o].voters);
        nd->read_buf[k] = (kiq_raft_entry_t){ nd->log[o].epoch, 1, &nd->read_values[k], sizeof(int32_t),
                                              nd->log[o].voters ? &nd->read_sets[k] : NULL };
    }
    *e = nd->read_buf;
    *n = k;
    return 0;
}

static int io_persist(void *ctx, const kiq_raft_quorum_state_t *st)
{
    kiq_sim_node_t *nd = ctx;
    /* a vote is never cast twice in one epoch, even across restarts */
    if (st->epoch == nd->qs.epoch && nd->qs.voted_for >= 0)
        assert_true(st->voted_for == nd->qs.voted_for);
    assert_true(st->epoch >= nd->qs.epoch);
    nd->qs = *st;
    nd->persists++;
    return 0;
}

void kiq_sim_propose(kiq_sim_node_t *nd, int32_t value)
{
    int64_t at;
    assert_int_equal(kiq_raft_propose(nd->r, 1, &value, sizeof value, &at), 0);
}

static void io_became(void *ctx, kiq_raft_role_t role, int32_t epoch, int32_t leader)
{
    kiq_sim_node_t *nd = ctx;
    kiq_sim_t *s = nd->s;
    if (role != KIQ_RAFT_LEADER)
        return;
    assert_true(epoch > 0 && epoch < KIQ_SIM_MAX_EPOCHS);
    /* one leader per epoch */
    if (s->leader_of_epoch[epoch] >= 0)
        assert_int_equal(s->leader_of_epoch[epoch], nd->id);
    s->leader_of_epoch[epoch] = nd->id;
    kiq_sim_propose(nd, -epoch); /* the epoch's LeaderChangeMessage */
}

static void io_committed(void *ctx, int64_t hw)
{
    kiq_sim_node_t *nd = ctx;
    kiq_sim_t *s = nd->s;
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
    kiq_sim_node_t *nd = ctx;
    nd->wants_snapshot = true;
    nd->snapshot = id;
}

static const kiq_raft_io_t IO = {
    .send = io_send, .append = io_append, .truncate = io_truncate, .read = io_read, .persist = io_persist,
    .became = io_became, .committed = io_committed, .fetch_snapshot = io_fetch_snapshot,
};

/* ---- nodes and the clock */

void kiq_sim_boot(kiq_sim_t *s, kiq_sim_node_t *nd, uint64_t seed)
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
                sets[c.n_voter_sets++] = (kiq_raft_voters_at_t){ o, kiq_sim_set_of(nd->log[o].voters) };
    }
    kiq_raft_epoch_end_t starts[KIQ_SIM_MAX_EPOCHS];
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

void kiq_sim_init(kiq_sim_t *s, int n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->rng = seed * 2654435761ULL + 1;
    s->min_delay = 1;
    s->max_delay = 5;
    s->election_timeout = 1000;
    s->fetch_timeout = 2000;
    for (int i = 0; i < KIQ_SIM_MAX_EPOCHS; i++)
        s->leader_of_epoch[i] = -1;
    for (int i = 0; i < n; i++) {
        kiq_sim_node_t *nd = &s->nodes[i];
        nd->s = s;
        nd->id = i + 1;
        nd->qs = (kiq_raft_quorum_state_t){ 0, -1, -1 };
        nd->snapshot = (kiq_raft_epoch_end_t){ -1, -1 };
    }
    for (int i = 0; i < n; i++)
        kiq_sim_boot(s, &s->nodes[i], seed);
}

void kiq_sim_free(kiq_sim_t *s)
{
    for (int i = 0; i < s->n; i++)
        kiq_raft_free(s->nodes[i].r);
    for (int i = 0; i < s->nq; i++)
        free(s->q[i].entries);
    free(s->q);
}

void kiq_sim_crash(kiq_sim_t *s, kiq_sim_node_t *nd)
{
    kiq_raft_free(nd->r);
    nd->r = NULL;
    nd->up = false;
}

/* One millisecond: messages due are delivered in the order sent, a paused
 * node's wait (as a stopped process's socket would hold them); then every
 * running node ticks. */
void kiq_sim_step(kiq_sim_t *s)
{
    s->now++;
    int keep = 0;
    int nq = s->nq;
    for (int i = 0; i < nq; i++) {
        kiq_sim_wire_t w = s->q[i];
        kiq_sim_node_t *to = kiq_sim_node_of(s, w.m.to < 0 ? 1 : w.m.to);
        if (w.at > s->now || (to->up && to->paused)) {
            s->q[keep++] = w;
            continue;
        }
        if (to->up) {
            kiq_raft_entry_t es[KIQ_SIM_READ_MAX];
            kiq_raft_voter_set_t ss[KIQ_SIM_READ_MAX];
            if (w.entries) {
                for (int k = 0; k < w.m.fetch_reply.n_entries; k++) {
                    ss[k] = kiq_sim_set_of(w.entries[k].voters);
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

void kiq_sim_run(kiq_sim_t *s, int64_t ms)
{
    for (int64_t end = s->now + ms; s->now < end;)
        kiq_sim_step(s);
}

kiq_raft_view_t kiq_sim_view(const kiq_sim_node_t *nd)
{
    kiq_raft_view_t v;
    kiq_raft_view(nd->r, &v);
    return v;
}

kiq_sim_node_t *kiq_sim_leader(kiq_sim_t *s)
{
    kiq_sim_node_t *best = NULL;
    kiq_raft_view_t v;
    for (int i = 0; i < s->n; i++) {
        kiq_sim_node_t *nd = &s->nodes[i];
        if (!nd->up || nd->paused)
            continue;
        kiq_raft_view(nd->r, &v);
        if (v.role == KIQ_RAFT_LEADER && (!best || v.epoch > kiq_sim_view(best).epoch))
            best = nd;
    }
    return best;
}

kiq_sim_node_t *kiq_sim_await_leader(kiq_sim_t *s, int64_t within_ms)
{
    for (int64_t end = s->now + within_ms; s->now < end; kiq_sim_step(s)) {
        kiq_sim_node_t *l = kiq_sim_leader(s);
        if (l)
            return l;
    }
    fail_msg("no leader within %lld ms", (long long)within_ms);
    return NULL;
}

void kiq_sim_cut_off(kiq_sim_t *s, kiq_sim_node_t *nd, bool cut)
{
    int i = (int)(nd - s->nodes);
    for (int j = 0; j < s->n; j++)
        if (j != i)
            s->cut[i][j] = s->cut[j][i] = cut;
}

void kiq_sim_assert_converged(kiq_sim_t *s)
{
    kiq_sim_node_t *l = kiq_sim_await_leader(s, 20000);
    kiq_sim_propose(l, s->next_value++);
    kiq_sim_run(s, 3000);
    l = kiq_sim_leader(s);
    assert_non_null(l);
    assert_int_equal(l->hw, l->log_end);
    assert_int_equal(s->n_committed, l->hw);
    for (int i = 0; i < s->n; i++) {
        kiq_sim_node_t *nd = &s->nodes[i];
        if (!nd->up)
            continue;
        assert_int_equal(nd->log_end, l->log_end);
        assert_int_equal(nd->hw, l->hw);
        for (int64_t o = nd->log_start; o < nd->log_end; o++)
            assert_true(nd->log[o].epoch == l->log[o].epoch && nd->log[o].value == l->log[o].value);
    }
}
