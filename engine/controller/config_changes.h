/* How AlterConfigs and IncrementalAlterConfigs change a resource's dynamic
 * configs, as the controller decides it (a standalone broker being its
 * own): a topic's (config/topic_config.h) or a broker resource's, for one
 * broker or the cluster-wide default. Pure functions over values the
 * caller owns; any thread. Each returns a Kafka error code with the reason
 * in the error slot, and on an error leaves the set part-changed (callers
 * work on a copy). */
#ifndef KIQ_CONTROLLER_CONFIG_CHANGES_H
#define KIQ_CONTROLLER_CONFIG_CHANGES_H

#include "config/config.h"
#include "config/client_metrics_configs.h"
#include "config/group_configs.h"
#include "config/dynamic_configs.h"
#include "config/topic_config.h"
#include "proto/messages.h"

/* AlterConfigs: the resource's dynamic configs become the ones listed. */
int kiq_config_change_topic_replace(kiq_topic_configs_t *cfg, const kiq_alter_configs_request_resources_t *res);
int kiq_config_change_broker_replace(kiq_dynamic_configs_t *cfg, const kiq_alter_configs_request_resources_t *res);
/* IncrementalAlterConfigs: SET, DELETE (back to the inherited value),
 * APPEND and SUBTRACT (LIST configs, from the value in effect: the
 * resource's own, else what it inherits from base, the broker's config),
 * all or nothing; an unknown operation or a key named twice is
 * INVALID_REQUEST. */
int kiq_config_change_topic_ops(kiq_topic_configs_t *cfg, const kiq_config_t *base,
                                const kiq_incremental_alter_configs_request_resources_t *res);
int kiq_config_change_broker_ops(kiq_dynamic_configs_t *cfg, const kiq_config_t *base,
                                 const kiq_incremental_alter_configs_request_resources_t *res);

/* One resource of an AlterConfigs request (replace set) or of an
 * IncrementalAlterConfigs one (ops set), and once decided its outcome.
 * Owned by the thread serving the request, whose resources it points at. */
typedef struct kiq_config_order {
    const kiq_alter_configs_request_resources_t *replace;
    const kiq_incremental_alter_configs_request_resources_t *ops;
    int16_t refused;   /* in: the authorizer's refusal (nothing is changed, it is the error), or 0 */
    int16_t error;     /* out: Kafka error code */
    kiq_str_t message; /* out: null, or the reason (in the caller's arena) */
} kiq_config_order_t;

static inline int8_t kiq_config_order_type(const kiq_config_order_t *o)
{
    return o->replace ? o->replace->resource_type : o->ops->resource_type;
}

static inline kiq_str_t kiq_config_order_name(const kiq_config_order_t *o)
{
    return o->replace ? o->replace->resource_name : o->ops->resource_name;
}

/* The order's change, by whichever of the rules above it asks for; a
 * topic's result then gets the checks made on its configs together
 * (kiq_topic_configs_check_together), the cluster-wide broker configs
 * must keep min.insync.replicas (as Kafka 4.1+'s, KIP-966). */
int kiq_config_change_topic(kiq_topic_configs_t *cfg, const kiq_config_t *base, const kiq_config_order_t *o);
int kiq_config_change_broker(kiq_dynamic_configs_t *cfg, const kiq_config_t *base, const kiq_config_order_t *o);

/* A group's configs (config/group_configs.h): IncrementalAlterConfigs'
 * SET and DELETE only, all or nothing; AlterConfigs does not change them
 * (INVALID_REQUEST), nor does an empty group id. */
int kiq_config_change_group(kiq_group_configs_t *cfg, const kiq_config_order_t *o);
/* A client-metrics resource's configs (config/client_metrics_configs.h):
 * the same rules as a group's. */
int kiq_config_change_client_metrics(kiq_client_metrics_configs_t *cfg, const kiq_config_order_t *o);

#endif
