/* IncrementalAlterConfigs: SET, DELETE (back to what the resource
 * inherits), APPEND and SUBTRACT (LIST configs such as cleanup.policy,
 * from the value in effect) on a resource's dynamic configs, all or
 * nothing per resource; the resources, rules and cluster-mode path are
 * AlterConfigs' (alter_configs.c). */
#include "api/api.h"

static void fill(const kiq_config_order_t *orders, int n, const void *request, void *response, kiq_arena_t *arena)
{
    const kiq_incremental_alter_configs_request_t *req = request;
    kiq_incremental_alter_configs_response_t *out = response;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(arena, (size_t)(n ? n : 1), sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        kiq_incremental_alter_configs_response_responses_t *o = &out->responses[i];
        kiq_incremental_alter_configs_response_responses_init(o);
        o->resource_type = req->resources[i].resource_type;
        o->resource_name = req->resources[i].resource_name;
        o->error_code = orders[i].error;
        o->error_message = orders[i].message;
    }
}

int kiq_api_incremental_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                             void *response)
{
    const kiq_incremental_alter_configs_request_t *req = request;
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    kiq_config_order_t *orders = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *orders);
    for (int32_t i = 0; i < n; i++) orders[i].ops = &req->resources[i];
    return kiq_api_change_configs(b, r, KIQ_API_INCREMENTAL_ALTER_CONFIGS, req, orders, n, req->validate_only,
                                  response, fill);
}
