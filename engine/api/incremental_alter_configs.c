/* IncrementalAlterConfigs: SET, DELETE (back to what the resource
 * inherits), APPEND and SUBTRACT (LIST configs such as cleanup.policy,
 * from the value in effect) on a resource's dynamic configs, all or
 * nothing per resource; the resources, rules and cluster-mode path are
 * AlterConfigs' (alter_configs.c). */
#include "api/api.h"
#include "controller/config_changes.h"
#include "core/error.h"
#include "server/controller_link.h"

#define FORWARD_WAIT_MS 10000

typedef struct edit_ctx {
    kiq_broker_t *b;
    const kiq_incremental_alter_configs_request_resources_t *res;
} edit_ctx_t;

static int topic_ops(kiq_topic_configs_t *cfg, void *arg)
{
    const edit_ctx_t *ctx = arg;
    return kiq_config_change_topic_ops(cfg, ctx->b->config, ctx->res);
}

static int broker_ops(kiq_dynamic_configs_t *cfg, void *arg)
{
    const edit_ctx_t *ctx = arg;
    return kiq_config_change_broker_ops(cfg, ctx->b->config, ctx->res);
}

int kiq_api_incremental_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                             void *response)
{
    const kiq_incremental_alter_configs_request_t *req = request;
    kiq_incremental_alter_configs_response_t *out = response;
    bool forwarded_here = r->listener == KIQ_LISTENER_CONTROL && !b->controller;
    if (b->cluster && !forwarded_here) {
        kiq_controller_link_incremental_alter_configs(b, req, FORWARD_WAIT_MS, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        const kiq_incremental_alter_configs_request_resources_t *res = &req->resources[i];
        kiq_incremental_alter_configs_response_responses_t *o = &out->responses[i];
        kiq_incremental_alter_configs_response_responses_init(o);
        o->resource_type = res->resource_type;
        o->resource_name = res->resource_name;
        kiq_error_clear();
        edit_ctx_t ctx = {b, res};
        if (forwarded_here)
            o->error_code = (int16_t)(kiq_error_set("broker %d is not the controller", b->node_id), KIQ_ERR_NOT_CONTROLLER);
        else
            o->error_code = (int16_t)kiq_api_alter_configs_here(b, res->resource_type, res->resource_name, topic_ops,
                                                               broker_ops, &ctx, req->validate_only);
        if (o->error_code) o->error_message = kiq_api_error_message(r);
    }
    return KIQ_HANDLER_RESPOND;
}
