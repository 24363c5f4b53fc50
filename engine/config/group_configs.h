/* A share group's own settings (Kafka's group configs, KIP-932): what
 * IncrementalAlterConfigs sets on a GROUP resource (type 32) and
 * DescribeConfigs shows, over the broker's group.share.* defaults:
 * share.auto.offset.reset, share.record.lock.duration.ms,
 * share.delivery.count.limit and share.isolation.level (read_uncommitted
 * only: the share-partitions read up to the high watermark). A standalone
 * broker's share manager keeps them (share/share_manager.h); a cluster's
 * controller as ConfigRecords of resource type 32, pushed to every broker.
 * Pure values and checks; the holder's lock guards them. */
#ifndef KIQ_CONFIG_GROUP_CONFIGS_H
#define KIQ_CONFIG_GROUP_CONFIGS_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/types.h"

/* The configs, in Kafka's names' order. */
enum kiq_group_config {
    KIQ_GROUP_CFG_AUTO_OFFSET_RESET,
    KIQ_GROUP_CFG_LOCK_DURATION_MS,
    KIQ_GROUP_CFG_DELIVERY_COUNT_LIMIT,
    KIQ_GROUP_CFG_ISOLATION_LEVEL,
    KIQ_GROUP_CFG__COUNT
};

extern const char *const kiq_group_config_names[KIQ_GROUP_CFG__COUNT];

/* One group's settings: each value, NULL when unset (the broker's). */
typedef struct kiq_group_configs {
    char *v[KIQ_GROUP_CFG__COUNT];
} kiq_group_configs_t;

/* By name, or -1. */
int kiq_group_config_find(kiq_str_t name);
/* Sets (value non-NULL) or deletes config i after checking the value: 0, or
 * INVALID_CONFIG's code with Kafka's reason in the error slot; -1 out of
 * memory. */
int kiq_group_configs_set(kiq_group_configs_t *c, int i, kiq_str_t value);
int kiq_group_configs_copy(kiq_group_configs_t *dst, const kiq_group_configs_t *src);
void kiq_group_configs_clear(kiq_group_configs_t *c);

#endif
