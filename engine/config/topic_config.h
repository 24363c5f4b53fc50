/* Topic-level configs with Kafka's names, the broker config each one
 * defaults to, and their validation. The definition table is read-only and
 * shared by all threads; a kiq_topic_configs_t is a plain value owned by
 * whoever holds it (a topic keeps its own under its config lock). */
#ifndef KIQ_CONFIG_TOPIC_CONFIG_H
#define KIQ_CONFIG_TOPIC_CONFIG_H

#include <stddef.h>

#include "config/config.h"

/* Kafka's ConfigEntry.ConfigType values, as DescribeConfigs v3+ reports. */
enum kiq_config_wire_type {
    KIQ_CONFIG_WIRE_BOOLEAN = 1,
    KIQ_CONFIG_WIRE_STRING = 2,
    KIQ_CONFIG_WIRE_INT = 3,
    KIQ_CONFIG_WIRE_LONG = 5,
    KIQ_CONFIG_WIRE_DOUBLE = 6,
    KIQ_CONFIG_WIRE_LIST = 7,
};

/* Indexes into kiq_topic_config_defs: every topic config Kafka 4.x takes
 * (LogConfig), in name order, as DescribeConfigs lists them. */
enum kiq_topic_config_id {
    KIQ_TCFG_CLEANUP_POLICY,
    KIQ_TCFG_COMPRESSION_GZIP_LEVEL,
    KIQ_TCFG_COMPRESSION_LZ4_LEVEL,
    KIQ_TCFG_COMPRESSION_TYPE,
    KIQ_TCFG_COMPRESSION_ZSTD_LEVEL,
    KIQ_TCFG_DELETE_RETENTION_MS,
    KIQ_TCFG_ERRORS_DEADLETTERQUEUE_GROUP_ENABLE,
    KIQ_TCFG_FILE_DELETE_DELAY_MS,
    KIQ_TCFG_FLUSH_MESSAGES,
    KIQ_TCFG_FLUSH_MS,
    KIQ_TCFG_FOLLOWER_REPLICATION_THROTTLED_REPLICAS,
    KIQ_TCFG_INDEX_INTERVAL_BYTES,
    KIQ_TCFG_LEADER_REPLICATION_THROTTLED_REPLICAS,
    KIQ_TCFG_LOCAL_RETENTION_BYTES,
    KIQ_TCFG_LOCAL_RETENTION_MS,
    KIQ_TCFG_MAX_COMPACTION_LAG_MS,
    KIQ_TCFG_MAX_DECOMPRESSED_MESSAGE_BYTES,
    KIQ_TCFG_MAX_MESSAGE_BYTES,
    KIQ_TCFG_MESSAGE_TIMESTAMP_AFTER_MAX_MS,
    KIQ_TCFG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS,
    KIQ_TCFG_MESSAGE_TIMESTAMP_TYPE,
    KIQ_TCFG_MIN_CLEANABLE_DIRTY_RATIO,
    KIQ_TCFG_MIN_COMPACTION_LAG_MS,
    KIQ_TCFG_MIN_INSYNC_REPLICAS,
    KIQ_TCFG_PREALLOCATE,
    KIQ_TCFG_REMOTE_COPY_LAG_BYTES,
    KIQ_TCFG_REMOTE_COPY_LAG_MS,
    KIQ_TCFG_REMOTE_LOG_COPY_DISABLE,
    KIQ_TCFG_REMOTE_LOG_DELETE_ON_DISABLE,
    KIQ_TCFG_REMOTE_STORAGE_ENABLE,
    KIQ_TCFG_RETENTION_BYTES,
    KIQ_TCFG_RETENTION_MS,
    KIQ_TCFG_SEGMENT_BYTES,
    KIQ_TCFG_SEGMENT_INDEX_BYTES,
    KIQ_TCFG_SEGMENT_JITTER_MS,
    KIQ_TCFG_SEGMENT_MS,
    KIQ_TCFG_UNCLEAN_LEADER_ELECTION_ENABLE,
    KIQ_TOPIC_CONFIG_COUNT
};

/* What the documentation of a config KafkaIQ takes but does not act on
 * starts with, followed by why. */
#define KIQ_TOPIC_CONFIG_IGNORED "Accepted and not acted on by KafkaIQ: "

typedef struct kiq_topic_config_def {
    const char *name;
    int broker_config;  /* KIQ_CFG_* it inherits, or -1 */
    const char *fixed;  /* the default when no broker config backs it */
    int64_t scale;      /* broker value times this (log.retention.hours -> ms) */
    enum kiq_config_wire_type type;
    int64_t min, max;   /* INT/LONG range */
    const char *valid;  /* STRING/LIST: comma-separated allowed values, or NULL */
    /* A check of its own after the type's (NULL: none): 0, or
     * KIQ_ERR_INVALID_CONFIG with the reason. value is trimmed. */
    int (*check)(const struct kiq_topic_config_def *d, const char *value, int len);
    /* What DescribeConfigs v3+ documents: what it does here, or
     * KIQ_TOPIC_CONFIG_IGNORED and why. */
    const char *doc;
} kiq_topic_config_def_t;

extern const kiq_topic_config_def_t kiq_topic_config_defs[KIQ_TOPIC_CONFIG_COUNT];
extern const int kiq_topic_config_count;

/* A topic's dynamic configs: value[i] is the text set for config i (heap),
 * NULL when the topic inherits the default. */
typedef struct kiq_topic_configs {
    char *value[KIQ_TOPIC_CONFIG_COUNT];
} kiq_topic_configs_t;

int kiq_topic_config_find(const char *name, int len);
/* Kafka's broker configs behind topic config i (its ServerTopicConfigSynonyms):
 * the one it takes its default from first, then those that one falls back
 * to; NULL-terminated, empty for a config no broker setting backs. What
 * DescribeConfigs lists as its synonyms. */
const char *const *kiq_topic_config_synonyms(int i);
/* The effective default of topic config i for this broker, into buf;
 * *source gets where it comes from (DEFAULT, STATIC_BROKER or a dynamic
 * broker level). */
const char *kiq_topic_config_default(const kiq_config_t *c, int i, char *buf, size_t n,
                                     int *source);
/* What config i is for a topic with these dynamic configs (NULL: none):
 * its own value (source DYNAMIC_TOPIC) or the default, as above. */
const char *kiq_topic_config_effective(const kiq_config_t *c, const kiq_topic_configs_t *tc, int i,
                                       char *buf, size_t n, int *source);
enum kiq_config_wire_type kiq_config_wire_type(enum kiq_config_id id);

/* Checks value (len bytes, surrounding spaces ignored, as Kafka trims)
 * against config i's type, range and allowed values. 0, or
 * KIQ_ERR_INVALID_CONFIG with a message naming the config and the value
 * (remote.storage.enable=true gets Kafka's message for a broker without
 * tiered storage). */
int kiq_topic_config_check(int i, const char *value, int len);
/* The checks Kafka makes on a topic's configs together, once each was
 * checked alone: min.compaction.lag.ms no more than max.compaction.lag.ms
 * (both have fixed defaults, so no broker config is needed). 0, or
 * KIQ_ERR_INVALID_CONFIG with Kafka's message. */
int kiq_topic_configs_check_together(const kiq_topic_configs_t *c);

void kiq_topic_configs_clear(kiq_topic_configs_t *c);
/* Deep copy into an empty dst; -1 when out of memory (dst left empty). */
int kiq_topic_configs_copy(kiq_topic_configs_t *dst, const kiq_topic_configs_t *src);
/* Sets a config by name after checking it: 0, or KIQ_ERR_INVALID_CONFIG
 * (unknown name, null or bad value) with the reason in the error slot. The
 * trimmed value is kept. The configs Kafka 4.0 removed (deprecated in 3.x:
 * message.format.version, message.timestamp.difference.max.ms,
 * message.downconversion.enable) are taken with a warning and ignored, so
 * older tools that still send them keep working. */
int kiq_topic_configs_set(kiq_topic_configs_t *c, const char *name, int name_len, const char *value,
                          int value_len);
/* IncrementalAlterConfigs' APPEND and SUBTRACT on a LIST config: `current`
 * is the effective value (the topic's or the default); items already there
 * are not appended twice, and every copy of a subtracted item goes. The
 * result is checked like a SET. Error codes as kiq_topic_configs_set. */
int kiq_topic_configs_append(kiq_topic_configs_t *c, int i, const char *current, const char *items,
                             int items_len);
int kiq_topic_configs_subtract(kiq_topic_configs_t *c, int i, const char *current, const char *items,
                               int items_len);
/* Whether the effective cleanup.policy of a topic with these dynamic
 * configs (NULL: none) lists policy ("compact" or "delete"). */
bool kiq_topic_config_policy_has(const kiq_config_t *c, const kiq_topic_configs_t *tc, const char *policy);
/* Whether the broker's value for list config i (what a topic without its
 * own takes) names item; lock free, for the request path. */
bool kiq_topic_config_default_has(const kiq_config_t *c, int i, const char *item);
/* Config i as an integer, or dflt when not set. */
int64_t kiq_topic_configs_int(const kiq_topic_configs_t *c, int i, int64_t dflt);

#endif
