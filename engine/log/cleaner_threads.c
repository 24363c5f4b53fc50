#include "log/cleaner_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/cleaner.h"

/* One thread's slot; share and owner fixed at start. */
typedef struct cleaner_thread {
    struct kiq_log_cleaner *owner;
    int share;
    kiq_worker_t *worker;
} cleaner_thread_t;

/* Fixed once the threads run; topics and config are shared read-only
 * (the topics have their own locks). */
struct kiq_log_cleaner {
    kiq_topics_t *topics;
    const kiq_config_t *config;
    int64_t backoff_ms;
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

bool kiq_log_cleaner_topic_compacted(kiq_topic_t *topic, const kiq_config_t *config)
{
    /* every produce asks: the topic's hot value, else the broker's */
    int v = atomic_load(&topic->compacted);
    return v >= 0 ? v == 1 : kiq_topic_config_default_has(config, KIQ_TCFG_CLEANUP_POLICY, "compact");
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

static int64_t cleaner_round(void *arg)
{
    cleaner_thread_t *t = arg;
    kiq_log_cleaner_t *c = t->owner;
    int n = kiq_log_cleaner_run(c->topics, c->config, kiq_clock_wall_ms(), t->share, c->nthreads);
    if (n > 0) KIQ_DEBUG("log cleaner %d: replaced %d segment(s)", t->share, n);
    return c->backoff_ms;
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
    if (!kiq_config_bool(config, KIQ_CFG_LOG_CLEANER_ENABLE)) return c;
    c->nthreads = (int)kiq_config_int(config, KIQ_CFG_LOG_CLEANER_THREADS);
    c->threads = calloc((size_t)c->nthreads, sizeof *c->threads);
    if (!c->threads) {
        kiq_error_set("out of memory");
        kiq_log_cleaner_free(c);
        return NULL;
    }
    for (int i = 0; i < c->nthreads; i++) c->threads[i] = (cleaner_thread_t){.owner = c, .share = i};
    for (int i = 0; i < c->nthreads; i++) {
        char name[32];
        snprintf(name, sizeof name, "log-cleaner-%d", i);
        kiq_worker_config_t wc = {name, cleaner_round, &c->threads[i], c->backoff_ms};
        if (!(c->threads[i].worker = kiq_worker_start(&wc))) {
            kiq_log_cleaner_free(c);
            return NULL;
        }
    }
    return c;
}

void kiq_log_cleaner_free(kiq_log_cleaner_t *c)
{
    if (!c) return;
    for (int i = 0; c->threads && i < c->nthreads; i++) kiq_worker_stop(c->threads[i].worker);
    free(c->threads);
    free(c);
}
