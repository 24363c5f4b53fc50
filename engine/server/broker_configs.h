/* A broker's dynamic configs (Kafka's dynamic broker configs, those of
 * config.h's kiq_config_dynamic): set for this broker or as the
 * cluster-wide default, both levels kept in the broker's config, where
 * every reader sees them at once. A standalone broker keeps them in its
 * first log directory (.broker-configs/broker.properties and
 * cluster.properties) and loads them at start; a cluster broker gets them
 * from the controller, which keeps them as ConfigRecords in the metadata
 * log (see kiq_broker_configs_apply_pushed).
 *
 * Any thread: changes are serialised by the config's own lock, and the
 * logs take the new settings at once. */
#ifndef KIQ_SERVER_BROKER_CONFIGS_H
#define KIQ_SERVER_BROKER_CONFIGS_H

#include <stdbool.h>

#include "config/dynamic_configs.h"
#include "include/kafkaiq.h"
#include "log/log_config.h"
#include "proto/messages.h"

/* Standalone, at start: the saved values into the config (a missing file
 * is no values). 0, or -1 with the reason (an unreadable file, a bad
 * value). */
int kiq_broker_configs_load(kiq_broker_t *b);
/* The log settings the broker's config says now (log.segment.bytes, the
 * index settings) over base. */
void kiq_broker_configs_log_config(kiq_broker_t *b, const kiq_log_config_t *base, kiq_log_config_t *out);
/* A copy of the level's dynamic values into an empty *out; -1 when out
 * of memory. */
int kiq_broker_configs_get(kiq_broker_t *b, enum kiq_config_level level, kiq_dynamic_configs_t *out);
/* The level's dynamic values become cfg's (checked already): set in the
 * config, saved when standalone, then the logs' settings and retention
 * follow. 0, or -1 with the reason (saving failed: nothing changed). */
int kiq_broker_configs_put(kiq_broker_t *b, enum kiq_config_level level, const kiq_dynamic_configs_t *cfg);

/* Cluster mode, from UpdateMetadata (the control plane's thread): the
 * dynamic configs the controller keeps (its kafkaiq_configs) become this
 * broker's: the cluster-wide defaults, its own, and each hosted topic's
 * (when they differ from what it has). */
void kiq_broker_configs_apply_pushed(kiq_broker_t *b, const kiq_update_metadata_request_t *req);

#endif
