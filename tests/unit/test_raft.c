/* KRaft's rules (raft/raft.h) on a fake clock and a fake network
 * (support/raft_sim.h): vote granting, PreVote, log matching and
 * truncation by DivergingEpoch, commit only through an entry of the
 * leader's own epoch, a stale leader fenced, a follower brought up from a
 * snapshot, and seeded schedules of crashes, pauses, cut links and lost
 * messages checked for one leader per epoch and a committed log that
 * never changes and is never lost. Dynamic voters: test_raft_voters.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "raft/raft.h"
#include "support/raft_sim.h"

/* ---- one node driven by hand */

/* Node id's log replaced by these epochs (one entry each), its quorum
 * state by (epoch, voted for, leader); restarted at the sim's time. */
static kiq_sim_node_t *with_log(kiq_sim_t *s, int32_t id, const int32_t *epochs, int n, kiq_raft_quorum_state_t qs)
{
    kiq_sim_node_t *nd = kiq_sim_node_of(s, id);
    kiq_sim_crash(s, nd);
    for (int i = 0; i < n; i++)
        nd->log[i] = (kiq_sim_ent_t){ epochs[i], 100 + i, 0 };
    nd->log_end = n;
    nd->qs = qs;
    kiq_sim_boot(s, nd, 1);
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
static kiq_raft_msg_t ask(kiq_sim_t *s, kiq_raft_msg_t m)
{
    s->n_sent = 0;
    kiq_raft_receive(kiq_sim_node_of(s, m.to)->r, s->now, &m);
    assert_int_equal(s->n_sent, 1);
    return s->sent[0];
}

static void test_vote_granting(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 1);
    s.capture = true;
    kiq_sim_node_t *n1 = with_log(&s, 1, (int32_t[]){ 1, 1, 1 }, 3, (kiq_raft_quorum_state_t){ 2, -1, -1 });

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
    kiq_sim_free(&s);
}

static void test_pre_vote(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 2);
    s.capture = true;
    kiq_sim_node_t *n1 = with_log(&s, 1, (int32_t[]){ 1, 2 }, 2, (kiq_raft_quorum_state_t){ 2, -1, -1 });
    int persists = n1->persists;

    /* no leader heard of: granted, and nothing changes here */
    kiq_raft_msg_t re = ask(&s, vote(2, 3, 2, 2, true));
    assert_true(re.vote_reply.granted && re.vote_reply.pre_vote);
    assert_int_equal(kiq_sim_view(n1).epoch, 2);
    assert_int_equal(kiq_sim_view(n1).voted_for, -1);
    assert_int_equal(n1->persists, persists);
    /* a log behind this one, or an epoch not past this one, is refused */
    assert_false(ask(&s, vote(2, 3, 1, 5, true)).vote_reply.granted);
    assert_false(ask(&s, vote(2, 2, 2, 2, true)).vote_reply.granted);

    /* a follower that hears from its leader refuses: the asker is the one cut off */
    kiq_raft_msg_t begin = { .type = KIQ_RAFT_BEGIN_EPOCH, .from = 3, .to = 1, .epoch = 3, .leader_id = 3 };
    s.n_sent = 0;
    kiq_raft_receive(n1->r, s.now, &begin);
    assert_int_equal(kiq_sim_view(n1).role, KIQ_RAFT_FOLLOWER);
    assert_false(ask(&s, vote(2, 4, 2, 2, true)).vote_reply.granted);
    assert_int_equal(kiq_sim_view(n1).epoch, 3);
    /* once the fetch timeout passes without the leader, it grants */
    s.now += s.fetch_timeout;
    assert_true(ask(&s, vote(2, 4, 2, 2, true)).vote_reply.granted);

    /* its own election: a pre-vote round first, with the epoch unchanged */
    s.n_sent = 0;
    kiq_raft_tick(n1->r, s.now);
    assert_int_equal(kiq_sim_view(n1).role, KIQ_RAFT_PROSPECTIVE);
    assert_int_equal(kiq_sim_view(n1).epoch, 3);
    /* two pre-votes, and one fetch to see whether the lost leader is back */
    assert_int_equal(s.n_sent, 3);
    assert_true(s.sent[0].vote.pre_vote && s.sent[0].epoch == 4);
    assert_true(s.sent[2].type == KIQ_RAFT_FETCH && s.sent[2].to == 3);
    kiq_raft_msg_t yes = { .type = KIQ_RAFT_VOTE_REPLY, .from = 2, .to = 1, .epoch = 3, .leader_id = -1 };
    yes.vote_reply.granted = yes.vote_reply.pre_vote = true;
    s.n_sent = 0;
    kiq_raft_receive(n1->r, s.now, &yes);
    /* a majority of pre-votes: now a candidate of epoch 4, voting for itself */
    assert_int_equal(kiq_sim_view(n1).role, KIQ_RAFT_CANDIDATE);
    assert_int_equal(n1->qs.epoch, 4);
    assert_int_equal(n1->qs.voted_for, 1);
    assert_int_equal(s.n_sent, 2);
    assert_false(s.sent[0].vote.pre_vote);
    yes.epoch = 4;
    yes.vote_reply.pre_vote = false;
    s.n_sent = 0;
    kiq_raft_receive(n1->r, s.now, &yes);
    assert_int_equal(kiq_sim_view(n1).role, KIQ_RAFT_LEADER);
    assert_int_equal(n1->log[2].epoch, 4); /* its epoch's first entry */
    kiq_sim_free(&s);
}

/* Node 1 leads epoch 5 over a log of epochs 1 1 2 2 4 (and its own 5). */
static kiq_sim_node_t *leader_of_5(kiq_sim_t *s)
{
    kiq_sim_node_t *n1 = with_log(s, 1, (int32_t[]){ 1, 1, 2, 2, 4 }, 5, (kiq_raft_quorum_state_t){ 4, -1, -1 });
    s->now += 3 * s->election_timeout;
    kiq_raft_tick(n1->r, s->now);
    kiq_raft_msg_t yes = { .type = KIQ_RAFT_VOTE_REPLY, .from = 2, .to = 1, .epoch = 4, .leader_id = -1 };
    yes.vote_reply.granted = yes.vote_reply.pre_vote = true;
    kiq_raft_receive(n1->r, s->now, &yes);
    yes.epoch = 5;
    yes.vote_reply.pre_vote = false;
    kiq_raft_receive(n1->r, s->now, &yes);
    assert_int_equal(kiq_sim_view(n1).role, KIQ_RAFT_LEADER);
    assert_int_equal(kiq_sim_view(n1).epoch, 5);
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
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 3);
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
    kiq_sim_free(&s);

    /* the follower side, over the fake network: node 3 holds uncommitted
     * entries of epochs 3 and 3 that node 1 never had; it truncates them
     * and ends with node 1's log */
    kiq_sim_init(&s, 3, 4);
    s.capture = true;
    kiq_sim_node_t *n1 = leader_of_5(&s);
    kiq_sim_node_t *n3 = with_log(&s, 3, (int32_t[]){ 1, 1, 3, 3, 3, 3 }, 6, (kiq_raft_quorum_state_t){ 3, -1, -1 });
    s.capture = false;
    s.n_sent = 0;
    kiq_raft_msg_t begin = { .type = KIQ_RAFT_BEGIN_EPOCH, .from = 1, .to = 3, .epoch = 5, .leader_id = 1 };
    kiq_raft_receive(n3->r, s.now, &begin);
    kiq_sim_node_of(&s, 2)->paused = true;
    kiq_sim_run(&s, 200);
    assert_int_equal(n3->log_end, n1->log_end);
    for (int64_t o = 0; o < n1->log_end; o++)
        assert_int_equal(n3->log[o].epoch, n1->log[o].epoch);
    assert_int_equal(n1->hw, 6);
    assert_int_equal(n3->hw, 6);
    kiq_sim_free(&s);
}

static void test_commit_only_current_epoch(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 5);
    s.capture = true;
    kiq_sim_node_t *n1 = leader_of_5(&s);
    /* node 2 has all of the older epochs, a majority with node 1: not enough */
    ask(&s, fetch(2, 5, 5, 4));
    assert_int_equal(n1->hw, 0);
    assert_int_equal(kiq_sim_view(n1).high_watermark, 0);
    /* once it has the entry of epoch 5, everything up to it commits */
    kiq_raft_msg_t re = ask(&s, fetch(2, 5, 6, 5));
    assert_int_equal(n1->hw, 6);
    assert_int_equal(re.fetch_reply.high_watermark, 6);
    /* a later entry needs the majority again */
    kiq_sim_propose(n1, 7);
    assert_int_equal(n1->hw, 6);
    ask(&s, fetch(3, 5, 7, 5));
    assert_int_equal(n1->hw, 7);
    kiq_raft_view_t v = kiq_sim_view(n1);
    assert_int_equal(v.voters[2].log_end, 7);
    assert_int_equal(v.voters[1].log_end, 6);
    kiq_sim_free(&s);
}

/* ---- whole quorums on the fake network */

static void test_stale_leader_fenced(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 6);
    kiq_sim_node_t *old = kiq_sim_await_leader(&s, 10000);
    for (int i = 0; i < 5; i++)
        kiq_sim_propose(old, s.next_value++);
    kiq_sim_run(&s, 100);
    int64_t committed = old->hw;
    assert_int_equal(committed, old->log_end);
    int32_t old_epoch = kiq_sim_view(old).epoch;

    /* cut off, it takes writes it can never commit */
    kiq_sim_cut_off(&s, old, true);
    int64_t cut_at = s.now;
    for (int i = 0; i < 3; i++)
        kiq_sim_propose(old, 1000 + i);
    kiq_sim_node_t *next = NULL;
    while (!next || next == old) {
        kiq_sim_step(&s);
        next = kiq_sim_leader(&s);
        if (next == old) { /* still the highest epoch: look at the others */
            next = NULL;
            for (int i = 0; i < s.n; i++)
                if (&s.nodes[i] != old && kiq_sim_view(&s.nodes[i]).role == KIQ_RAFT_LEADER)
                    next = &s.nodes[i];
        }
        assert_true(s.now - cut_at < s.fetch_timeout + 3 * s.election_timeout);
    }
    assert_true(kiq_sim_view(next).epoch > old_epoch);
    /* check quorum: the old leader steps down by itself */
    kiq_sim_run(&s, 2 * s.fetch_timeout);
    assert_int_not_equal(kiq_sim_view(old).role, KIQ_RAFT_LEADER);
    assert_int_equal(old->hw, committed);
    /* back on the network it follows, and its three writes are gone */
    kiq_sim_cut_off(&s, old, false);
    kiq_sim_assert_converged(&s);
    for (int64_t o = 0; o < old->log_end; o++)
        assert_true(old->log[o].value < 1000);
    kiq_sim_free(&s);
}

static void test_isolated_voter_does_not_disrupt(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 7);
    kiq_sim_node_t *l = kiq_sim_await_leader(&s, 10000);
    int32_t epoch = kiq_sim_view(l).epoch;
    kiq_sim_node_t *lone = &s.nodes[(l - s.nodes + 1) % 3];
    kiq_sim_cut_off(&s, lone, true);
    kiq_sim_run(&s, 20000);
    /* its pre-votes find no majority: its epoch stays, however often it tries */
    assert_int_equal(kiq_sim_view(lone).epoch, epoch);
    assert_true(kiq_sim_view(lone).elections > 3);
    kiq_sim_cut_off(&s, lone, false);
    kiq_sim_run(&s, 3000);
    assert_ptr_equal(kiq_sim_leader(&s), l);
    assert_int_equal(kiq_sim_view(l).epoch, epoch);
    kiq_sim_assert_converged(&s);
    kiq_sim_free(&s);
}

static void test_snapshot(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 8);
    kiq_sim_node_t *l = kiq_sim_await_leader(&s, 10000);
    kiq_sim_node_t *late = &s.nodes[(l - s.nodes + 1) % 3];
    kiq_sim_crash(&s, late);
    for (int i = 0; i < 60; i++)
        kiq_sim_propose(l, s.next_value++);
    kiq_sim_run(&s, 500);
    /* the leader snapshots what is committed and drops that prefix */
    kiq_raft_epoch_end_t id = { l->log[l->hw - 1].epoch, l->hw };
    assert_int_equal(kiq_raft_snapshot_loaded(l->r, id, NULL), 0);
    l->log_start = id.end_offset;
    l->snapshot = id;
    assert_int_equal(kiq_sim_view(l).log_start, id.end_offset);
    /* a snapshot of what is not committed is refused */
    assert_int_equal(kiq_raft_snapshot_loaded(l->r, (kiq_raft_epoch_end_t){ id.epoch, l->log_end + 1 }, NULL), -1);

    /* a voter that lost its disk comes back empty: it is sent to the snapshot */
    late->log_end = late->log_start = 0;
    late->qs = (kiq_raft_quorum_state_t){ 0, -1, -1 };
    kiq_sim_boot(&s, late, 8);
    for (int64_t end = s.now + 5000; !late->wants_snapshot; kiq_sim_step(&s))
        assert_true(s.now < end);
    assert_int_equal(late->snapshot.end_offset, id.end_offset);
    /* a FetchSnapshot that fails: it fetches again and is sent to it again */
    late->wants_snapshot = false;
    kiq_raft_snapshot_failed(late->r, s.now);
    for (int64_t end = s.now + 5000; !late->wants_snapshot; kiq_sim_step(&s))
        assert_true(s.now < end);
    assert_int_equal(late->snapshot.end_offset, id.end_offset);
    /* FetchSnapshot, played by copying the leader's state up to it */
    memcpy(late->log, l->log, sizeof(kiq_sim_ent_t) * (size_t)id.end_offset);
    late->log_start = late->log_end = id.end_offset;
    late->wants_snapshot = false;
    assert_int_equal(kiq_raft_snapshot_loaded(late->r, late->snapshot, NULL), 0);
    kiq_sim_propose(l, s.next_value++);
    kiq_sim_assert_converged(&s);
    assert_int_equal(kiq_sim_view(late).log_start, id.end_offset);
    kiq_sim_free(&s);
}

/* The nemesis: crashes and restarts, pauses, cut links, lost messages and
 * writes, at random by the seed, for a minute of fake time. */
static void nemesis(uint64_t seed, int n)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, n, seed);
    s.loss_pct = 3;
    int64_t next_fault = 2000, next_write = 0;
    struct { kiq_sim_node_t *nd; int kind; int64_t until; } fault = { NULL, 0, 0 };
    while (s.now < 60000) {
        kiq_sim_step(&s);
        if (s.now >= next_write) {
            kiq_sim_node_t *l = kiq_sim_leader(&s);
            if (l && s.next_value < 4000)
                kiq_sim_propose(l, s.next_value++);
            next_write = s.now + 20 + (int64_t)(kiq_sim_rnd(&s) % 40);
        }
        if (fault.nd && s.now >= fault.until) {
            if (fault.kind == 0)
                kiq_sim_boot(&s, fault.nd, seed + (uint64_t)s.now);
            else if (fault.kind == 1)
                fault.nd->paused = false;
            else
                kiq_sim_cut_off(&s, fault.nd, false);
            fault.nd = NULL;
            next_fault = s.now + 1000 + (int64_t)(kiq_sim_rnd(&s) % 3000);
        }
        if (!fault.nd && s.now >= next_fault) {
            /* the leader half the time, else anyone */
            kiq_sim_node_t *l = kiq_sim_leader(&s);
            fault.nd = l && kiq_sim_rnd(&s) % 2 ? l : &s.nodes[kiq_sim_rnd(&s) % (uint64_t)n];
            fault.kind = (int)(kiq_sim_rnd(&s) % 3);
            fault.until = s.now + 500 + (int64_t)(kiq_sim_rnd(&s) % 5000);
            if (fault.kind == 0)
                kiq_sim_crash(&s, fault.nd);
            else if (fault.kind == 1)
                fault.nd->paused = true;
            else
                kiq_sim_cut_off(&s, fault.nd, true);
        }
    }
    if (fault.nd) {
        if (fault.kind == 0)
            kiq_sim_boot(&s, fault.nd, seed);
        fault.nd->paused = false;
        kiq_sim_cut_off(&s, fault.nd, false);
    }
    s.loss_pct = 0;
    kiq_sim_assert_converged(&s);
    /* writes went on through the faults */
    assert_true(s.n_committed > 200);
    int epochs = 0;
    for (int e = 0; e < KIQ_SIM_MAX_EPOCHS; e++)
        epochs += s.leader_of_epoch[e] >= 0;
    assert_true(epochs >= 2);
    kiq_sim_free(&s);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
