/* Kafka's sampled Rate; see sampled_rate.h. */
#include "metrics/sampled_rate.h"

#include <math.h>

void kiq_rate_init(kiq_sampled_rate_t *r, int samples, int64_t window_ms)
{
    *r = (kiq_sampled_rate_t){0};
    r->samples = samples < 1 ? 1 : samples > KIQ_RATE_MAX_SAMPLES ? KIQ_RATE_MAX_SAMPLES : samples;
    r->window_ms = window_ms < 1 ? 1 : window_ms;
}

/* The sample covering now_ms, a new window begun when the current one is
 * over (the oldest reused once all are taken). */
static kiq_rate_sample_t *current(kiq_sampled_rate_t *r, int64_t now_ms)
{
    if (r->nsamples == 0) {
        r->nsamples = 1;
        r->current = 0;
        r->s[0] = (kiq_rate_sample_t){0, now_ms};
    }
    kiq_rate_sample_t *s = &r->s[r->current];
    if (now_ms - s->start_ms < r->window_ms) return s;
    r->current = (r->current + 1) % r->samples;
    if (r->current >= r->nsamples) r->nsamples = r->current + 1;
    s = &r->s[r->current];
    *s = (kiq_rate_sample_t){0, now_ms};
    return s;
}

/* Windows older than all of them together count for nothing. */
static void purge(kiq_sampled_rate_t *r, int64_t now_ms)
{
    int64_t expire = (int64_t)r->samples * r->window_ms;
    for (int i = 0; i < r->nsamples; i++)
        if (now_ms - r->s[i].start_ms >= expire) r->s[i] = (kiq_rate_sample_t){0, now_ms};
}

void kiq_rate_record(kiq_sampled_rate_t *r, double value, int64_t now_ms)
{
    current(r, now_ms)->value += value;
}

int64_t kiq_rate_window_ms(kiq_sampled_rate_t *r, int64_t now_ms)
{
    purge(r, now_ms);
    if (r->nsamples == 0) current(r, now_ms);
    int64_t oldest = r->s[0].start_ms;
    for (int i = 1; i < r->nsamples; i++)
        if (r->s[i].start_ms < oldest) oldest = r->s[i].start_ms;
    int64_t elapsed = now_ms - oldest;
    int64_t full = elapsed / r->window_ms, min_full = r->samples - 1;
    if (full < min_full) elapsed += (min_full - full) * r->window_ms;
    return elapsed;
}

double kiq_rate_measure(kiq_sampled_rate_t *r, int64_t now_ms)
{
    int64_t window = kiq_rate_window_ms(r, now_ms); /* purges first */
    double sum = 0;
    for (int i = 0; i < r->nsamples; i++) sum += r->s[i].value;
    return window > 0 ? sum * 1000.0 / (double)window : 0;
}

int64_t kiq_quota_throttle_ms(double rate, double bound, int64_t window_ms)
{
    if (!(rate > bound) || !(bound > 0)) return 0;
    return (int64_t)llround((rate - bound) / bound * (double)window_ms);
}
