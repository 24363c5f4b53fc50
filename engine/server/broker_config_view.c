/* server/broker_config_view.h */
#include <string.h>

#include "controller/metadata_cache.h"
#include "core/error.h"
#include "log/topics.h"
#include "server/broker_config_view.h"

int kiq_broker_topic_configs(kiq_broker_t *b, const char *name, size_t len, kiq_topic_configs_t *tc)
{
    if (!name) return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (b->cluster)
        return kiq_metadata_cache_topic_configs(b->metadata, name, len, tc) == 0 ? KIQ_ERR_NONE
                                                                                : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    kiq_topic_t *topic = b->running ? kiq_topics_get(b->topics, (kiq_str_t){name, (int32_t)len}) : NULL;
    if (!topic) return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    int rc = kiq_topic_configs_snapshot(topic, tc);
    kiq_topic_unref(topic);
    return rc;
}

static const char *source_name(int source)
{
    switch (source) {
    case KIQ_CONFIG_SOURCE_DYNAMIC_TOPIC: return "DYNAMIC_TOPIC_CONFIG";
    case KIQ_CONFIG_SOURCE_DYNAMIC_BROKER: return "DYNAMIC_BROKER_CONFIG";
    case KIQ_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER: return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case KIQ_CONFIG_SOURCE_STATIC_BROKER: return "STATIC_BROKER_CONFIG";
    case KIQ_CONFIG_SOURCE_GROUP: return "GROUP_CONFIG";
    default: return "DEFAULT_CONFIG";
    }
}

static void entry(const kiq_view_t *v, const char *name, const char *value, int source)
{
    v->open(v->ctx, NULL, false);
    v->string(v->ctx, "name", name);
    if (value) v->string(v->ctx, "value", value);
    v->string(v->ctx, "source", source_name(source));
}

bool kiq_broker_config_null_default(const char *name)
{
    static const char *const names[] = {"log.retention.ms", "log.retention.minutes", "log.roll.ms",
                                        "log.roll.jitter.ms", "log.flush.interval.ms"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

int kiq_broker_configs_view(kiq_broker_t *b, const char *topic, const kiq_view_t *v)
{
    if (topic) {
        kiq_topic_configs_t tc = {0};
        int rc = kiq_broker_topic_configs(b, topic, strlen(topic), &tc);
        if (rc == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION) return kiq_error_set("no topic %s", topic);
        if (rc) return -1;
        v->string(v->ctx, "topic", topic);
        v->open(v->ctx, "configs", true);
        for (int i = 0; i < kiq_topic_config_count; i++) {
            char buf[32];
            int source;
            const char *value = kiq_topic_config_effective(b->config, &tc, i, buf, sizeof buf, &source);
            entry(v, kiq_topic_config_defs[i].name, value, source);
            v->close(v->ctx);
        }
        v->close(v->ctx);
        kiq_topic_configs_clear(&tc);
        return 0;
    }
    v->number(v->ctx, "broker", b->node_id);
    v->open(v->ctx, "configs", true);
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        const char *name = kiq_config_defs[i].name;
        int source = kiq_config_source(b->config, i);
        bool secret = kiq_config_sensitive(i);
        const char *value = secret || (source == KIQ_CONFIG_SOURCE_DEFAULT && kiq_broker_config_null_default(name)) ? NULL
                                                                                                 : kiq_config_str(b->config, i);
        entry(v, name, value, source);
        if (!kiq_config_dynamic(i)) v->boolean(v->ctx, "read_only", true);
        if (secret) v->boolean(v->ctx, "sensitive", true);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    return 0;
}
