/* The engine's clock moved ahead (kafkaiq.clock=manual): the mono and wall
 * clocks jump together, a worker sleeping towards a deadline the jump
 * passed runs at once, a timed wait ends as timed out, and the system
 * clock refuses to move. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/clock.h"
#include "core/cond.h"
#include "core/worker.h"

#define MINUTE_NS (60 * (int64_t)1000000000)

static void test_system_clock_does_not_move(void **state)
{
    (void)state;
    assert_int_equal(kiq_clock_advance_ms(1000), -1);
    assert_int_equal(kiq_clock_ahead(), 0);
}

static atomic_int rounds;

static int64_t count_round(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&rounds, 1);
    return 10 * 60 * 1000; /* ten minutes */
}

static void test_a_jump_wakes_what_waits_for_it(void **state)
{
    (void)state;
    kiq_clock_set_manual();
    int64_t mono = kiq_clock_mono_ns(), wall = kiq_clock_wall_ms();
    kiq_worker_config_t wc = {.name = "ten-minutes", .round = count_round, .first_delay_ms = 10 * 60 * 1000};
    kiq_worker_t *w = kiq_worker_start(&wc);
    assert_non_null(w);
    /* eleven minutes: past its first deadline, unless the worker read
     * the clock only after the jump, when the next jump is */
    int jumps = 0;
    int64_t until = kiq_clock_system_mono_ns() + 5 * (int64_t)1000000000;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c;
    kiq_cond_init_monotonic(&c);
    while (atomic_load(&rounds) == 0 && kiq_clock_system_mono_ns() < until) {
        if (jumps < 2) {
            assert_int_equal(kiq_clock_advance_ms(11 * 60 * 1000), 0);
            jumps++;
        }
        pthread_mutex_lock(&mu);
        kiq_cond_wait_ms(&c, &mu, 50);
        pthread_mutex_unlock(&mu);
    }
    assert_true(kiq_clock_mono_ns() - mono >= jumps * 11 * MINUTE_NS);
    assert_true(kiq_clock_wall_ms() - wall >= jumps * 11 * 60 * 1000);
    assert_int_equal(atomic_load(&rounds), 1);
    kiq_worker_stop(w);
    /* a wait whose deadline a jump passes ends timed out */
    int64_t deadline = kiq_clock_mono_ns() + 60 * MINUTE_NS;
    assert_int_equal(kiq_clock_advance_ms(61 * 60 * 1000), 0);
    pthread_mutex_lock(&mu);
    assert_false(kiq_cond_wait_until(&c, &mu, deadline));
    pthread_mutex_unlock(&mu);
    pthread_cond_destroy(&c);
    assert_int_equal(kiq_clock_advance_ms(-1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_clock_does_not_move),
        cmocka_unit_test(test_a_jump_wakes_what_waits_for_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
