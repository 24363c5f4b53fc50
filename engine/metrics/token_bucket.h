/* A token bucket as Kafka's metrics library keeps one for the controller
 * mutation quota (KIP-599): it holds at most a burst of quota * (samples -
 * 1) windows' worth, refills at the quota per second, and each recording
 * takes its value out, going below zero; the quota is exceeded while it
 * is below zero, for -tokens / quota seconds.
 *
 * Not thread safe: the owner guards it (the quota manager's lock). */
#ifndef KIQ_METRICS_TOKEN_BUCKET_H
#define KIQ_METRICS_TOKEN_BUCKET_H

#include <stdint.h>

typedef struct kiq_token_bucket {
    double tokens;
    int64_t last_ms;
    int samples;
    int64_t window_ms;
} kiq_token_bucket_t;

/* Full for quota at now_ms. */
void kiq_token_bucket_init(kiq_token_bucket_t *t, int samples, int64_t window_ms, double quota, int64_t now_ms);
void kiq_token_bucket_record(kiq_token_bucket_t *t, double quota, double value, int64_t now_ms);
double kiq_token_bucket_tokens(kiq_token_bucket_t *t, double quota, int64_t now_ms);
/* How long until the bucket is back at zero: round(-tokens / quota * 1000); 0 when not below. */
int64_t kiq_token_bucket_throttle_ms(kiq_token_bucket_t *t, double quota, int64_t now_ms);

#endif
