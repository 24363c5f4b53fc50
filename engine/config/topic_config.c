#include "config/topic_config.h"

#include <stdio.h>
#include <string.h>

const kiq_topic_config_def_t kiq_topic_config_defs[] = {
    {"cleanup.policy", KIQ_CFG_LOG_CLEANUP_POLICY, NULL, 1, KIQ_CONFIG_WIRE_LIST},
    {"compression.type", KIQ_CFG_COMPRESSION_TYPE, NULL, 1, KIQ_CONFIG_WIRE_STRING},
    {"delete.retention.ms", -1, "86400000", 1, KIQ_CONFIG_WIRE_LONG},
    {"flush.messages", -1, "9223372036854775807", 1, KIQ_CONFIG_WIRE_LONG},
    {"flush.ms", -1, "9223372036854775807", 1, KIQ_CONFIG_WIRE_LONG},
    {"index.interval.bytes", KIQ_CFG_LOG_INDEX_INTERVAL_BYTES, NULL, 1, KIQ_CONFIG_WIRE_INT},
    {"max.message.bytes", KIQ_CFG_MESSAGE_MAX_BYTES, NULL, 1, KIQ_CONFIG_WIRE_INT},
    {"message.timestamp.type", KIQ_CFG_MESSAGE_TIMESTAMP_TYPE, NULL, 1, KIQ_CONFIG_WIRE_STRING},
    {"min.cleanable.dirty.ratio", -1, "0.5", 1, KIQ_CONFIG_WIRE_STRING},
    {"min.compaction.lag.ms", -1, "0", 1, KIQ_CONFIG_WIRE_LONG},
    {"min.insync.replicas", KIQ_CFG_MIN_INSYNC_REPLICAS, NULL, 1, KIQ_CONFIG_WIRE_INT},
    {"retention.bytes", -1, "-1", 1, KIQ_CONFIG_WIRE_LONG},
    {"retention.ms", KIQ_CFG_LOG_RETENTION_HOURS, NULL, 3600000, KIQ_CONFIG_WIRE_LONG},
    {"segment.bytes", KIQ_CFG_LOG_SEGMENT_BYTES, NULL, 1, KIQ_CONFIG_WIRE_INT},
    {"segment.index.bytes", KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES, NULL, 1, KIQ_CONFIG_WIRE_INT},
    {"segment.ms", -1, "604800000", 1, KIQ_CONFIG_WIRE_LONG},
    {"unclean.leader.election.enable", -1, "false", 1, KIQ_CONFIG_WIRE_BOOLEAN},
};
const int kiq_topic_config_count = sizeof kiq_topic_config_defs / sizeof kiq_topic_config_defs[0];

int kiq_topic_config_find(const char *name, int len)
{
    for (int i = 0; i < kiq_topic_config_count; i++)
        if ((int)strlen(kiq_topic_config_defs[i].name) == len &&
            memcmp(kiq_topic_config_defs[i].name, name, (size_t)len) == 0)
            return i;
    return -1;
}

const char *kiq_topic_config_default(const kiq_config_t *c, int i, char *buf, size_t n, int *source)
{
    const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
    *source = KIQ_CONFIG_SOURCE_DEFAULT;
    if (d->broker_config < 0) return d->fixed;
    bool is_default;
    const char *text = kiq_config_text(c, d->broker_config, &is_default);
    if (!is_default) *source = KIQ_CONFIG_SOURCE_STATIC_BROKER;
    if (d->scale == 1) return text;
    int64_t v = kiq_config_int(c, d->broker_config);
    snprintf(buf, n, "%lld", (long long)(v < 0 ? -1 : v * d->scale));
    return buf;
}

enum kiq_config_wire_type kiq_config_wire_type(enum kiq_config_id id)
{
    switch (kiq_config_defs[id].type) {
    case KIQ_CFG_INT: return KIQ_CONFIG_WIRE_INT;
    case KIQ_CFG_LONG: return KIQ_CONFIG_WIRE_LONG;
    case KIQ_CFG_BOOL: return KIQ_CONFIG_WIRE_BOOLEAN;
    default: return KIQ_CONFIG_WIRE_STRING;
    }
}
