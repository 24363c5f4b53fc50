/* AlterConfigs: a resource's dynamic configs become exactly the ones listed
 * (what is not listed goes back to what it inherits), all or nothing per
 * resource, validate_only checking without changing anything. Resources:
 * a topic, or a broker (its id for this broker, "" for the cluster-wide
 * default) for the broker configs that can change at runtime
 * (kiq_config_dynamic; Kafka's others are refused as Kafka refuses its
 * read-only configs). The rules are controller/config_changes.h's.
 *
 * Standalone, this broker decides and applies at once. In cluster mode the
 * controller decides, whichever broker was asked (forwarded, see
 * server/controller_link.h), keeps the result as ConfigRecords and pushes
 * it to the brokers with its next UpdateMetadata; a broker asked describes
 * the change once that reached it. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "controller/config_changes.h"
#include "controller/controller.h"
#include "core/error.h"
#include "server/broker_configs.h"
#include "server/controller_link.h"
#include "server/log_retention.h"

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

int kiq_api_alter_configs_here(kiq_broker_t *b, int8_t resource_type, kiq_str_t name,
                               int (*topic_edit)(kiq_topic_configs_t *cfg, void *ctx),
                               int (*broker_edit)(kiq_dynamic_configs_t *cfg, void *ctx), void *ctx,
                               bool validate_only)
{
    if (resource_type == KIQ_CONFIG_RESOURCE_BROKER) {
        enum kiq_config_level level;
        int err = kiq_api_config_level(b, name, &level);
        if (err) return err;
        kiq_dynamic_configs_t cfg = {{0}};
        if (kiq_broker_configs_get(b, level, &cfg) != 0) return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        err = broker_edit(&cfg, ctx);
        if (!err && !validate_only && kiq_broker_configs_put(b, level, &cfg) != 0) err = KIQ_ERR_KAFKA_STORAGE_ERROR;
        kiq_dynamic_configs_clear(&cfg);
        return err;
    }
    if (resource_type != KIQ_CONFIG_RESOURCE_TOPIC) {
        kiq_error_set("Unsupported resource type %d", resource_type);
        return KIQ_ERR_INVALID_REQUEST;
    }
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (!topic) {
        kiq_error_set("Topic " KIQ_STR_FMT " does not exist", KIQ_STR_ARG(name));
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    int err = kiq_topics_update_configs(b->topics, topic, topic_edit, ctx, validate_only);
    if (!err && !validate_only) kiq_log_retention_apply_topic(topic, b->config);
    kiq_topic_unref(topic);
    return err;
}

static int topic_replace(kiq_topic_configs_t *cfg, void *ctx) { return kiq_config_change_topic_replace(cfg, ctx); }
static int broker_replace(kiq_dynamic_configs_t *cfg, void *ctx) { return kiq_config_change_broker_replace(cfg, ctx); }

int kiq_api_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_configs_request_t *req = request;
    kiq_alter_configs_response_t *out = response;
    bool forwarded_here = r->listener == KIQ_LISTENER_CONTROL && !b->controller;
    if (b->cluster && !forwarded_here) {
        kiq_controller_link_alter_configs(b, req, FORWARD_WAIT_MS, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        const kiq_alter_configs_request_resources_t *res = &req->resources[i];
        kiq_alter_configs_response_responses_t *o = &out->responses[i];
        kiq_alter_configs_response_responses_init(o);
        o->resource_type = res->resource_type;
        o->resource_name = res->resource_name;
        kiq_error_clear();
        if (forwarded_here)
            o->error_code = (int16_t)(kiq_error_set("broker %d is not the controller", b->node_id), KIQ_ERR_NOT_CONTROLLER);
        else
            o->error_code = (int16_t)kiq_api_alter_configs_here(b, res->resource_type, res->resource_name,
                                                               topic_replace, broker_replace, (void *)res,
                                                               req->validate_only);
        if (o->error_code) o->error_message = kiq_api_error_message(r);
    }
    return KIQ_HANDLER_RESPOND;
}
