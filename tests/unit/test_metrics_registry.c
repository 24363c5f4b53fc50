/* The metrics registry (metrics/registry.h): families written by several
 * sources come out once, in the order first written, each with all its
 * samples; a removed source is not run again; and a source may take a lock
 * that the code adding or removing other sources holds (the registry's own
 * lock is not held while sources run), where a registry holding its lock
 * across the sources deadlocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "metrics/registry.h"

/* What a reader saw, as text: "family:" lines and "  suffix{k=v,...} value" lines. */
typedef struct seen {
    char text[4096];
    size_t len;
} seen_t;

static void put(seen_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->text + s->len, sizeof s->text - s->len, fmt, ap);
    va_end(ap);
    if (n > 0) s->len += (size_t)n;
}

static void seen_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    put(ctx, "%s %s (%s):\n", name, kiq_metric_type_name(type), help);
}

static void seen_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels,
                        int nlabels, double value)
{
    put(ctx, "  %s%s{", family, suffix);
    for (int i = 0; i < nlabels; i++) put(ctx, "%s%s=%s", i ? "," : "", labels[i].name, labels[i].value);
    put(ctx, "} %g\n", value);
}

static void collect(kiq_metrics_t *m, seen_t *s)
{
    memset(s, 0, sizeof *s);
    kiq_metric_sink_t sink = {seen_family, seen_sample, s};
    assert_int_equal(kiq_metrics_collect(m, &sink), 0);
}

static void lines_a(void *src, kiq_metric_out_t *o)
{
    kiq_metric_family(o, "calls_total", KIQ_METRIC_COUNTER, "calls");
    kiq_metric_sample(o, "", 3, "line", (const char *)src, NULL);
    kiq_metric_family(o, "queued", KIQ_METRIC_GAUGE, "waiting");
    kiq_metric_sample(o, "", 1, "line", (const char *)src, NULL);
}

static void times(void *src, kiq_metric_out_t *o)
{
    kiq_metric_family(o, "time_ms", KIQ_METRIC_SUMMARY, "time");
    kiq_metric_sample(o, "", 2.5, "quantile", "0.5", NULL);
    kiq_metric_sample(o, "_count", 7, NULL);
}

static void test_families_merge_in_first_written_order(void **state)
{
    kiq_metrics_t *m = kiq_metrics_new();
    assert_int_equal(kiq_metrics_add(m, lines_a, "one"), 0);
    assert_int_equal(kiq_metrics_add(m, times, NULL), 0);
    assert_int_equal(kiq_metrics_add(m, lines_a, "two"), 0);
    seen_t s;
    collect(m, &s);
    assert_string_equal(s.text, "calls_total counter (calls):\n"
                                "  calls_total{line=one} 3\n"
                                "  calls_total{line=two} 3\n"
                                "queued gauge (waiting):\n"
                                "  queued{line=one} 1\n"
                                "  queued{line=two} 1\n"
                                "time_ms summary (time):\n"
                                "  time_ms{quantile=0.5} 2.5\n"
                                "  time_ms_count{} 7\n");
    kiq_metrics_remove(m, "one");
    collect(m, &s);
    assert_null(strstr(s.text, "line=one"));
    assert_non_null(strstr(s.text, "line=two"));
    kiq_metrics_remove(m, "two");
    kiq_metrics_remove(m, NULL);
    collect(m, &s);
    assert_string_equal(s.text, "");
    kiq_metrics_free(m);
}

/* A subsystem's lock, held by its thread while it adds and removes a
 * source, and taken by its own source when the registry runs it. */
static pthread_mutex_t subsystem = PTHREAD_MUTEX_INITIALIZER;
static atomic_int in_source, collected, changed;

static void locking_source(void *src, kiq_metric_out_t *o)
{
    atomic_store(&in_source, 1);
    pthread_mutex_lock(&subsystem);
    kiq_metric_family(o, "locked", KIQ_METRIC_GAUGE, "read under the subsystem's lock");
    kiq_metric_sample(o, "", 1, NULL);
    pthread_mutex_unlock(&subsystem);
}

static void *collector(void *arg)
{
    seen_t s;
    memset(&s, 0, sizeof s);
    kiq_metric_sink_t sink = {seen_family, seen_sample, &s};
    kiq_metrics_collect(arg, &sink);
    atomic_store(&collected, strstr(s.text, "locked") ? 1 : -1);
    return NULL;
}

static bool wait_for(atomic_int *flag, int ms)
{
    int64_t until = kiq_clock_mono_ns() + (int64_t)ms * 1000000;
    while (!atomic_load(flag) && kiq_clock_mono_ns() < until) usleep(1000);
    return atomic_load(flag) != 0;
}

static void *changer(void *arg)
{
    kiq_metrics_t *m = arg;
    kiq_metrics_add(m, times, "later");
    kiq_metrics_remove(m, "later");
    atomic_store(&changed, 1);
    return NULL;
}

static void test_a_source_may_take_a_lock_its_registrar_holds(void **state)
{
    kiq_metrics_t *m = kiq_metrics_new();
    assert_int_equal(kiq_metrics_add(m, locking_source, NULL), 0);
    pthread_mutex_lock(&subsystem);
    pthread_t c, ch;
    assert_int_equal(pthread_create(&c, NULL, collector, m), 0);
    assert_true(wait_for(&in_source, 5000)); /* the collection waits for our lock now */
    /* the subsystem adds and removes a source while holding its lock */
    assert_int_equal(pthread_create(&ch, NULL, changer, m), 0);
    assert_true(wait_for(&changed, 5000));
    pthread_mutex_unlock(&subsystem);
    assert_true(wait_for(&collected, 5000));
    assert_int_equal(atomic_load(&collected), 1);
    pthread_join(c, NULL);
    pthread_join(ch, NULL);
    kiq_metrics_remove(m, NULL);
    kiq_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_merge_in_first_written_order),
        cmocka_unit_test(test_a_source_may_take_a_lock_its_registrar_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
