/* Kafka's TokenBucket; see token_bucket.h. */
#include "metrics/token_bucket.h"

#include <math.h>

static double burst(const kiq_token_bucket_t *t, double quota)
{
    return (double)(t->samples - 1) * (double)t->window_ms / 1000.0 * quota;
}

static void refill(kiq_token_bucket_t *t, double quota, int64_t now_ms)
{
    double b = burst(t, quota), more = t->tokens + quota * (double)(now_ms - t->last_ms) / 1000.0;
    t->tokens = more < b ? more : b;
    t->last_ms = now_ms;
}

void kiq_token_bucket_init(kiq_token_bucket_t *t, int samples, int64_t window_ms, double quota, int64_t now_ms)
{
    *t = (kiq_token_bucket_t){.samples = samples < 1 ? 1 : samples, .window_ms = window_ms < 1 ? 1 : window_ms,
                              .last_ms = now_ms};
    t->tokens = burst(t, quota);
}

void kiq_token_bucket_record(kiq_token_bucket_t *t, double quota, double value, int64_t now_ms)
{
    refill(t, quota, now_ms);
    t->tokens -= value;
}

double kiq_token_bucket_tokens(kiq_token_bucket_t *t, double quota, int64_t now_ms)
{
    refill(t, quota, now_ms);
    return t->tokens;
}

int64_t kiq_token_bucket_throttle_ms(kiq_token_bucket_t *t, double quota, int64_t now_ms)
{
    double tokens = kiq_token_bucket_tokens(t, quota, now_ms);
    if (tokens >= 0 || !(quota > 0)) return 0;
    return (int64_t)llround(-tokens / quota * 1000.0);
}
