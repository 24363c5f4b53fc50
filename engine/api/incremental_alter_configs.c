/* IncrementalAlterConfigs: SET, DELETE (back to the default), APPEND and
 * SUBTRACT (LIST configs such as cleanup.policy, starting from the
 * effective value) on a topic's dynamic configs, all or nothing per
 * resource. Broker resources are refused as in AlterConfigs, and so are
 * topics in cluster mode (see alter_configs.c). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "config/topic_config.h"
#include "core/error.h"
#include "server/log_retention.h"

enum { OP_SET = 0, OP_DELETE = 1, OP_APPEND = 2, OP_SUBTRACT = 3 };

typedef struct edit_ctx {
    kiq_broker_t *b;
    const kiq_incremental_alter_configs_request_resources_t *res;
} edit_ctx_t;

static int apply_op(kiq_broker_t *b, kiq_topic_configs_t *cfg,
                    const kiq_incremental_alter_configs_request_resources_configs_t *op)
{
    kiq_str_t name = op->name, value = op->value;
    int i = kiq_topic_config_find(name.p, name.len);
    if (i < 0) {
        kiq_error_set("Unknown topic config name: " KIQ_STR_FMT, KIQ_STR_ARG(name));
        return KIQ_ERR_INVALID_CONFIG;
    }
    int vlen = value.p ? value.len : -1;
    char buf[32];
    int source;
    switch (op->config_operation) {
    case OP_SET: return kiq_topic_configs_set(cfg, name.p, name.len, value.p, vlen);
    case OP_DELETE:
        free(cfg->value[i]);
        cfg->value[i] = NULL;
        return KIQ_ERR_NONE;
    case OP_APPEND:
        return kiq_topic_configs_append(cfg, i, kiq_topic_config_effective(b->config, cfg, i, buf, sizeof buf, &source),
                                        value.p, vlen);
    case OP_SUBTRACT:
        return kiq_topic_configs_subtract(cfg, i,
                                          kiq_topic_config_effective(b->config, cfg, i, buf, sizeof buf, &source),
                                          value.p, vlen);
    }
    return KIQ_ERR_INVALID_REQUEST; /* checked before */
}

static int edit(kiq_topic_configs_t *cfg, void *arg)
{
    const edit_ctx_t *ctx = arg;
    for (int32_t i = 0; i < ctx->res->configs_n; i++) {
        int err = apply_op(ctx->b, cfg, &ctx->res->configs[i]);
        if (err) return err;
    }
    return KIQ_ERR_NONE;
}

/* Kafka's request-level checks: known operations, no key twice. */
static int16_t check_ops(const kiq_incremental_alter_configs_request_resources_t *res)
{
    for (int32_t i = 0; i < res->configs_n; i++) {
        const kiq_incremental_alter_configs_request_resources_configs_t *c = &res->configs[i];
        if (c->config_operation < OP_SET || c->config_operation > OP_SUBTRACT) {
            kiq_error_set("Unknown operation type %d for config " KIQ_STR_FMT, c->config_operation,
                          KIQ_STR_ARG(c->name));
            return KIQ_ERR_INVALID_REQUEST;
        }
        for (int32_t j = 0; j < i; j++)
            if (res->configs[j].name.len == c->name.len && c->name.p &&
                memcmp(res->configs[j].name.p, c->name.p, (size_t)c->name.len) == 0) {
                kiq_error_set("Error due to duplicate config keys: " KIQ_STR_FMT, KIQ_STR_ARG(c->name));
                return KIQ_ERR_INVALID_REQUEST;
            }
    }
    return KIQ_ERR_NONE;
}

static int16_t alter_resource(kiq_broker_t *b, kiq_request_t *r,
                              const kiq_incremental_alter_configs_request_resources_t *res, bool validate_only)
{
    int16_t err = check_ops(res);
    if (err) return err;
    if (res->resource_type == KIQ_API_RESOURCE_BROKER) {
        int32_t n = res->configs_n > 0 ? res->configs_n : 0;
        kiq_str_t *names = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *names);
        for (int32_t i = 0; i < n; i++) names[i] = res->configs[i].name;
        return (int16_t)kiq_api_alter_broker_check(b, res->resource_name, names, n);
    }
    edit_ctx_t ctx = {b, res};
    return (int16_t)kiq_api_alter_topic_configs(b, res->resource_type, res->resource_name, edit, &ctx, validate_only);
}

int kiq_api_incremental_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                             void *response)
{
    const kiq_incremental_alter_configs_request_t *req = request;
    kiq_incremental_alter_configs_response_t *out = response;
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        const kiq_incremental_alter_configs_request_resources_t *res = &req->resources[i];
        kiq_incremental_alter_configs_response_responses_t *o = &out->responses[i];
        kiq_incremental_alter_configs_response_responses_init(o);
        o->resource_type = res->resource_type;
        o->resource_name = res->resource_name;
        kiq_error_clear();
        o->error_code = alter_resource(b, r, res, req->validate_only);
        if (o->error_code) o->error_message = kiq_api_error_message(r);
    }
    return KIQ_HANDLER_RESPOND;
}
