/* The metrics clients push with KIP-714's PushTelemetry, as a broker keeps
 * them: the newest push of each client instance (decoded OTLP gauges and
 * sums), for /api/clients, a journey's client, and /metrics as
 * kafkaiq_client_* series. At most KIQ_TELEMETRY_CLIENTS instances, the
 * one pushed to longest ago forgotten first. Its own mutex: any thread. */
#ifndef KIQ_SERVER_CLIENT_TELEMETRY_H
#define KIQ_SERVER_CLIENT_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/client_metrics_configs.h"
#include "core/str_map.h"
#include "core/uuid.h"
#include "core/view.h"
#include "metrics/registry.h"

#define KIQ_TELEMETRY_CLIENTS 64
#define KIQ_TELEMETRY_POINTS 512 /* per push; past it the rest are dropped */

typedef struct kiq_client_telemetry kiq_client_telemetry_t;

kiq_client_telemetry_t *kiq_client_telemetry_new(void);
void kiq_client_telemetry_free(kiq_client_telemetry_t *t);

/* Decodes metrics (OTLP MetricsData, decompressed) and keeps it as
 * instance id's newest push, from client_id at address, at wall time
 * now_ms. 0, or -1 with kiq_error_set when it does not decode (what was
 * kept for the instance stays) or out of memory. */
int kiq_client_telemetry_push(kiq_client_telemetry_t *t, const kiq_uuid_t *id, const char *client_id,
                              const char *address, bool terminating, const uint8_t *metrics, size_t len,
                              int64_t now_ms);

/* Pushes come at most once an interval, as Kafka takes them: instance id
 * asked for its subscription (GetTelemetrySubscriptions) at now_mono_ms
 * (kiq_clock_mono_ms), from client_id at address; and whether its push
 * now may be taken: the first after asking always, else interval_ms after
 * the later of its asking and its last push taken (which this one then
 * is). Either makes an entry for an instance not known yet. */
void kiq_client_telemetry_asked(kiq_client_telemetry_t *t, const kiq_uuid_t *id, const char *client_id,
                                const char *address, int64_t now_mono_ms);
bool kiq_client_telemetry_may_push(kiq_client_telemetry_t *t, const kiq_uuid_t *id, int32_t interval_ms,
                                   int64_t now_mono_ms);

/* The instances kept (of client_id only, unless NULL; of a client id
 * starting with it when cut), newest push first,
 * as an array of objects: client_instance_id, client_id, address,
 * last_push_ms (0: it asked for its subscription, never pushed), pushes,
 * terminating, resource {key: value}, and, when
 * points, metrics [{name, kind, value, attributes {…}}] (else
 * metric_count). 0, or -1 out of memory. */
int kiq_client_telemetry_view(kiq_client_telemetry_t *t, const char *client_id, bool cut, bool points,
                              const kiq_view_t *v);

/* A metrics source (metrics/registry.h) over t: each kept point as
 * kafkaiq_client_<name> (dots and other characters Prometheus refuses as
 * '_', "org.apache.kafka." dropped), labelled client_id,
 * client_instance_id and the point's attributes. */
void kiq_client_telemetry_metrics(void *t, kiq_metric_out_t *o);

/* Client-metrics resources (config/client_metrics_configs.h) as this
 * broker knows them: a standalone broker's own, a cluster broker's as the
 * controller last pushed them. */
/* A copy of resource name's configs into *out: 1, 0 when there is none,
 * -1 out of memory. */
int kiq_client_telemetry_resource_get(kiq_client_telemetry_t *t, kiq_str_t name, kiq_client_metrics_configs_t *out);
/* Makes cfg (taken) resource name's configs; one with none set is removed.
 * 0, or -1 out of memory (cfg freed). */
int kiq_client_telemetry_resource_put(kiq_client_telemetry_t *t, kiq_str_t name, kiq_client_metrics_configs_t *cfg);
/* Replaces every resource with fresh's (name -> malloc'd
 * kiq_client_metrics_configs_t; the map and its values taken), at once:
 * a client asking meanwhile sees the old ones or the new. */
void kiq_client_telemetry_resources_replace(kiq_client_telemetry_t *t, kiq_str_map_t *fresh);
/* Frees such a map and its values. */
void kiq_client_metrics_map_free(kiq_str_map_t *m);
/* Each resource's name, sorted, to fn; their number, -1 out of memory. */
int kiq_client_telemetry_resource_names(kiq_client_telemetry_t *t, void (*fn)(void *ctx, const char *name), void *ctx);
/* The subscription of the resources whose match takes who: their metrics
 * prefixes together (comma-separated into metrics, "*" for all) and the
 * shortest interval. false when none takes it. */
bool kiq_client_telemetry_subscription(kiq_client_telemetry_t *t, const kiq_client_selector_t *who, char *metrics,
                                       size_t size, int32_t *interval_ms);

#endif
