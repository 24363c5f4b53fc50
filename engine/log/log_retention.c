#include "log/log_retention.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"

/* Fixed once the worker runs; topics and config are shared read-only
 * (the topics have their own locks). */
struct kiq_log_retention {
    kiq_topics_t *topics;
    const kiq_config_t *config;
    int64_t interval_ms;
    kiq_worker_t *worker;
};

static int64_t effective_int(const kiq_config_t *config, const kiq_topic_configs_t *tc, int i)
{
    char buf[32];
    int source;
    const char *v = kiq_topic_config_effective(config, tc, i, buf, sizeof buf, &source);
    return v ? strtoll(v, NULL, 10) : -1;
}

void kiq_log_retention_apply_topic(kiq_topic_t *topic, const kiq_config_t *config)
{
    kiq_topic_configs_t tc = {0};
    bool have = kiq_topic_configs_snapshot(topic, &tc) == 0;
    const kiq_topic_configs_t *c = have ? &tc : NULL;
    int64_t segment_ms = effective_int(config, c, KIQ_TCFG_SEGMENT_MS);
    int64_t jitter_ms = effective_int(config, c, KIQ_TCFG_SEGMENT_JITTER_MS);
    int64_t retention_ms = effective_int(config, c, KIQ_TCFG_RETENTION_MS);
    int64_t retention_bytes = effective_int(config, c, KIQ_TCFG_RETENTION_BYTES);
    /* Time and size retention belong to the delete policy: a compact-only
     * topic keeps each key's latest record however old (Kafka's rule). */
    if (!kiq_topic_config_policy_has(config, c, "delete")) retention_ms = retention_bytes = -1;
    /* The cleaner never touches the active segment, so a compacted log
     * rolls by max.compaction.lag.ms when that is sooner (Kafka's
     * maxSegmentMs). */
    int64_t max_lag_ms = effective_int(config, c, KIQ_TCFG_MAX_COMPACTION_LAG_MS);
    if (kiq_topic_config_policy_has(config, c, "compact") && max_lag_ms > 0 && max_lag_ms < segment_ms)
        segment_ms = max_lag_ms;
    int64_t flush_messages = effective_int(config, c, KIQ_TCFG_FLUSH_MESSAGES);
    int64_t flush_ms = effective_int(config, c, KIQ_TCFG_FLUSH_MS);
    kiq_topic_configs_clear(&tc);
    for (int32_t p = 0; p < topic->npartitions; p++) {
        kiq_partition_log_t *l = atomic_load(&topic->partitions[p]->log);
        if (!l) continue; /* not hosted here */
        kiq_partition_log_set_retention(l, segment_ms, retention_ms < 0 ? -1 : retention_ms,
                                        retention_bytes < 0 ? -1 : retention_bytes);
        kiq_partition_log_set_roll_jitter(l, jitter_ms);
        kiq_partition_log_set_flush(l, flush_messages, flush_ms);
    }
}

void kiq_log_retention_apply_configs(kiq_topics_t *topics, const kiq_config_t *config)
{
    int count;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    if (!list) return;
    for (int i = 0; i < count; i++) kiq_log_retention_apply_topic(list[i], config);
    kiq_topics_list_free(list, count);
}

int kiq_log_retention_run(kiq_topics_t *topics, const kiq_config_t *config, int64_t now_ms)
{
    int count, deleted = 0;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    if (!list) return 0;
    for (int i = 0; i < count; i++) {
        kiq_topic_t *topic = list[i];
        /* a topic is only ever deleted whole; its files go with it */
        if (atomic_load(&topic->deleted)) continue;
        kiq_log_retention_apply_topic(topic, config);
        for (int32_t p = 0; p < topic->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&topic->partitions[p]->log);
            if (!l) continue;
            deleted += kiq_partition_log_enforce_retention(l, now_ms);
            kiq_partition_log_expire_producers(l, now_ms, kiq_config_int(config, KIQ_CFG_PRODUCER_ID_EXPIRATION_MS));
        }
    }
    kiq_topics_list_free(list, count);
    if (deleted > 0 && kiq_topics_checkpoint_log_start(topics) != 0)
        KIQ_WARN("retention: cannot save the log start offsets: %s", kiq_error_get());
    return deleted;
}

static int64_t retention_round(void *arg)
{
    kiq_log_retention_t *r = arg;
    int n = kiq_log_retention_run(r->topics, r->config, kiq_clock_wall_ms());
    if (n > 0) KIQ_INFO("retention: deleted %d segment(s)", n);
    return r->interval_ms;
}

kiq_log_retention_t *kiq_log_retention_new(kiq_topics_t *topics, const kiq_config_t *config)
{
    kiq_log_retention_t *r = calloc(1, sizeof *r);
    if (!r) {
        kiq_error_set("out of memory");
        return NULL;
    }
    r->topics = topics;
    r->config = config;
    r->interval_ms = kiq_config_int(config, KIQ_CFG_LOG_RETENTION_CHECK_INTERVAL_MS);
    kiq_log_retention_apply_configs(topics, config);
    kiq_worker_config_t wc = {"log-retention", retention_round, r, r->interval_ms};
    if (!(r->worker = kiq_worker_start(&wc))) {
        free(r);
        return NULL;
    }
    return r;
}

void kiq_log_retention_free(kiq_log_retention_t *r)
{
    if (!r) return;
    kiq_worker_stop(r->worker);
    free(r);
}
