/* A partition's replication state against a real partition log: the high
 * watermark as the lowest log end offset over the ISR (held back by an ISR
 * member that has not fetched yet, never moving back), Kafka's "caught up"
 * rule between fetches, ISR shrink and expand candidates with one change
 * in flight at a time, stale leader and partition epochs, a new leader's
 * high watermark unknown until it reaches where its term began, and the
 * errors a client or a follower gets from a replica that is not the
 * leader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log/partition_log.h"
#include "proto/errors.h"
#include "replica/partition_replica.h"
#include "support/log_fixture.h"

#define SELF 1
#define LAG_MS 1000

typedef struct fixture {
    kiq_test_log_dir_t *dir;
    kiq_partition_log_t *log;
    kiq_partition_replica_t rep;
} fixture_t;

static const int32_t REPLICAS[] = {1, 2, 3};

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || !(f->dir = kiq_test_log_dir_new("replica", "t-0"))) return -1;
    if (!(f->log = kiq_partition_log_open(f->dir->dir, &f->dir->cfg))) return -1;
    kiq_partition_replica_init(&f->rep, SELF, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    kiq_partition_replica_destroy(&f->rep);
    kiq_partition_log_free(f->log);
    kiq_test_log_dir_free(f->dir);
    free(f);
    return 0;
}

/* Appends a batch of n records at leader epoch `epoch`; the new LEO. */
static int64_t append(fixture_t *f, int n, int32_t epoch)
{
    int64_t last;
    assert_int_equal(kiq_test_append_batch(f->log, n, 1000, epoch, NULL, &last), 0);
    return last + 1;
}

static void lead(fixture_t *f, int32_t epoch, int32_t partition_epoch, const int32_t *isr, int nisr, int64_t now)
{
    assert_int_equal(kiq_partition_replica_become_leader(&f->rep, epoch, partition_epoch, REPLICAS, 3, isr, nisr, now,
                                                         f->log, LAG_MS),
                     0);
}

static bool fetched(fixture_t *f, int32_t replica, int64_t offset, int64_t now, bool *expand)
{
    bool moved, ex;
    kiq_partition_replica_follower_fetched(&f->rep, f->log, replica, offset, now, &moved, &ex);
    if (expand) *expand = ex;
    return moved;
}

static int64_t hw(fixture_t *f) { return kiq_partition_log_high_watermark(f->log); }

static const kiq_follower_state_t *follower(const kiq_replica_view_t *v, int32_t id)
{
    for (int i = 0; i < v->nfollowers; i++)
        if (v->followers[i].broker_id == id) return &v->followers[i];
    return NULL;
}

/* Standalone: the only replica, so every append is committed. */
static void test_alone_hw_follows_appends(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(kiq_partition_replica_role(&f->rep), KIQ_REPLICA_LEADER);
    assert_int_equal(kiq_partition_replica_isr_size(&f->rep), 1);
    int64_t leo = append(f, 3, 0);
    assert_int_equal(leo, 3);
    assert_true(kiq_partition_replica_advance_hw(&f->rep, f->log));
    assert_int_equal(hw(f), 3);
    assert_false(kiq_partition_replica_advance_hw(&f->rep, f->log)); /* nothing new */
}

/* HW = min LEO over the ISR; an ISR member that has not fetched in this
 * term holds it; it never moves back. */
static void test_hw_is_min_leo_over_isr(void **state)
{
    fixture_t *f = *state;
    lead(f, 5, 1, REPLICAS, 3, 0);
    int64_t leo = append(f, 10, 5);
    assert_false(kiq_partition_replica_advance_hw(&f->rep, f->log));
    assert_int_equal(hw(f), 0);
    assert_false(fetched(f, 2, leo, 10, NULL)); /* 3 has not fetched: held */
    assert_int_equal(hw(f), 0);
    assert_true(fetched(f, 3, 4, 10, NULL));
    assert_int_equal(hw(f), 4);
    assert_true(fetched(f, 3, leo, 20, NULL));
    assert_int_equal(hw(f), leo);
    /* a replica outside the set is not a follower */
    assert_false(fetched(f, 9, 0, 30, NULL));
    assert_false(fetched(f, 3, 2, 30, NULL)); /* a lower fetch does not bring it back */
    assert_int_equal(hw(f), leo);
    kiq_replica_view_t v;
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(follower(&v, 2)->leo, leo);
    assert_int_equal(follower(&v, 3)->leo, 2);
}

/* Kafka's caught-up rule and the shrink candidate: a follower is caught up
 * when it fetches at the leader's LEO, or as of its previous fetch when it
 * now asks for what the leader had then. */
static void test_shrink_candidate(void **state)
{
    fixture_t *f = *state;
    lead(f, 5, 1, REPLICAS, 3, 0);
    int64_t leo = append(f, 10, 5);
    int32_t isr[KIQ_MAX_REPLICAS];
    fetched(f, 2, leo, 500, NULL);
    assert_int_equal(kiq_partition_replica_shrink_candidate(&f->rep, 900, LAG_MS, isr), 0);
    /* 3 never fetched: counted caught up from the start of the term only */
    int n = kiq_partition_replica_shrink_candidate(&f->rep, 1200, LAG_MS, isr);
    assert_int_equal(n, 2);
    assert_int_equal(isr[0], 1);
    assert_int_equal(isr[1], 2);

    /* 2 keeps up through an append between its fetches */
    fetched(f, 2, leo, 1500, NULL);
    int64_t leo2 = append(f, 5, 5);
    fetched(f, 2, leo, 1700, NULL); /* what the leader had at 1500: caught up as of 1500 */
    kiq_replica_view_t v;
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(follower(&v, 2)->last_caught_up_ms, 1500);
    fetched(f, 2, leo2, 1800, NULL);
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(follower(&v, 2)->last_caught_up_ms, 1800);
    /* behind and asking for less than the leader had at its last fetch: no credit */
    int64_t leo3 = append(f, 5, 5);
    fetched(f, 2, leo2 - 1, 1900, NULL);
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(follower(&v, 2)->last_caught_up_ms, 1800);
    assert_true(leo3 > leo2);
    n = kiq_partition_replica_shrink_candidate(&f->rep, 2700, LAG_MS, isr);
    assert_int_equal(n, 2); /* only 3 lags */
    n = kiq_partition_replica_shrink_candidate(&f->rep, 2900, LAG_MS, isr);
    assert_int_equal(n, 1);
    assert_int_equal(isr[0], SELF);
}

/* The ISR changes an observer was told of. */
typedef struct isr_seen {
    int n;
    kiq_event_t e[4];
} isr_seen_t;

static void see_isr(void *ctx, const kiq_event_t *e)
{
    isr_seen_t *s = ctx;
    if (s->n < 4) s->e[s->n++] = *e;
}

/* Watches f's ISR changes into seen (until f->rep.observers is reset). */
static void watch_isr(fixture_t *f, kiq_observers_t *obs, isr_seen_t *seen)
{
    kiq_observer_t o = {see_isr, seen, 1u << KIQ_POINT_ISR_SHRUNK | 1u << KIQ_POINT_ISR_EXPANDED};
    assert_int_equal(kiq_observers_add(obs, &o), 0);
    f->rep.observers = obs;
}

/* One ISR change at a time; the controller's answer sets the ISR, which
 * lets the high watermark move past a dropped replica; a follower that
 * reaches the high watermark may come back. Each change is announced with
 * its reason: the follower's LEO against the leader's, how long since it
 * was caught up, and where the batches it concerns begin. */
static void test_isr_change_and_expand(void **state)
{
    fixture_t *f = *state;
    isr_seen_t seen = {0};
    kiq_observers_t obs = {0};
    watch_isr(f, &obs, &seen);
    lead(f, 5, 1, REPLICAS, 3, 0);
    int64_t leo = append(f, 10, 5);
    int32_t isr[KIQ_MAX_REPLICAS];
    fetched(f, 2, leo, 1100, NULL);
    assert_int_equal(hw(f), 0); /* 3 holds it */
    int n = kiq_partition_replica_shrink_candidate(&f->rep, 1200, LAG_MS, isr);
    assert_int_equal(n, 2);
    assert_true(kiq_partition_replica_begin_isr_change(&f->rep));
    assert_false(kiq_partition_replica_begin_isr_change(&f->rep));
    assert_int_equal(kiq_partition_replica_shrink_candidate(&f->rep, 1200, LAG_MS, isr), 0);
    /* an answer for another term is ignored */
    int32_t two[] = {1, 2};
    kiq_partition_replica_set_isr(&f->rep, f->log, 4, 2, two, 2, 1200, LAG_MS);
    assert_int_equal(kiq_partition_replica_isr_size(&f->rep), 3);
    assert_int_equal(seen.n, 0);
    kiq_partition_replica_set_isr(&f->rep, f->log, 5, 2, two, 2, 1250, LAG_MS);
    kiq_partition_replica_end_isr_change(&f->rep);
    assert_int_equal(kiq_partition_replica_isr_size(&f->rep), 2);
    /* 3 never fetched: out after 1250 ms, the whole log waiting for it */
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.e[0].point, KIQ_POINT_ISR_SHRUNK);
    assert_int_equal(seen.e[0].peer, 3);
    assert_int_equal(seen.e[0].first_offset, -1);
    assert_int_equal(seen.e[0].after, leo);
    assert_int_equal(seen.e[0].before, 0);
    assert_int_equal(seen.e[0].records, 2);
    assert_int_equal(seen.e[0].extra, 1250);
    assert_int_equal(seen.e[0].flags, KIQ_EVENT_LAGGED);
    /* the high watermark moved with the ISR: nothing is left to move */
    assert_int_equal(hw(f), leo);
    assert_false(kiq_partition_replica_advance_hw(&f->rep, f->log));

    bool expand;
    fetched(f, 3, 3, 1300, &expand);
    assert_false(expand); /* below the high watermark */
    fetched(f, 3, leo, 1400, &expand);
    assert_true(expand);
    n = kiq_partition_replica_expand_candidate(&f->rep, 3, isr);
    assert_int_equal(n, 3);
    assert_int_equal(isr[2], 3);
    assert_int_equal(kiq_partition_replica_expand_candidate(&f->rep, 2, isr), 0); /* already in */
    assert_true(kiq_partition_replica_begin_isr_change(&f->rep));
    fetched(f, 3, leo, 1500, &expand);
    assert_false(expand); /* already being asked for */
    kiq_partition_replica_set_isr(&f->rep, f->log, 5, 3, REPLICAS, 3, 1550, LAG_MS);
    kiq_partition_replica_end_isr_change(&f->rep);
    /* back, caught up at its fetch of 1500; what it missed began at 0 */
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.e[1].point, KIQ_POINT_ISR_EXPANDED);
    assert_int_equal(seen.e[1].peer, 3);
    assert_int_equal(seen.e[1].first_offset, leo);
    assert_int_equal(seen.e[1].after, leo);
    assert_int_equal(seen.e[1].before, 0);
    assert_int_equal(seen.e[1].records, 3);
    assert_int_equal(seen.e[1].extra, 50);
    f->rep.observers = NULL;
}

/* The controller's LeaderAndIsr may bring an ISR change before the answer
 * to the AlterPartition that asked for it: announced once, by whichever
 * comes first, with the same reason. */
static void test_isr_change_by_leader_and_isr(void **state)
{
    fixture_t *f = *state;
    isr_seen_t seen = {0};
    kiq_observers_t obs = {0};
    watch_isr(f, &obs, &seen);
    lead(f, 3, 1, REPLICAS, 3, 0);
    int64_t leo = append(f, 5, 3);
    fetched(f, 2, leo, 100, NULL);
    fetched(f, 3, 2, 100, NULL); /* behind, never caught up */
    assert_int_equal(hw(f), 2);
    int32_t two[] = {1, 2};
    lead(f, 3, 2, two, 2, 2500);
    kiq_partition_replica_set_isr(&f->rep, f->log, 3, 2, two, 2, 2600, LAG_MS);
    assert_int_equal(seen.n, 1);
    assert_int_equal(seen.e[0].point, KIQ_POINT_ISR_SHRUNK);
    assert_int_equal(seen.e[0].peer, 3);
    assert_int_equal(seen.e[0].first_offset, 2);
    assert_int_equal(seen.e[0].after, leo);
    assert_int_equal(seen.e[0].before, 2); /* the batches from the high watermark on waited for it */
    assert_int_equal(seen.e[0].extra, 2500);
    assert_int_equal(seen.e[0].flags, KIQ_EVENT_LAGGED);
    fetched(f, 3, leo, 2700, NULL);
    lead(f, 3, 3, REPLICAS, 3, 2800);
    kiq_partition_replica_set_isr(&f->rep, f->log, 3, 3, REPLICAS, 3, 2900, LAG_MS);
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.e[1].point, KIQ_POINT_ISR_EXPANDED);
    assert_int_equal(seen.e[1].peer, 3);
    assert_int_equal(seen.e[1].before, 2); /* where it left */
    assert_int_equal(seen.e[1].extra, 100);
    /* taken out by the controller (its broker fenced), not for lagging */
    lead(f, 3, 4, two, 2, 3000);
    assert_int_equal(seen.n, 3);
    assert_int_equal(seen.e[2].point, KIQ_POINT_ISR_SHRUNK);
    assert_int_equal(seen.e[2].extra, 300);
    assert_int_equal(seen.e[2].flags & KIQ_EVENT_LAGGED, 0);
    /* a new term is no ISR change */
    lead(f, 4, 5, REPLICAS, 3, 3100);
    assert_int_equal(seen.n, 3);
    f->rep.observers = NULL;
}

/* Stale leader epochs change nothing; a repeat of the same term keeps the
 * followers' progress and an older partition epoch does not undo an ISR
 * change; a new term starts afresh. */
static void test_epochs(void **state)
{
    fixture_t *f = *state;
    lead(f, 7, 3, REPLICAS, 3, 0);
    int64_t leo = append(f, 4, 7);
    fetched(f, 2, leo, 10, NULL);
    int32_t two[] = {1, 2};
    kiq_partition_replica_set_isr(&f->rep, f->log, 7, 4, two, 2, 10, LAG_MS);
    assert_int_equal(kiq_partition_replica_become_follower(&f->rep, 2, 6, 9, REPLICAS, 3, REPLICAS, 3), -1);
    assert_int_equal(kiq_partition_replica_become_leader(&f->rep, 6, 9, REPLICAS, 3, REPLICAS, 3, 0, f->log, LAG_MS), -1);
    assert_int_equal(kiq_partition_replica_role(&f->rep), KIQ_REPLICA_LEADER);
    assert_int_equal(kiq_partition_replica_leader_epoch(&f->rep), 7);

    lead(f, 7, 3, REPLICAS, 3, 50); /* a late repeat of the term's first state */
    kiq_replica_view_t v;
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(v.nisr, 2);
    assert_int_equal(v.partition_epoch, 4);
    assert_int_equal(follower(&v, 2)->leo, leo);
    lead(f, 7, 5, REPLICAS, 3, 60); /* newer news of the same term */
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(v.nisr, 3);
    assert_int_equal(follower(&v, 2)->leo, leo);

    lead(f, 8, 6, REPLICAS, 3, 70);
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(follower(&v, 2)->leo, -1);
    assert_int_equal(follower(&v, 2)->last_caught_up_ms, 70);

    assert_int_equal(kiq_partition_replica_become_follower(&f->rep, 3, 9, 7, REPLICAS, 3, REPLICAS, 3), 0);
    kiq_partition_replica_view(&f->rep, &v);
    assert_int_equal(v.role, KIQ_REPLICA_FOLLOWER);
    assert_int_equal(v.leader, 3);
    assert_false(kiq_partition_replica_advance_hw(&f->rep, f->log)); /* followers take the leader's */
    /* stopped: any epoch is welcome again */
    kiq_partition_replica_stop(&f->rep);
    assert_int_equal(kiq_partition_replica_become_follower(&f->rep, 3, 2, 1, REPLICAS, 3, REPLICAS, 3), 0);
}

/* A follower that becomes leader knows its own high watermark only: until
 * the ISR has everything it had when its term began, what the last leader
 * committed is unknown (Kafka's KIP-207). */
static void test_hw_known_in_new_term(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(kiq_partition_replica_become_follower(&f->rep, 2, 4, 1, REPLICAS, 3, REPLICAS, 3), 0);
    int64_t leo = append(f, 10, 4);
    kiq_partition_log_set_high_watermark(f->log, 6); /* as the last leader told it */
    assert_true(kiq_partition_replica_hw_known(&f->rep, f->log)); /* not a leader: nothing to hide */
    lead(f, 5, 2, REPLICAS, 3, 0);
    assert_false(kiq_partition_replica_hw_known(&f->rep, f->log));
    fetched(f, 2, leo, 10, NULL);
    fetched(f, 3, 8, 10, NULL);
    assert_int_equal(hw(f), 8);
    assert_false(kiq_partition_replica_hw_known(&f->rep, f->log));
    lead(f, 5, 3, REPLICAS, 3, 20); /* the same term again: the start stays */
    assert_false(kiq_partition_replica_hw_known(&f->rep, f->log));
    fetched(f, 3, leo, 30, NULL);
    assert_int_equal(hw(f), leo);
    assert_true(kiq_partition_replica_hw_known(&f->rep, f->log));
}

static void test_leader_checks(void **state)
{
    fixture_t *f = *state;
    lead(f, 5, 1, REPLICAS, 3, 0);
    assert_int_equal(kiq_partition_replica_check_leader(&f->rep, -1), KIQ_ERR_NONE);
    assert_int_equal(kiq_partition_replica_check_leader(&f->rep, 5), KIQ_ERR_NONE);
    assert_int_equal(kiq_partition_replica_check_leader(&f->rep, 4), KIQ_ERR_FENCED_LEADER_EPOCH);
    assert_int_equal(kiq_partition_replica_check_leader(&f->rep, 6), KIQ_ERR_UNKNOWN_LEADER_EPOCH);
    assert_int_equal(kiq_partition_replica_check_follower_fetch(&f->rep, 2, 5), KIQ_ERR_NONE);
    assert_int_equal(kiq_partition_replica_check_follower_fetch(&f->rep, 9, 5), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(kiq_partition_replica_check_follower_fetch(&f->rep, SELF, 5), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(kiq_partition_replica_check_follower_fetch(&f->rep, 2, 4), KIQ_ERR_FENCED_LEADER_EPOCH);

    assert_int_equal(kiq_partition_replica_become_follower(&f->rep, 2, 6, 2, REPLICAS, 3, REPLICAS, 3), 0);
    assert_int_equal(kiq_partition_replica_check_leader(&f->rep, -1), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(kiq_partition_replica_check_follower_fetch(&f->rep, 3, 6), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    kiq_partition_replica_stop(&f->rep);
    assert_int_equal(kiq_partition_replica_check_leader(&f->rep, -1), KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alone_hw_follows_appends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hw_is_min_leo_over_isr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shrink_candidate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_isr_change_and_expand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_isr_change_by_leader_and_isr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epochs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hw_known_in_new_term, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leader_checks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
