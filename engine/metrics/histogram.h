/* A bounded histogram of durations for percentiles (Kafka's request-time
 * quantiles): log-linear buckets over microseconds — exact below 16 µs,
 * then eight buckets per power of two, so any value is within 12.5 % —
 * up to about twelve days. Recording is one relaxed atomic add; any thread
 * records and reads. */
#ifndef KIQ_METRICS_HISTOGRAM_H
#define KIQ_METRICS_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

#define KIQ_HISTOGRAM_BUCKETS 304

typedef struct kiq_histogram {
    atomic_uint_fast64_t n[KIQ_HISTOGRAM_BUCKETS];
} kiq_histogram_t;

void kiq_histogram_record_ns(kiq_histogram_t *h, int64_t ns);
/* The q-quantile (0 < q <= 1) in milliseconds: the upper bound of the
 * bucket it falls in; 0 when nothing was recorded. *count gets how many
 * values were. */
double kiq_histogram_quantile_ms(kiq_histogram_t *h, double q, uint64_t *count);

#endif
