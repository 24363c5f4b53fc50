/* Dynamic voters (KIP-853, raft/raft.h) on the fake network of
 * support/raft_sim.h: the set in force from the log, majority by it,
 * add, remove and update checks, one change at a time, a set reverted
 * by truncation, a removed leader resigning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "proto/errors.h"
#include "raft/raft.h"
#include "support/raft_sim.h"

/* A kraft.version 1 quorum of n nodes: node 1 formatted standalone (its
 * log starts with the voter set {1}), the others empty, finding node 1
 * through their bootstrap server and fetching as observers. */
static void dynamic_init(kiq_sim_t *s, int n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->dynamic = true;
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
    s->nodes[0].log[0] = (kiq_sim_ent_t){ 0, 1000, 1 << 1 };
    s->nodes[0].log_end = 1;
    for (int i = 0; i < n; i++)
        kiq_sim_boot(s, &s->nodes[i], seed);
}

static int propose_voters(kiq_sim_node_t *nd, int32_t mask)
{
    kiq_raft_voter_set_t set = kiq_sim_set_of(mask);
    static int32_t value;
    value = 1000 + mask;
    int64_t at;
    return kiq_raft_propose_voters(nd->r, &set, &value, sizeof value, &at);
}

static int change(kiq_sim_node_t *nd, int32_t id, bool add)
{
    kiq_raft_replica_key_t k = { .id = id, .dir = { (uint8_t)id } };
    int rc = kiq_raft_voters_check(nd->r, &k, add);
    if (rc != 0)
        return rc;
    kiq_raft_voter_set_t set;
    kiq_raft_voters_changed(nd->r, &k, add, &set);
    return propose_voters(nd, kiq_sim_mask_of(&set));
}

static void run_until_committed(kiq_sim_t *s, kiq_sim_node_t *nd, int64_t within_ms)
{
    for (int64_t end = s->now + within_ms; s->now < end && nd->hw < nd->log_end;)
        kiq_sim_step(s);
    assert_int_equal(nd->hw, nd->log_end);
}

/* A running leader other than nd, within a bound. */
static kiq_sim_node_t *leader_besides(kiq_sim_t *s, kiq_sim_node_t *nd, int64_t within_ms)
{
    for (int64_t end = s->now + within_ms; s->now < end; kiq_sim_step(s))
        for (int i = 0; i < s->n; i++)
            if (&s->nodes[i] != nd && s->nodes[i].up && kiq_sim_view(&s->nodes[i]).role == KIQ_RAFT_LEADER)
                return &s->nodes[i];
    fail_msg("no leader besides node %d within %lld ms", nd->id, (long long)within_ms);
    return NULL;
}

static void test_dynamic_voters(void **state)
{
    static kiq_sim_t s;
    dynamic_init(&s, 3, 11);
    kiq_sim_node_t *n1 = &s.nodes[0], *n2 = &s.nodes[1], *n3 = &s.nodes[2];
    kiq_sim_run(&s, 100);
    assert_ptr_equal(kiq_sim_leader(&s), n1);
    kiq_raft_view_t v = kiq_sim_view(n1);
    assert_int_equal(v.kraft_version, 1);
    assert_int_equal(v.n_voters, 1);
    assert_int_equal(v.n_observers, 2); /* 2 and 3 found it through the bootstrap server */
    assert_int_equal(n2->log_end, n1->log_end);
    assert_int_equal(kiq_sim_view(n2).n_voters, 1);
    assert_int_equal(kiq_sim_view(n2).role, KIQ_RAFT_FOLLOWER);

    /* majority by the set in force: {1} commits alone */
    n2->paused = n3->paused = true;
    kiq_sim_propose(n1, 7);
    run_until_committed(&s, n1, 10);
    n2->paused = n3->paused = false;
    kiq_sim_run(&s, 100);

    /* a node that is no observer, and one voter change at a time */
    assert_int_equal(change(n1, 9, true), KIQ_ERR_REQUEST_TIMED_OUT);
    assert_int_equal(change(n1, 9, false), KIQ_ERR_VOTER_NOT_FOUND);
    assert_int_equal(change(n1, 1, false), KIQ_ERR_INVALID_REQUEST);
    assert_int_equal(change(n1, 1, true), KIQ_ERR_DUPLICATE_VOTER);
    assert_int_equal(change(n2, 3, true), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(change(n1, 2, true), 0);
    assert_int_equal(kiq_sim_view(n1).n_voters, 2); /* in force before it commits */
    assert_int_equal(change(n1, 3, true), KIQ_ERR_REQUEST_TIMED_OUT);
    /* {1, 2} needs node 2 now */
    n2->paused = true;
    kiq_sim_run(&s, 50);
    assert_true(n1->hw < n1->log_end);
    n2->paused = false;
    run_until_committed(&s, n1, 100);
    assert_int_equal(change(n1, 3, true), 0);
    run_until_committed(&s, n1, 100);
    kiq_sim_run(&s, 50);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kiq_sim_view(&s.nodes[i]).n_voters, 3);
        assert_int_equal(s.nodes[i].log_end, n1->log_end);
    }
    assert_int_equal(kiq_sim_view(n1).n_observers, 0);

    /* two of three commit; the leader lost, the others elect one */
    n3->paused = true;
    kiq_sim_propose(n1, 8);
    run_until_committed(&s, n1, 100);
    n3->paused = false;
    kiq_sim_crash(&s, n1);
    kiq_sim_node_t *l = kiq_sim_await_leader(&s, 10000);
    assert_true(l == n2 || l == n3);
    kiq_sim_free(&s);
}

static void test_uncommitted_voters_truncated(void **state)
{
    static kiq_sim_t s;
    dynamic_init(&s, 3, 12);
    kiq_sim_node_t *n1 = &s.nodes[0];
    kiq_sim_run(&s, 100);
    assert_int_equal(change(n1, 2, true), 0);
    run_until_committed(&s, n1, 100);
    assert_int_equal(change(n1, 3, true), 0);
    run_until_committed(&s, n1, 100);
    kiq_sim_run(&s, 50);
    /* cut off, the leader writes {1, 2}: in force here, never committed */
    kiq_sim_cut_off(&s, n1, true);
    assert_int_equal(change(n1, 3, false), 0);
    assert_int_equal(kiq_sim_view(n1).n_voters, 2);
    int64_t hw = n1->hw;
    kiq_sim_node_t *l = leader_besides(&s, n1, 20000);
    kiq_sim_propose(l, 9);
    kiq_sim_cut_off(&s, n1, false);
    kiq_sim_run(&s, 5000);
    /* the entry was cut back and with it the set: {1, 2, 3} again */
    assert_int_equal(kiq_sim_view(n1).n_voters, 3);
    assert_int_equal(kiq_sim_view(n1).voters_offset, kiq_sim_view(l).voters_offset);
    assert_true(n1->hw > hw);
    assert_int_equal(n1->log_end, l->log_end);
    kiq_sim_free(&s);
}

static void test_removed_leader_resigns(void **state)
{
    static kiq_sim_t s;
    dynamic_init(&s, 3, 13);
    kiq_sim_node_t *n1 = &s.nodes[0];
    kiq_sim_run(&s, 100);
    assert_int_equal(change(n1, 2, true), 0);
    run_until_committed(&s, n1, 100);
    assert_int_equal(change(n1, 3, true), 0);
    run_until_committed(&s, n1, 100);
    int64_t elections = kiq_sim_view(n1).elections;
    assert_int_equal(change(n1, 1, false), 0);
    /* committed by {2, 3}; then node 1 steps down and never runs again */
    kiq_sim_run(&s, 50);
    assert_int_equal(kiq_sim_view(n1).role, KIQ_RAFT_RESIGNED);
    kiq_sim_node_t *l = leader_besides(&s, n1, 20000);
    kiq_sim_run(&s, 10000);
    assert_ptr_equal(kiq_sim_leader(&s), l);
    kiq_raft_view_t v = kiq_sim_view(n1);
    assert_int_equal(v.n_voters, 2);
    assert_true(v.role == KIQ_RAFT_FOLLOWER || v.role == KIQ_RAFT_UNATTACHED);
    assert_int_equal(v.elections, elections);
    kiq_sim_propose(l, 10);
    run_until_committed(&s, l, 100);
    kiq_sim_run(&s, 100);
    assert_int_equal(n1->log_end, l->log_end); /* it fetches on, as an observer */
    assert_int_equal(kiq_sim_view(l).n_observers, 1);
    kiq_sim_free(&s);
}

/* UpdateRaftVoter's check: a voter of the set in force, directory id
 * included; the set written again is the same set at a new offset. */
static void test_voter_update(void **state)
{
    static kiq_sim_t s;
    kiq_sim_init(&s, 3, 14);
    kiq_sim_node_t *l = kiq_sim_await_leader(&s, 10000);
    kiq_sim_run(&s, 100);
    kiq_raft_replica_key_t k = { .id = l->id, .dir = { (uint8_t)l->id } };
    assert_int_equal(kiq_raft_voter_update_check(l->r, &k), KIQ_ERR_UNSUPPORTED_VERSION);
    kiq_sim_free(&s);

    dynamic_init(&s, 3, 14);
    kiq_sim_node_t *n1 = &s.nodes[0], *n2 = &s.nodes[1];
    kiq_sim_run(&s, 100);
    assert_int_equal(change(n1, 2, true), 0);
    run_until_committed(&s, n1, 100);
    kiq_sim_run(&s, 50);
    kiq_raft_replica_key_t two = { .id = 2, .dir = { 2 } }, other_dir = { .id = 2, .dir = { 9 } },
                           three = { .id = 3, .dir = { 3 } };
    assert_int_equal(kiq_raft_voter_update_check(n2->r, &two), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(kiq_raft_voter_update_check(n1->r, &other_dir), KIQ_ERR_VOTER_NOT_FOUND);
    assert_int_equal(kiq_raft_voter_update_check(n1->r, &three), KIQ_ERR_VOTER_NOT_FOUND);
    assert_int_equal(kiq_raft_voter_update_check(n1->r, &two), 0);
    int64_t before = kiq_sim_view(n1).voters_offset;
    kiq_raft_voter_set_t set;
    assert_true(kiq_raft_voters_before(n1->r, INT64_MAX, &set));
    assert_int_equal(propose_voters(n1, kiq_sim_mask_of(&set)), 0);
    /* one change at a time, an update included */
    assert_int_equal(kiq_raft_voter_update_check(n1->r, &two), KIQ_ERR_REQUEST_TIMED_OUT);
    run_until_committed(&s, n1, 100);
    kiq_sim_run(&s, 50);
    kiq_raft_view_t v = kiq_sim_view(n1);
    assert_true(v.voters_offset > before);
    assert_int_equal(v.n_voters, 2);
    assert_int_equal(kiq_sim_view(n2).voters_offset, v.voters_offset);
    assert_int_equal(kiq_raft_voter_update_check(n1->r, &two), 0);
    kiq_sim_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dynamic_voters),
        cmocka_unit_test(test_uncommitted_voters_truncated),
        cmocka_unit_test(test_removed_leader_resigns),
        cmocka_unit_test(test_voter_update),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
