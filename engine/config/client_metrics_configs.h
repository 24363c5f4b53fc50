/* A client-metrics resource's settings (KIP-714, config resource type 16):
 * `metrics`, the metric name prefixes its clients are asked to push
 * (comma-separated, * all), `interval.ms`, how often, and `match`, which
 * clients it is for (comma-separated selector=regex pairs over
 * client_instance_id, client_id, client_software_name,
 * client_software_version, client_source_address and client_source_port,
 * each a whole-value POSIX extended regex; none: every client). Set with
 * IncrementalAlterConfigs, shown by DescribeConfigs and listed by
 * ListConfigResources; a standalone broker keeps them
 * (server/client_telemetry.h), a cluster's controller as ConfigRecords of
 * resource type 16 pushed to every broker. Pure values and checks; the
 * holder's lock guards them. */
#ifndef KIQ_CONFIG_CLIENT_METRICS_CONFIGS_H
#define KIQ_CONFIG_CLIENT_METRICS_CONFIGS_H

#include <stdbool.h>

#include "proto/types.h"

#define KIQ_CONFIG_RESOURCE_CLIENT_METRICS 16
#define KIQ_CLIENT_METRICS_DEFAULT_INTERVAL_MS 300000 /* Kafka's interval.ms default */

enum kiq_client_metrics_config {
    KIQ_CM_CFG_INTERVAL_MS,
    KIQ_CM_CFG_MATCH,
    KIQ_CM_CFG_METRICS,
    KIQ_CM_CFG__COUNT
};

extern const char *const kiq_client_metrics_config_names[KIQ_CM_CFG__COUNT];

/* One resource's settings: each value, NULL when unset. */
typedef struct kiq_client_metrics_configs {
    char *v[KIQ_CM_CFG__COUNT];
} kiq_client_metrics_configs_t;

/* What a client is matched by. */
typedef struct kiq_client_selector {
    const char *client_instance_id, *client_id, *client_software_name, *client_software_version,
        *client_source_address, *client_source_port;
} kiq_client_selector_t;

/* By name, or -1. */
int kiq_client_metrics_config_find(kiq_str_t name);
/* Sets (value non-NULL) or deletes config i after checking the value: 0,
 * INVALID_CONFIG's code with the reason in the error slot, or -1 out of
 * memory. */
int kiq_client_metrics_configs_set(kiq_client_metrics_configs_t *c, int i, kiq_str_t value);
int kiq_client_metrics_configs_copy(kiq_client_metrics_configs_t *dst, const kiq_client_metrics_configs_t *src);
void kiq_client_metrics_configs_clear(kiq_client_metrics_configs_t *c);
/* Whether c's match takes the client who (every selector it names matches
 * the whole of who's value). */
bool kiq_client_metrics_matches(const kiq_client_metrics_configs_t *c, const kiq_client_selector_t *who);

#endif
