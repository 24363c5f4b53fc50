/* The request memory pool (queued.max.request.bytes): large reservations
 * stop short of the reserve kept for small ones, small ones may fill the
 * whole capacity, an empty pool takes any one reservation, refusals are counted, taken bytes count whatever the
 * bound, and giving bytes back after a refusal wakes the waiters once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "net/memory_pool.h"

static void on_release(void *ctx) { (*(int *)ctx)++; }

static void test_reserve_is_kept_for_small_reservations(void **state)
{
    (void)state;
    enum { CAP = 8000, RESERVE = CAP / KIQ_MEMORY_POOL_RESERVE_SHARE };
    kiq_memory_pool_t *p = kiq_memory_pool_new(CAP);
    int woken = 0;
    assert_int_equal(kiq_memory_pool_on_release(p, on_release, &woken), 0);
    assert_true(kiq_memory_pool_reserve(p, CAP - RESERVE, false));
    assert_false(kiq_memory_pool_reserve(p, 1, false)); /* a large one stops at the reserve */
    assert_true(kiq_memory_pool_reserve(p, RESERVE, true)); /* a small one may take it */
    assert_false(kiq_memory_pool_reserve(p, 1, true));
    kiq_memory_pool_stats_t st;
    kiq_memory_pool_stats(p, &st);
    assert_int_equal(st.used, CAP);
    assert_int_equal(st.refused, 2);

    kiq_memory_pool_take(p, 100); /* bytes already read count past the bound */
    kiq_memory_pool_stats(p, &st);
    assert_int_equal(st.used, CAP + 100);

    kiq_memory_pool_release(p, 100);
    assert_int_equal(woken, 1); /* refused since the last wake-up */
    kiq_memory_pool_release(p, RESERVE);
    assert_int_equal(woken, 1); /* nothing refused since */
    assert_false(kiq_memory_pool_reserve(p, 1, false));
    kiq_memory_pool_release(p, CAP - RESERVE);
    assert_int_equal(woken, 2);
    kiq_memory_pool_stats(p, &st);
    assert_int_equal(st.used, 0);
    kiq_memory_pool_free(p);
}

/* A pool little larger than the largest request still takes it when it
 * holds nothing else (Kafka's pool is not strict either). */
static void test_an_empty_pool_takes_any_one_request(void **state)
{
    (void)state;
    kiq_memory_pool_t *p = kiq_memory_pool_new(8000);
    assert_true(kiq_memory_pool_reserve(p, 7900, false));
    assert_false(kiq_memory_pool_reserve(p, 7900, false));
    kiq_memory_pool_release(p, 7900);
    assert_true(kiq_memory_pool_reserve(p, 9000, false));
    assert_false(kiq_memory_pool_reserve(p, 1, true));
    kiq_memory_pool_release(p, 9000);
    kiq_memory_pool_free(p);
}

static void test_unbounded_pool_only_counts(void **state)
{
    (void)state;
    kiq_memory_pool_t *p = kiq_memory_pool_new(-1);
    assert_true(kiq_memory_pool_reserve(p, (size_t)1 << 40, false));
    kiq_memory_pool_stats_t st;
    kiq_memory_pool_stats(p, &st);
    assert_int_equal(st.capacity, -1);
    assert_int_equal(st.used, (int64_t)1 << 40);
    assert_int_equal(st.refused, 0);
    kiq_memory_pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_is_kept_for_small_reservations),
        cmocka_unit_test(test_an_empty_pool_takes_any_one_request),
        cmocka_unit_test(test_unbounded_pool_only_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
