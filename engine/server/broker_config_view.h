/* Configs with their sources, as DescribeConfigs reports them, for the
 * live page (GET /api/configs) and any other boundary, built once
 * (core/view.h): a topic's every config, its own value or what it
 * inherits, or this broker's every config:
 *
 *   topic | broker, configs = [{name, value?, source, read_only?,
 *   sensitive?}]
 *
 * source is Kafka's ConfigSource name (DYNAMIC_TOPIC_CONFIG,
 * DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
 * STATIC_BROKER_CONFIG, DEFAULT_CONFIG); a sensitive value is never told,
 * nor one Kafka has no default for. Any thread. */
#ifndef KIQ_SERVER_BROKER_CONFIG_VIEW_H
#define KIQ_SERVER_BROKER_CONFIG_VIEW_H

#include <stddef.h>

#include "config/topic_config.h"
#include "core/view.h"
#include "server/broker.h"

/* The topic's dynamic configs into an empty *tc, as this broker knows
 * them: in a cluster from the controller's last push (hosted here or
 * not), alone from its own topics. 0, KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION,
 * or -1 with the reason. */
int kiq_broker_topic_configs(kiq_broker_t *b, const char *name, size_t len, kiq_topic_configs_t *tc);
/* Whether Kafka's default for broker config name is null (log.retention.ms
 * and the like): unset, it tells no value, and is no default synonym. */
bool kiq_broker_config_null_default(const char *name);
/* topic's configs (NULL: this broker's) into v: 0, or -1 with the reason
 * (no such topic). */
int kiq_broker_configs_view(kiq_broker_t *b, const char *topic, const kiq_view_t *v);

#endif
