#include "log/cleaner_threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/say.h"
#include "log/cleaner.h"

/* One thread's slot; share and owner fixed at start. */
typedef struct cleaner_thread {
    struct kiq_log_cleaner *owner;
    int share;
    pthread_t thread;
    bool started;
} cleaner_thread_t;

/* stop is guarded by mu; topics and config are shared read-only (the
 * topics have their own locks). */
struct kiq_log_cleaner {
    kiq_topics_t *topics;
    const kiq_config_t *config;
    int64_t backoff_ms;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC, broadcast to stop */
    bool stop;
    int nthreads;
    cleaner_thread_t *threads;
};

static int64_t effective_int(const kiq_config_t *config, const kiq_topic_configs_t *tc, int i, int64_t dflt)
{
    char buf[64];
    int source;
    const char *v = kiq_topic_config_effective(config, tc, i, buf, sizeof buf, &source);
    return v ? strtoll(v, NULL, 10) : dflt;
}

/* Whether the comma-separated list holds compact as a whole item. */
static bool has_compact(const char *v)
{
    for (const char *p = v; p && *p;) {
        while (*p == ' ' || *p == ',') p++;
        size_t n = strcspn(p, ",");
        size_t m = n;
        while (m > 0 && p[m - 1] == ' ') m--;
        if (m == 7 && strncmp(p, "compact", 7) == 0) return true;
        p += n;
    }
    return false;
}

bool kiq_log_cleaner_topic_compacted(kiq_topic_t *topic, const kiq_config_t *config)
{
    kiq_topic_configs_t tc = {0};
    bool have = kiq_topic_configs_snapshot(topic, &tc) == 0;
    char buf[64];
    int source;
    const char *v = kiq_topic_config_effective(config, have ? &tc : NULL, KIQ_TCFG_CLEANUP_POLICY, buf, sizeof buf,
                                               &source);
    bool yes = has_compact(v);
    kiq_topic_configs_clear(&tc);
    return yes;
}

int kiq_log_cleaner_run(kiq_topics_t *topics, const kiq_config_t *config, int64_t now_ms, int share, int nshares)
{
    int count, replaced = 0;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    if (!list) return 0;
    int64_t k = 0;
    for (int i = 0; i < count; i++) {
        kiq_topic_t *topic = list[i];
        int64_t first = k;
        k += topic->npartitions;
        if (atomic_load(&topic->deleted) || !kiq_log_cleaner_topic_compacted(topic, config)) continue;
        kiq_topic_configs_t tc = {0};
        bool have = kiq_topic_configs_snapshot(topic, &tc) == 0;
        kiq_cleaner_options_t opt = {
            .now_ms = now_ms,
            .delete_retention_ms = effective_int(config, have ? &tc : NULL, KIQ_TCFG_DELETE_RETENTION_MS, 86400000),
            .min_compaction_lag_ms = effective_int(config, have ? &tc : NULL, KIQ_TCFG_MIN_COMPACTION_LAG_MS, 0),
        };
        kiq_topic_configs_clear(&tc);
        for (int32_t p = 0; p < topic->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&topic->partitions[p]->log);
            if (!l || (first + p) % nshares != share) continue;
            kiq_cleaner_stats_t st;
            int n = kiq_log_clean(l, &opt, &st);
            if (n < 0)
                KIQ_WARN("log cleaner: %s-%d: %s", topic->name, p, kiq_error_get());
            else
                replaced += n;
        }
    }
    kiq_topics_list_free(list, count);
    return replaced;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *cleaner_main(void *arg)
{
    cleaner_thread_t *t = arg;
    kiq_log_cleaner_t *c = t->owner;
    char name[16];
    snprintf(name, sizeof name, "log-cleaner-%d", t->share);
    kiq_say_thread_name(name);
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(c->backoff_ms / 1000);
        until.tv_nsec += (long)(c->backoff_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = 0;
        while (!c->stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&c->cond, &c->mu, &until);
        if (c->stop) break;
        pthread_mutex_unlock(&c->mu);
        int n = kiq_log_cleaner_run(c->topics, c->config, wall_ms(), t->share, c->nthreads);
        if (n > 0) KIQ_DEBUG("log cleaner %d: replaced %d segment(s)", t->share, n);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

kiq_log_cleaner_t *kiq_log_cleaner_new(kiq_topics_t *topics, const kiq_config_t *config)
{
    kiq_log_cleaner_t *c = calloc(1, sizeof *c);
    if (!c) {
        kiq_error_set("out of memory");
        return NULL;
    }
    c->topics = topics;
    c->config = config;
    c->backoff_ms = kiq_config_int(config, KIQ_CFG_LOG_CLEANER_BACKOFF_MS);
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (!kiq_config_bool(config, KIQ_CFG_LOG_CLEANER_ENABLE)) return c;
    c->nthreads = (int)kiq_config_int(config, KIQ_CFG_LOG_CLEANER_THREADS);
    c->threads = calloc((size_t)c->nthreads, sizeof *c->threads);
    if (!c->threads) {
        kiq_error_set("out of memory");
        kiq_log_cleaner_free(c);
        return NULL;
    }
    for (int i = 0; i < c->nthreads; i++) {
        c->threads[i] = (cleaner_thread_t){.owner = c, .share = i};
        if (pthread_create(&c->threads[i].thread, NULL, cleaner_main, &c->threads[i]) != 0) {
            kiq_error_errno("cannot start log cleaner thread %d", i);
            kiq_log_cleaner_free(c);
            return NULL;
        }
        c->threads[i].started = true;
    }
    return c;
}

void kiq_log_cleaner_free(kiq_log_cleaner_t *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < c->nthreads; i++)
        if (c->threads && c->threads[i].started) pthread_join(c->threads[i].thread, NULL);
    free(c->threads);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
