/* ListConfigResources (KIP-1142; v0 is KIP-714's ListClientMetricsResources):
 * the client-metrics resources this broker knows. Asked for another type
 * of resource, it answers INVALID_REQUEST: only client-metrics resources
 * are listed here. */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "config/client_metrics_configs.h"
#include "server/client_telemetry.h"

typedef struct listing {
    kiq_arena_t *arena;
    kiq_list_config_resources_response_t *out;
    int cap;
} listing_t;

static void add(void *ctx, const char *name)
{
    listing_t *l = ctx;
    if (l->out->config_resources_n == l->cap) return; /* added since it was counted */
    kiq_list_config_resources_response_config_resources_t *e = &l->out->config_resources[l->out->config_resources_n++];
    kiq_list_config_resources_response_config_resources_init(e);
    e->resource_name = KIQ_STR(kiq_arena_strndup(l->arena, name, strlen(name)));
    e->resource_type = KIQ_CONFIG_RESOURCE_CLIENT_METRICS;
}

static void count(void *ctx, const char *name)
{
    (void)name;
    (*(int *)ctx)++;
}

int kiq_api_list_config_resources_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_list_config_resources_request_t *req = request;
    kiq_list_config_resources_response_t *out = response;
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_DESCRIBE_CONFIGS)) { /* as Kafka */
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    for (int32_t i = 0; i < req->resource_types_n; i++)
        if (req->resource_types[i] != KIQ_CONFIG_RESOURCE_CLIENT_METRICS) {
            out->error_code = KIQ_ERR_INVALID_REQUEST;
            out->config_resources_n = 0;
            return KIQ_HANDLER_RESPOND;
        }
    int n = 0;
    if (kiq_client_telemetry_resource_names(b->telemetry, count, &n) < 0) {
        out->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return KIQ_HANDLER_RESPOND;
    }
    /* room for some added meanwhile */
    listing_t l = {&r->arena, out, n + 16};
    out->config_resources = kiq_arena_calloc(&r->arena, (size_t)l.cap, sizeof *out->config_resources);
    out->config_resources_n = 0;
    if (kiq_client_telemetry_resource_names(b->telemetry, add, &l) < 0) out->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    return KIQ_HANDLER_RESPOND;
}
