/* A rate over sampled windows, as Kafka's metrics library measures one for
 * quotas (a Rate over a SampledStat of sums): `samples` windows of
 * `window_ms` each; a window ends when its time is up; the oldest is
 * reused once all are taken; windows older than samples * window_ms are
 * reset before a measure. The rate divides the windows' sum by the time
 * they cover, counted as at least samples - 1 whole windows, so a first
 * burst is not measured over a few milliseconds.
 *
 * Not thread safe: the owner guards it (the quota manager's lock). */
#ifndef KIQ_METRICS_SAMPLED_RATE_H
#define KIQ_METRICS_SAMPLED_RATE_H

#include <stdint.h>

#define KIQ_RATE_MAX_SAMPLES 64

typedef struct kiq_rate_sample {
    double value;
    int64_t start_ms; /* when this window began */
} kiq_rate_sample_t;

typedef struct kiq_sampled_rate {
    kiq_rate_sample_t s[KIQ_RATE_MAX_SAMPLES];
    int nsamples;  /* windows in use (grows to samples) */
    int current;
    int samples;
    int64_t window_ms;
} kiq_sampled_rate_t;

/* samples is clamped to 1..KIQ_RATE_MAX_SAMPLES, window_ms to >= 1. */
void kiq_rate_init(kiq_sampled_rate_t *r, int samples, int64_t window_ms);
void kiq_rate_record(kiq_sampled_rate_t *r, double value, int64_t now_ms);
/* The time the rate is measured over at now_ms (Kafka's Rate.windowSize). */
int64_t kiq_rate_window_ms(kiq_sampled_rate_t *r, int64_t now_ms);
/* Per second. */
double kiq_rate_measure(kiq_sampled_rate_t *r, int64_t now_ms);

/* How long a client measured at `rate` must wait for it to come down to
 * `bound` over a window of window_ms (Kafka's QuotaUtils.throttleTime):
 * (rate - bound) / bound * window_ms, rounded; 0 when within the bound. */
int64_t kiq_quota_throttle_ms(double rate, double bound, int64_t window_ms);

#endif
