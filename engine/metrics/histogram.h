/* A bounded histogram of durations for percentiles (Kafka's request-time
 * quantiles): log-linear buckets over microseconds — exact below 16 µs,
 * then eight buckets per power of two, so any value is within 12.5 % —
 * up to about twelve days. Like Kafka's (a Yammer histogram whose
 * reservoir decays exponentially, so its quantiles speak of the last
 * minutes), it forgets: values go to the window of the monotonic clock
 * they fall in (KIQ_HISTOGRAM_WINDOW_MS), and quantiles read the newest
 * KIQ_HISTOGRAM_WINDOWS windows, the current one included. Recording is
 * relaxed atomic adds; any thread records and reads. A value recorded
 * while its window's slot is being reused may be lost. */
#ifndef KIQ_METRICS_HISTOGRAM_H
#define KIQ_METRICS_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#define KIQ_HISTOGRAM_BUCKETS 304
#define KIQ_HISTOGRAM_WINDOWS 4
#define KIQ_HISTOGRAM_WINDOW_MS 15000

typedef struct kiq_histogram {
    /* the window (clock ms / KIQ_HISTOGRAM_WINDOW_MS, plus one so that a
     * zeroed histogram holds none) each slot counts; slot w % WINDOWS */
    atomic_int_fast64_t window[KIQ_HISTOGRAM_WINDOWS];
    atomic_uint_fast64_t n[KIQ_HISTOGRAM_WINDOWS][KIQ_HISTOGRAM_BUCKETS];
} kiq_histogram_t;

/* Records ns at the monotonic clock's now_ms (kiq_clock_mono_ms). */
void kiq_histogram_record_ns(kiq_histogram_t *h, int64_t ns, int64_t now_ms);
/* The q-quantile (0 < q <= 1) in milliseconds of what was recorded in the
 * windows still read at now_ms: the upper bound of the bucket it falls
 * in; 0 when nothing was. *count gets how many values were. */
double kiq_histogram_quantile_ms(kiq_histogram_t *h, double q, int64_t now_ms, uint64_t *count);

#endif
