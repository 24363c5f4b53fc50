/* A broker resource's dynamic configs, for one broker or the cluster-wide
 * default (what AlterConfigs changes and DescribeConfigs reports as
 * DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG): value[id] its
 * text, NULL when unset. A plain value owned by whoever holds it. */
#ifndef KIQ_CONFIG_DYNAMIC_CONFIGS_H
#define KIQ_CONFIG_DYNAMIC_CONFIGS_H

#include <stdbool.h>

#include "config/config.h"

typedef struct kiq_dynamic_configs {
    char *value[KIQ_CFG__COUNT]; /* heap */
} kiq_dynamic_configs_t;

void kiq_dynamic_configs_clear(kiq_dynamic_configs_t *c);
/* The config a name (len bytes) names if it may change dynamically, else -1. */
int kiq_dynamic_config_find(const char *name, int len);
/* Sets config name (len bytes) to value (NULL: removes it) after Kafka's
 * checks: a config that cannot change dynamically here is INVALID_REQUEST
 * ("Cannot update these configs dynamically"), a bad value INVALID_CONFIG;
 * the reason in the error slot. */
int kiq_dynamic_configs_set(kiq_dynamic_configs_t *c, const char *name, int len, const char *value, int value_len);

#endif
