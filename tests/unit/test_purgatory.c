/* The purgatory keyed by what operations wait for: a notified key tries
 * only its watchers, notify_all everyone, deadlines complete operations
 * as expired in deadline order, an operation with no keys waits for its
 * deadline alone, one that finishes leaves for good, stop completes
 * what is parked, and notify_here tries a key's watchers in the calling
 * thread, leaving those parked since the thread's last round to it, and
 * park_here makes the first try in the caller and still expires on time;
 * and with threads parking and notifying at once no notify is lost (a
 * notifier that finds no waiter skips the lock). Waits are bounded polls
 * on the purgatory's counters. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/clock.h"
#include "server/purgatory.h"

#define WAIT_MS 5000

/* A test operation: finishes when `ready` is set or it expires. */
typedef struct test_op {
    kiq_delayed_op_t op;
    uint64_t key;
    atomic_int tries;
    atomic_bool ready;
    atomic_int finished; /* 1 done, 2 done expired */
    int order;           /* when it finished, among all */
    pthread_t by;        /* the thread of its last try */
} test_op_t;

static atomic_int finish_seq;

static bool try_complete(kiq_delayed_op_t *op, bool expired)
{
    test_op_t *t = (test_op_t *)op;
    t->by = pthread_self();
    atomic_fetch_add(&t->tries, 1);
    if (!expired && !atomic_load(&t->ready)) return false;
    t->order = atomic_fetch_add(&finish_seq, 1);
    atomic_store(&t->finished, expired ? 2 : 1);
    return true;
}

static void init_op(test_op_t *t, const char *topic, int32_t partition, int64_t wait_ms)
{
    memset(t, 0, sizeof *t);
    t->key = kiq_purgatory_key(topic, strlen(topic), partition);
    t->op.deadline_ns = kiq_clock_mono_ns() + wait_ms * 1000000;
    t->op.try_complete = try_complete;
    t->op.keys = &t->key;
    t->op.nkeys = 1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls cond until it holds or WAIT_MS pass. */
#define WAIT_FOR(cond)                                                              \
    do {                                                                            \
        int64_t until_ = kiq_clock_mono_ns() + (int64_t)WAIT_MS * 1000000;          \
        while (!(cond) && kiq_clock_mono_ns() < until_) sleep_ms(1);                \
        assert_true(cond);                                                          \
    } while (0)

static uint64_t tried(kiq_purgatory_t *p)
{
    kiq_purgatory_stats_t s;
    kiq_purgatory_stats(p, &s);
    return s.tried;
}

static int waiting(kiq_purgatory_t *p)
{
    kiq_purgatory_stats_t s;
    kiq_purgatory_stats(p, &s);
    return s.waiting;
}

static void test_a_key_tries_only_its_watchers(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    test_op_t a, b;
    init_op(&a, "t", 0, 60000);
    init_op(&b, "t", 1, 60000);
    kiq_purgatory_park(p, &a.op);
    kiq_purgatory_park(p, &b.op);
    /* each is tried once when parked */
    WAIT_FOR(atomic_load(&a.tries) == 1 && atomic_load(&b.tries) == 1);
    WAIT_FOR(tried(p) == 2);
    for (int i = 0; i < 5; i++) kiq_purgatory_notify(p, kiq_purgatory_key("t", 1, 0));
    WAIT_FOR(atomic_load(&a.tries) >= 2);
    /* a notified key nobody watches tries no one */
    kiq_purgatory_notify(p, kiq_purgatory_key("u", 1, 0));
    kiq_purgatory_notify(p, kiq_purgatory_key("t", 1, 7));
    atomic_store(&a.ready, true);
    kiq_purgatory_notify(p, kiq_purgatory_key("t", 1, 0));
    WAIT_FOR(waiting(p) == 1);
    assert_int_equal(atomic_load(&a.finished), 1);
    assert_int_equal(atomic_load(&b.tries), 1);
    /* a finished operation is gone: its key tries nothing more; b's next
     * try, notified after, is the only one */
    uint64_t before = tried(p);
    kiq_purgatory_notify(p, kiq_purgatory_key("t", 1, 0));
    atomic_store(&b.ready, true);
    kiq_purgatory_notify(p, kiq_purgatory_key("t", 1, 1));
    WAIT_FOR(waiting(p) == 0); /* counted with the round's tries */
    assert_int_equal(atomic_load(&b.finished), 1);
    assert_int_equal(tried(p), before + 1);
    kiq_purgatory_free(p);
}

static void test_notify_all_tries_everyone(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    test_op_t ops[4];
    for (int i = 0; i < 4; i++) {
        init_op(&ops[i], "all", i, 60000);
        kiq_purgatory_park(p, &ops[i].op);
    }
    WAIT_FOR(tried(p) == 4);
    for (int i = 0; i < 4; i++) atomic_store(&ops[i].ready, true);
    kiq_purgatory_notify_all(p);
    WAIT_FOR(waiting(p) == 0);
    for (int i = 0; i < 4; i++) assert_int_equal(atomic_load(&ops[i].finished), 1);
    kiq_purgatory_free(p);
}

static void test_deadlines_expire_in_order(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    static const int waits[] = {120, 30, 90, 60, 10, 150};
    enum { N = sizeof waits / sizeof waits[0] };
    test_op_t ops[N];
    int base = atomic_load(&finish_seq);
    for (int i = 0; i < N; i++) {
        init_op(&ops[i], "d", i, waits[i]);
        if (i == 2) ops[i].op.nkeys = 0; /* waits for its deadline alone */
        kiq_purgatory_park(p, &ops[i].op);
    }
    WAIT_FOR(waiting(p) == 0);
    kiq_purgatory_stats_t s;
    kiq_purgatory_stats(p, &s);
    assert_int_equal(s.expired, N);
    /* 10, 30, 60, 90, 120, 150 ms */
    static const int rank[] = {4, 1, 3, 2, 0, 5};
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&ops[i].finished), 2);
        assert_int_equal(ops[i].order - base, rank[i]);
    }
    kiq_purgatory_free(p);
}

static void test_stop_completes_what_is_parked(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    test_op_t ops[50];
    for (int i = 0; i < 50; i++) {
        init_op(&ops[i], "s", i % 7, 60000);
        kiq_purgatory_park(p, &ops[i].op);
    }
    kiq_purgatory_stop(p);
    for (int i = 0; i < 50; i++) assert_int_equal(atomic_load(&ops[i].finished), 2);
    /* parked after the stop: finished at once */
    test_op_t late;
    init_op(&late, "s", 0, 60000);
    kiq_purgatory_park(p, &late.op);
    assert_int_equal(atomic_load(&late.finished), 2);
    kiq_purgatory_free(p);
}

static void test_notify_here_tries_in_the_caller(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    test_op_t a;
    init_op(&a, "h", 0, 60000);
    kiq_purgatory_park(p, &a.op);
    WAIT_FOR(tried(p) == 1); /* its first try, by the thread */
    assert_false(pthread_equal(a.by, pthread_self()));
    /* not ready: tried here, and watching again */
    kiq_purgatory_notify_here(p, kiq_purgatory_key("h", 1, 0));
    assert_int_equal(atomic_load(&a.tries), 2);
    assert_true(pthread_equal(a.by, pthread_self()));
    assert_int_equal(waiting(p), 1);
    /* another key's notify tries nothing */
    kiq_purgatory_notify_here(p, kiq_purgatory_key("h", 1, 1));
    assert_int_equal(atomic_load(&a.tries), 2);
    /* ready: finished before the call returns */
    atomic_store(&a.ready, true);
    kiq_purgatory_notify_here(p, kiq_purgatory_key("h", 1, 0));
    assert_int_equal(atomic_load(&a.finished), 1);
    assert_int_equal(waiting(p), 0);
    assert_int_equal(tried(p), 3);

    /* notified right after the park, whoever tries it finishes it once */
    enum { N = 200 };
    static test_op_t ops[N];
    for (int i = 0; i < N; i++) {
        init_op(&ops[i], "race", i % 3, 60000);
        kiq_purgatory_park(p, &ops[i].op);
        atomic_store(&ops[i].ready, true);
        kiq_purgatory_notify_here(p, ops[i].key);
    }
    WAIT_FOR(waiting(p) == 0);
    for (int i = 0; i < N; i++) assert_int_equal(atomic_load(&ops[i].finished), 1);
    kiq_purgatory_free(p);
}

static void test_park_here_tries_in_the_caller(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    /* ready: finished before the call returns, never waiting */
    test_op_t a;
    init_op(&a, "ph", 0, 60000);
    atomic_store(&a.ready, true);
    kiq_purgatory_park_here(p, &a.op);
    assert_int_equal(atomic_load(&a.finished), 1);
    assert_true(pthread_equal(a.by, pthread_self()));
    assert_int_equal(waiting(p), 0);
    /* not ready: tried once here, then watching its key */
    test_op_t b;
    init_op(&b, "ph", 1, 60000);
    kiq_purgatory_park_here(p, &b.op);
    assert_int_equal(atomic_load(&b.tries), 1);
    assert_int_equal(waiting(p), 1);
    atomic_store(&b.ready, true);
    kiq_purgatory_notify(p, kiq_purgatory_key("ph", 2, 1));
    WAIT_FOR(atomic_load(&b.finished) == 1);
    WAIT_FOR(waiting(p) == 0);
    /* the thread, asleep with nothing parked, still wakes for the deadline */
    test_op_t c;
    init_op(&c, "ph", 2, 20);
    kiq_purgatory_park_here(p, &c.op);
    WAIT_FOR(atomic_load(&c.finished) == 2);
    /* an earlier deadline than the one the thread sleeps until */
    test_op_t late, soon;
    init_op(&late, "ph", 3, 60000);
    kiq_purgatory_park_here(p, &late.op);
    init_op(&soon, "ph", 4, 20);
    kiq_purgatory_park_here(p, &soon.op);
    WAIT_FOR(atomic_load(&soon.finished) == 2);
    assert_int_equal(atomic_load(&late.finished), 0);
    kiq_purgatory_stop(p);
    assert_int_equal(atomic_load(&late.finished), 2);
    kiq_purgatory_free(p);
}

/* The stress test: one operation parked at a time per parker, on a key of
 * its own, which its notifier moves once, at a random moment around the
 * park: most buckets are empty, so a notifier often takes the lock-free
 * path just as the operation parks. The one notify must finish it. */
enum { STRESS_OPS = 3000 };
static atomic_uint_fast64_t stress_version[2 * STRESS_OPS];

typedef struct stress_op {
    kiq_delayed_op_t op;
    uint64_t key;
    int k;
    uint64_t seen; /* its key's version before it parked */
    atomic_int finished; /* 1 done, 2 expired */
} stress_op_t;

static bool stress_try(kiq_delayed_op_t *op, bool expired)
{
    stress_op_t *s = (stress_op_t *)op;
    if (!expired && atomic_load(&stress_version[s->k]) == s->seen) return false;
    atomic_store(&s->finished, expired ? 2 : 1);
    return true;
}

typedef struct stress_ctx {
    kiq_purgatory_t *p;
    stress_op_t *ops;
    int first;          /* its ops' first key */
    atomic_int current; /* the key being parked on, -1 before the first */
    atomic_bool parking;
    int lost;           /* operations not finished by their one notify */
} stress_ctx_t;

static uint64_t stress_key(int k) { return kiq_purgatory_key("stress", 6, k); }

static void *stress_parker(void *arg)
{
    stress_ctx_t *c = arg;
    for (int i = 0; i < STRESS_OPS; i++) {
        stress_op_t *s = &c->ops[i];
        s->k = c->first + i;
        s->key = stress_key(s->k);
        s->seen = atomic_load(&stress_version[s->k]);
        s->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)600 * 1000000000;
        s->op.try_complete = stress_try;
        s->op.keys = &s->key;
        s->op.nkeys = 1;
        atomic_store(&c->current, s->k);
        if (i % 2)
            kiq_purgatory_park_here(c->p, &s->op);
        else
            kiq_purgatory_park(c->p, &s->op);
        int64_t until = kiq_clock_mono_ns() + (int64_t)WAIT_MS * 1000000;
        while (atomic_load(&s->finished) != 1 && kiq_clock_mono_ns() < until) sched_yield();
        c->lost += atomic_load(&s->finished) != 1;
    }
    atomic_store(&c->parking, false);
    return NULL;
}

static void *stress_notifier(void *arg)
{
    stress_ctx_t *c = arg;
    unsigned seed = (unsigned)c->first + 1;
    int last = -1;
    /* counts notifies, not polls: the polling can outrun an int under ASan */
    for (unsigned i = 0; atomic_load(&c->parking);) {
        int k = atomic_load(&c->current);
        if (k < 0 || k == last) continue;
        /* somewhere before, during or after the park */
        for (volatile int spin = rand_r(&seed) % 3000; spin > 0; spin--) {}
        atomic_fetch_add(&stress_version[k], 1);
        if (i % 2)
            kiq_purgatory_notify_here(c->p, stress_key(k));
        else
            kiq_purgatory_notify(c->p, stress_key(k));
        last = k;
        i++;
    }
    return NULL;
}

static void test_no_notify_is_lost_under_races(void **state)
{
    (void)state;
    kiq_purgatory_t *p = kiq_purgatory_new();
    assert_int_equal(kiq_purgatory_start(p), 0);
    static stress_op_t ops[2][STRESS_OPS];
    memset(ops, 0, sizeof ops);
    static stress_ctx_t c[2];
    pthread_t pt[2], nt[2];
    for (int t = 0; t < 2; t++) {
        c[t].p = p;
        c[t].ops = ops[t];
        c[t].first = t * STRESS_OPS;
        c[t].lost = 0;
        atomic_init(&c[t].current, -1);
        atomic_init(&c[t].parking, true);
        assert_int_equal(pthread_create(&nt[t], NULL, stress_notifier, &c[t]), 0);
        assert_int_equal(pthread_create(&pt[t], NULL, stress_parker, &c[t]), 0);
    }
    for (int t = 0; t < 2; t++) {
        pthread_join(pt[t], NULL);
        pthread_join(nt[t], NULL);
    }
    assert_int_equal(c[0].lost + c[1].lost, 0);
    kiq_purgatory_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_key_tries_only_its_watchers),
        cmocka_unit_test(test_notify_all_tries_everyone),
        cmocka_unit_test(test_deadlines_expire_in_order),
        cmocka_unit_test(test_stop_completes_what_is_parked),
        cmocka_unit_test(test_notify_here_tries_in_the_caller),
        cmocka_unit_test(test_park_here_tries_in_the_caller),
        cmocka_unit_test(test_no_notify_is_lost_under_races),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
