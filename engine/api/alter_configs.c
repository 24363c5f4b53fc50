/* AlterConfigs: a resource's dynamic configs become exactly the ones listed
 * (what is not listed goes back to what it inherits), all or nothing per
 * resource, validate_only checking without changing anything. Resources:
 * a topic, or a broker (its id for this broker, "" for the cluster-wide
 * default) for the broker configs that can change at runtime
 * (kiq_config_dynamic; Kafka's others are refused as Kafka refuses its
 * read-only configs). The rules are controller/config_changes.h's.
 *
 * IncrementalAlterConfigs also sets a group's configs (share groups',
 * config/group_configs.h) and a client-metrics resource's (KIP-714,
 * config/client_metrics_configs.h).
 *
 * Standalone, this broker decides and applies at once. In cluster mode the
 * controller decides, whichever broker was asked (forwarded, see
 * server/controller_link.h), keeps the result as ConfigRecords and pushes
 * it to the brokers with its next UpdateMetadata; a broker asked describes
 * the change once that reached it. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "controller/config_changes.h"
#include "controller/controller.h"
#include "core/error.h"
#include "server/broker_configs.h"
#include "server/client_telemetry.h"
#include "server/controller_link.h"
#include "share/share_manager.h"
#include "log/log_retention.h"

#define FORWARD_WAIT_MS 10000

int kiq_api_config_level(kiq_broker_t *b, kiq_str_t resource_name, enum kiq_config_level *level)
{
    char id[16];
    snprintf(id, sizeof id, "%d", b->node_id);
    if (resource_name.p && resource_name.len == 0) *level = KIQ_CFG_LEVEL_CLUSTER;
    else if (kiq_str_eq(resource_name, id)) *level = KIQ_CFG_LEVEL_BROKER;
    else {
        kiq_error_set("Unexpected broker id, expected %s or empty string, but received " KIQ_STR_FMT, id,
                      KIQ_STR_ARG(resource_name));
        return KIQ_ERR_INVALID_REQUEST;
    }
    return KIQ_ERR_NONE;
}

typedef struct topic_edit_ctx {
    const kiq_config_t *base;
    const kiq_config_order_t *order;
} topic_edit_ctx_t;

static int topic_edit(kiq_topic_configs_t *cfg, void *arg)
{
    const topic_edit_ctx_t *ctx = arg;
    return kiq_config_change_topic(cfg, ctx->base, ctx->order);
}

/* A group's configs (config/group_configs.h), kept by the share manager. */
static int change_group(kiq_broker_t *b, const kiq_config_order_t *o, bool validate_only)
{
    kiq_str_t group = o->ops ? o->ops->resource_name : KIQ_STR_NULL;
    kiq_share_lock(b->shares);
    kiq_group_configs_t cfg = {{0}};
    const kiq_group_configs_t *now = group.p ? kiq_share_group_configs(b->shares, group.p, group.len) : NULL;
    int err = now && kiq_group_configs_copy(&cfg, now) != 0 ? KIQ_ERR_UNKNOWN_SERVER_ERROR
                                                             : kiq_config_change_group(&cfg, o);
    if (!err && !validate_only && kiq_share_group_configs_put(b->shares, group.p, group.len, &cfg) != 0)
        err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    else if (err || validate_only)
        kiq_group_configs_clear(&cfg);
    kiq_share_unlock(b->shares);
    return err;
}

/* A client-metrics resource's configs (config/client_metrics_configs.h),
 * kept with the clients' telemetry. */
static int change_client_metrics(kiq_broker_t *b, const kiq_config_order_t *o, bool validate_only)
{
    kiq_str_t name = o->ops ? o->ops->resource_name : KIQ_STR_NULL;
    kiq_client_metrics_configs_t cfg = {{0}};
    int err = kiq_client_telemetry_resource_get(b->telemetry, name, &cfg) < 0 ? KIQ_ERR_UNKNOWN_SERVER_ERROR
                                                                             : kiq_config_change_client_metrics(&cfg, o);
    if (err || validate_only) {
        kiq_client_metrics_configs_clear(&cfg);
        return err;
    }
    return kiq_client_telemetry_resource_put(b->telemetry, name, &cfg) == 0 ? KIQ_ERR_NONE
                                                                           : KIQ_ERR_UNKNOWN_SERVER_ERROR;
}

/* One resource on a standalone broker, applied unless validate_only.
 * Kafka error code, the reason in the error slot. */
static int change_here(kiq_broker_t *b, const kiq_config_order_t *o, bool validate_only)
{
    int8_t type = kiq_config_order_type(o);
    kiq_str_t name = kiq_config_order_name(o);
    if (type == KIQ_CONFIG_RESOURCE_BROKER) {
        enum kiq_config_level level;
        int err = kiq_api_config_level(b, name, &level);
        if (err) return err;
        kiq_dynamic_configs_t cfg = {{0}};
        if (kiq_broker_configs_get(b, level, &cfg) != 0) return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        err = kiq_config_change_broker(&cfg, b->config, o);
        if (!err && !validate_only && kiq_broker_configs_put(b, level, &cfg) != 0) err = KIQ_ERR_KAFKA_STORAGE_ERROR;
        kiq_dynamic_configs_clear(&cfg);
        return err;
    }
    if (type == KIQ_CONFIG_RESOURCE_GROUP) return change_group(b, o, validate_only);
    if (type == KIQ_CONFIG_RESOURCE_CLIENT_METRICS) return change_client_metrics(b, o, validate_only);
    if (type != KIQ_CONFIG_RESOURCE_TOPIC) {
        kiq_error_set("Unsupported resource type %d", type);
        return KIQ_ERR_INVALID_REQUEST;
    }
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (!topic) {
        kiq_error_set("Topic " KIQ_STR_FMT " does not exist", KIQ_STR_ARG(name));
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    topic_edit_ctx_t ctx = {b->config, o};
    int err = kiq_topics_update_configs(b->topics, topic, topic_edit, &ctx, validate_only);
    if (!err && !validate_only) kiq_log_retention_apply_topic(topic, b->config);
    kiq_topic_unref(topic);
    return err;
}

/* A forwarded change while the controller decides; in the request's arena. */
typedef struct forwarded_change {
    kiq_request_t *r;
    kiq_config_order_t *orders;
    int n;
    const void *req;
    void *resp;
    kiq_api_configs_fill_fn fill;
} forwarded_change_t;

static void changed(void *ctx)
{
    forwarded_change_t *f = ctx;
    f->fill(f->orders, f->n, f->req, f->resp, &f->r->arena);
    kiq_request_respond(f->r, f->resp);
}

int kiq_api_change_configs(kiq_broker_t *b, kiq_request_t *r, int16_t api_key, const void *req,
                           kiq_config_order_t *orders, int n, bool validate_only, void *resp,
                           kiq_api_configs_fill_fn fill)
{
    bool forwarded_here = r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b);
    /* as Kafka: ALTER_CONFIGS on the topic, the group, or the cluster for a
     * broker resource (one node only has an authorizer: nothing refused
     * here is forwarded) */
    for (int i = 0; i < n; i++) {
        int8_t type = kiq_config_order_type(&orders[i]);
        kiq_str_t name = kiq_config_order_name(&orders[i]);
        bool ok = type == KIQ_CONFIG_RESOURCE_TOPIC   ? kiq_api_allowed(b, r, KIQ_OP_ALTER_CONFIGS, KIQ_RES_TOPIC, name)
                  : type == KIQ_CONFIG_RESOURCE_GROUP ? kiq_api_allowed(b, r, KIQ_OP_ALTER_CONFIGS, KIQ_RES_GROUP, name)
                                                      : kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER_CONFIGS);
        if (!ok)
            orders[i].refused = type == KIQ_CONFIG_RESOURCE_TOPIC   ? KIQ_ERR_TOPIC_AUTHORIZATION_FAILED
                                : type == KIQ_CONFIG_RESOURCE_GROUP ? KIQ_ERR_GROUP_AUTHORIZATION_FAILED
                                                                    : KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
    }
    if (b->cluster && !forwarded_here) {
        forwarded_change_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
        *f = (forwarded_change_t){r, orders, n, req, resp, fill};
        kiq_api_handled(b, r); /* r is the link's from here on */
        kiq_controller_link_change_configs(b, api_key, req, orders, n, validate_only, FORWARD_WAIT_MS, &r->arena,
                                           changed, f);
        return KIQ_HANDLER_PARKED;
    }
    for (int i = 0; i < n; i++) {
        kiq_error_clear();
        if (forwarded_here)
            orders[i].error =
                (int16_t)(kiq_error_set("broker %d is not the controller", b->node_id), KIQ_ERR_NOT_CONTROLLER);
        else
            orders[i].error = orders[i].refused ? orders[i].refused : (int16_t)change_here(b, &orders[i], validate_only);
        if (orders[i].error) orders[i].message = kiq_request_error_message(r);
    }
    fill(orders, n, req, resp, &r->arena);
    return KIQ_HANDLER_RESPOND;
}

static void fill_alter(const kiq_config_order_t *orders, int n, const void *request, void *response,
                       kiq_arena_t *arena)
{
    const kiq_alter_configs_request_t *req = request;
    kiq_alter_configs_response_t *out = response;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(arena, (size_t)(n ? n : 1), sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        kiq_alter_configs_response_responses_t *o = &out->responses[i];
        kiq_alter_configs_response_responses_init(o);
        o->resource_type = req->resources[i].resource_type;
        o->resource_name = req->resources[i].resource_name;
        o->error_code = orders[i].error;
        o->error_message = orders[i].message;
    }
}

int kiq_api_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_configs_request_t *req = request;
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    kiq_config_order_t *orders = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *orders);
    for (int32_t i = 0; i < n; i++) orders[i].replace = &req->resources[i];
    return kiq_api_change_configs(b, r, KIQ_API_ALTER_CONFIGS, req, orders, n, req->validate_only, response,
                                  fill_alter);
}
