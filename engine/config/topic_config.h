/* Topic-level configs with Kafka's names and the broker config each one
 * defaults to. Read-only table, any thread. (Per-topic values set through
 * CreateTopics/AlterConfigs arrive with the storage issue.) */
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
    KIQ_CONFIG_WIRE_LIST = 7,
};

/* Kafka's DescribeConfigs config_source values. */
enum kiq_config_source {
    KIQ_CONFIG_SOURCE_DYNAMIC_TOPIC = 1,
    KIQ_CONFIG_SOURCE_STATIC_BROKER = 4,
    KIQ_CONFIG_SOURCE_DEFAULT = 5,
};

typedef struct kiq_topic_config_def {
    const char *name;
    int broker_config;  /* KIQ_CFG_* it inherits, or -1 */
    const char *fixed;  /* the default when no broker config backs it */
    int64_t scale;      /* broker value times this (log.retention.hours -> ms) */
    enum kiq_config_wire_type type;
} kiq_topic_config_def_t;

extern const kiq_topic_config_def_t kiq_topic_config_defs[];
extern const int kiq_topic_config_count;

int kiq_topic_config_find(const char *name, int len);
/* The effective default of topic config i for this broker, into buf;
 * *source gets DEFAULT or STATIC_BROKER. */
const char *kiq_topic_config_default(const kiq_config_t *c, int i, char *buf, size_t n,
                                     int *source);
enum kiq_config_wire_type kiq_config_wire_type(enum kiq_config_id id);

#endif
