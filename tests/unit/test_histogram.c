/* The request-time histogram: quantiles within 12.5 % of the value, and
 * forgetting as Kafka's decaying histograms do — what was recorded more
 * than KIQ_HISTOGRAM_WINDOWS windows ago no longer counts, a slot reused
 * for a new window starts empty, and a clock that jumps back reads none of
 * the future. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "metrics/histogram.h"

#define W KIQ_HISTOGRAM_WINDOW_MS

static void test_quantiles(void **state)
{
    (void)state;
    kiq_histogram_t *h = calloc(1, sizeof *h);
    uint64_t n;
    assert_true(kiq_histogram_quantile_ms(h, 0.5, 0, &n) == 0);
    assert_int_equal(n, 0);
    for (int i = 1; i <= 100; i++) kiq_histogram_record_ns(h, (int64_t)i * 1000000, 1000); /* 1..100 ms */
    double p50 = kiq_histogram_quantile_ms(h, 0.5, 1000, &n), p99 = kiq_histogram_quantile_ms(h, 0.99, 1000, &n);
    assert_int_equal(n, 100);
    assert_true(p50 >= 50 && p50 <= 50 * 1.125);
    assert_true(p99 >= 99 && p99 <= 99 * 1.125);
    free(h);
}

static void test_decays(void **state)
{
    (void)state;
    kiq_histogram_t *h = calloc(1, sizeof *h);
    uint64_t n;
    int64_t t0 = 5 * W + 10;
    for (int i = 0; i < 1000; i++) kiq_histogram_record_ns(h, 500000000, t0); /* a slow minute: 500 ms */
    assert_true(kiq_histogram_quantile_ms(h, 0.5, t0, &n) >= 500);
    /* still read while its window is among the newest */
    int64_t later = t0 + (KIQ_HISTOGRAM_WINDOWS - 1) * W;
    for (int i = 0; i < 10; i++) kiq_histogram_record_ns(h, 1000000, later); /* 1 ms */
    assert_true(kiq_histogram_quantile_ms(h, 0.5, later, &n) >= 500);
    assert_int_equal(n, 1010);
    /* one window on, the slow one is forgotten: only the fast ones speak */
    int64_t gone = t0 + KIQ_HISTOGRAM_WINDOWS * W;
    double p99 = kiq_histogram_quantile_ms(h, 0.99, gone, &n);
    assert_int_equal(n, 10);
    assert_true(p99 >= 1 && p99 <= 1.125);
    /* the slow window's slot, reused, starts empty */
    kiq_histogram_record_ns(h, 2000000, gone);
    assert_true(kiq_histogram_quantile_ms(h, 0.99, gone, &n) <= 2 * 1.125);
    assert_int_equal(n, 11);
    /* long idle: nothing left */
    assert_true(kiq_histogram_quantile_ms(h, 0.5, gone + 10 * W, &n) == 0);
    assert_int_equal(n, 0);
    /* read at an earlier clock: windows after it are not counted */
    kiq_histogram_quantile_ms(h, 0.5, t0, &n);
    assert_int_equal(n, 0);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_decays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
