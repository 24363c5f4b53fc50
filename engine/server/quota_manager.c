/* Client quota sensors; see quota_manager.h. */
#include "server/quota_manager.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/str_map.h"
#include "metrics/sampled_rate.h"
#include "metrics/token_bucket.h"

typedef struct sensor {
    char *user, *client; /* the tags: "" where the matched entity has no such part */
    double bound;
    kiq_sampled_rate_t rate;
    /* throttle-time, Kafka's average over the same windows: sum and count */
    kiq_sampled_rate_t throttle_sum, throttle_n;
    /* controller_mutation_rate: Kafka decides by a token bucket instead */
    kiq_token_bucket_t bucket;
} sensor_t;

struct kiq_quota_manager {
    int samples;
    int64_t window_ms;
    const kiq_quota_source_ops_t *source;
    void *source_ctx;
    pthread_mutex_t mu; /* guards everything below */
    uint64_t version; /* the source's version `resolved` was filled at */
    bool resolved_any; /* resolved holds entries of that version */
    /* per key: "user\0client" -> its sensor, or &no_quota */
    kiq_str_map_t *resolved[KIQ_QUOTA__COUNT];
    /* per key: "tag user\0tag client" -> sensor; kept across changes (rates go on) */
    kiq_str_map_t *sensors[KIQ_QUOTA__COUNT];
    /* Not under mu, read first by every recording: per key, the source's
     * version + 1 it was last checked at, shifted left by one, with bit 0
     * whether any client had a quota for the key then (0: not checked).
     * A recording for a key nobody has a quota for has nothing to
     * measure, and the lock and the lookup would be all producers' and
     * consumers' to share. */
    atomic_uint_fast64_t checked[KIQ_QUOTA__COUNT];
};

static sensor_t no_quota;

kiq_quota_manager_t *kiq_quota_manager_new(int samples, int64_t window_ms, const kiq_quota_source_ops_t *source,
                                           void *source_ctx)
{
    kiq_quota_manager_t *qm = calloc(1, sizeof *qm);
    if (!qm) return NULL;
    qm->samples = samples;
    qm->window_ms = window_ms;
    qm->source = source;
    qm->source_ctx = source_ctx;
    pthread_mutex_init(&qm->mu, NULL);
    for (int k = 0; k < KIQ_QUOTA__COUNT; k++)
        if (!(qm->resolved[k] = kiq_str_map_new()) || !(qm->sensors[k] = kiq_str_map_new())) {
            kiq_quota_manager_free(qm);
            return NULL;
        }
    return qm;
}

void kiq_quota_manager_free(kiq_quota_manager_t *qm)
{
    if (!qm) return;
    for (int k = 0; k < KIQ_QUOTA__COUNT; k++) {
        kiq_str_map_free(qm->resolved[k]);
        if (!qm->sensors[k]) continue;
        kiq_str_map_iter_t it;
        const void *key;
        size_t len;
        void *v;
        kiq_str_map_iter_init(&it, qm->sensors[k]);
        while (kiq_str_map_next(&it, &key, &len, &v)) {
            sensor_t *s = v;
            free(s->user);
            free(s->client);
            free(s);
        }
        kiq_str_map_free(qm->sensors[k]);
    }
    pthread_mutex_destroy(&qm->mu);
    free(qm);
}

/* "a\0b" in buf: its length, 0 when it does not fit. */
static size_t pair_key(char *buf, size_t cap, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + 1 + lb > cap) return 0;
    memcpy(buf, a, la);
    buf[la] = 0;
    memcpy(buf + la + 1, b, lb);
    return la + 1 + lb;
}

/* Under mu: the sensor the quota for key of user and client goes to;
 * &no_quota when none applies, NULL when out of memory. */
static sensor_t *sensor_for(kiq_quota_manager_t *qm, int key, const char *user, const char *client, int64_t now_ms)
{
    uint64_t version = qm->source->version(qm->source_ctx);
    if (qm->resolved_any && version != qm->version) {
        /* the quotas changed: every client's is looked up again */
        for (int k = 0; k < KIQ_QUOTA__COUNT; k++) {
            kiq_str_map_free(qm->resolved[k]);
            if (!(qm->resolved[k] = kiq_str_map_new())) return NULL;
        }
        qm->resolved_any = false;
    }
    char buf[1024];
    size_t len = pair_key(buf, sizeof buf, user, client);
    if (!len) return &no_quota; /* longer names than any quota's lookup is worth: not limited */
    sensor_t *s = kiq_str_map_get(qm->resolved[key], buf, len);
    if (s) return s;
    double bound;
    bool by_user = false, by_client = false;
    if (!qm->source->lookup(qm->source_ctx, user, client, key, &bound, &by_user, &by_client)) {
        s = &no_quota;
    } else {
        char tags[1024];
        size_t tl = pair_key(tags, sizeof tags, by_user ? user : "", by_client ? client : "");
        s = kiq_str_map_get(qm->sensors[key], tags, tl);
        if (!s) {
            if (!(s = calloc(1, sizeof *s))) return NULL;
            s->user = strdup(by_user ? user : "");
            s->client = strdup(by_client ? client : "");
            kiq_rate_init(&s->rate, qm->samples, qm->window_ms);
            kiq_rate_init(&s->throttle_sum, qm->samples, qm->window_ms);
            kiq_rate_init(&s->throttle_n, qm->samples, qm->window_ms);
            kiq_token_bucket_init(&s->bucket, qm->samples, qm->window_ms, bound, now_ms);
            if (!s->user || !s->client || kiq_str_map_put(qm->sensors[key], tags, tl, s) != 0) {
                free(s->user);
                free(s->client);
                free(s);
                return NULL;
            }
        }
        s->bound = bound;
    }
    if (kiq_str_map_put(qm->resolved[key], buf, len, s) != 0) return NULL;
    qm->version = version;
    qm->resolved_any = true;
    return s;
}

int64_t kiq_quota_window_ms(const kiq_quota_manager_t *qm) { return qm->window_ms; }

static void note_throttle(sensor_t *s, int64_t ms, int64_t now_ms)
{
    kiq_rate_record(&s->throttle_sum, (double)ms, now_ms);
    kiq_rate_record(&s->throttle_n, 1, now_ms);
}

/* Whether any client may have a quota for key, checked with the source
 * once per version. */
static bool any_quota(kiq_quota_manager_t *qm, int key)
{
    if (!qm->source->sets) return true;
    uint64_t version = qm->source->version(qm->source_ctx);
    uint64_t seen = atomic_load_explicit(&qm->checked[key], memory_order_relaxed);
    if (seen >> 1 == version + 1) return seen & 1;
    /* asked after the version was read: a quota set meanwhile moved it */
    bool any = qm->source->sets(qm->source_ctx, key);
    atomic_store_explicit(&qm->checked[key], (version + 1) << 1 | any, memory_order_relaxed);
    return any;
}

int64_t kiq_quota_record(kiq_quota_manager_t *qm, int key, const char *user, const char *client_id, double value,
                         int64_t max_ms, int64_t now_ms)
{
    if (!qm || key < 0 || key >= KIQ_QUOTA__COUNT) return 0;
    if (!any_quota(qm, key)) return 0;
    pthread_mutex_lock(&qm->mu);
    sensor_t *s = sensor_for(qm, key, user, client_id, now_ms);
    int64_t ms = 0;
    if (s && s != &no_quota) {
        kiq_rate_record(&s->rate, value, now_ms);
        if (key == KIQ_QUOTA_CONTROLLER_MUTATION_RATE) {
            kiq_token_bucket_record(&s->bucket, s->bound, value, now_ms);
            ms = kiq_token_bucket_throttle_ms(&s->bucket, s->bound, now_ms);
        } else
            ms = kiq_quota_throttle_ms(kiq_rate_measure(&s->rate, now_ms), s->bound,
                                       kiq_rate_window_ms(&s->rate, now_ms));
        if (max_ms > 0 && ms > max_ms) ms = max_ms;
        note_throttle(s, ms, now_ms);
    }
    pthread_mutex_unlock(&qm->mu);
    return ms;
}

bool kiq_quota_exceeded(kiq_quota_manager_t *qm, int key, const char *user, const char *client_id, int64_t now_ms,
                        int64_t *throttle_ms)
{
    *throttle_ms = 0;
    if (!qm || key < 0 || key >= KIQ_QUOTA__COUNT) return false;
    pthread_mutex_lock(&qm->mu);
    sensor_t *s = sensor_for(qm, key, user, client_id, now_ms);
    bool over = false;
    if (s && s != &no_quota) {
        if (key == KIQ_QUOTA_CONTROLLER_MUTATION_RATE) {
            *throttle_ms = kiq_token_bucket_throttle_ms(&s->bucket, s->bound, now_ms);
            over = kiq_token_bucket_tokens(&s->bucket, s->bound, now_ms) < 0;
        } else {
            double rate = kiq_rate_measure(&s->rate, now_ms);
            over = rate > s->bound;
            if (over) *throttle_ms = kiq_quota_throttle_ms(rate, s->bound, kiq_rate_window_ms(&s->rate, now_ms));
        }
        if (over) note_throttle(s, *throttle_ms, now_ms);
    }
    pthread_mutex_unlock(&qm->mu);
    return over;
}

/* Kafka's sensor types (kafka.server:type=...) and the rate's attribute. */
static const struct {
    const char *rate, *rate_help, *throttle;
} families[KIQ_QUOTA__COUNT] = {
    {"kafka_server_produce_byte_rate", "bytes produced per second (kafka.server:type=Produce byte-rate)",
     "kafka_server_produce_throttle_time"},
    {"kafka_server_fetch_byte_rate", "bytes fetched per second (kafka.server:type=Fetch byte-rate)",
     "kafka_server_fetch_throttle_time"},
    {"kafka_server_request_request_time",
     "percent of a request handler thread used (kafka.server:type=Request request-time)",
     "kafka_server_request_throttle_time"},
    {"kafka_server_controllermutation_mutation_rate",
     "topic partitions created or deleted per second (kafka.server:type=ControllerMutation mutation-rate)",
     "kafka_server_controllermutation_throttle_time"},
};

void kiq_quota_metrics(void *src, kiq_metric_out_t *o)
{
    kiq_quota_manager_t *qm = src;
    int64_t now_ms = kiq_clock_mono_ms();
    pthread_mutex_lock(&qm->mu);
    for (int k = 0; k < KIQ_QUOTA__COUNT; k++) {
        if (!kiq_str_map_count(qm->sensors[k])) continue;
        for (int which = 0; which < 2; which++) {
            kiq_metric_family(o, which ? families[k].throttle : families[k].rate, KIQ_METRIC_GAUGE,
                              which ? "average ms responses were throttled over the quota's windows"
                                    : families[k].rate_help);
            kiq_str_map_iter_t it;
            const void *key;
            size_t len;
            void *v;
            kiq_str_map_iter_init(&it, qm->sensors[k]);
            while (kiq_str_map_next(&it, &key, &len, &v)) {
                sensor_t *s = v;
                double value = kiq_rate_measure(&s->rate, now_ms);
                if (which) {
                    double n = kiq_rate_measure(&s->throttle_n, now_ms);
                    value = n > 0 ? kiq_rate_measure(&s->throttle_sum, now_ms) / n : 0;
                }
                kiq_metric_sample(o, "", value, "user", s->user, "clientId", s->client, NULL);
            }
        }
    }
    pthread_mutex_unlock(&qm->mu);
}
