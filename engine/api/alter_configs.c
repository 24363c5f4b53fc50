/* AlterConfigs: replaces a topic's whole set of dynamic configs (what is
 * not in the request goes back to its default). Broker configs are all
 * static here, so a broker resource is refused as Kafka refuses its
 * read-only configs. validate_only checks without changing anything.
 * In cluster mode a topic's configs live with the controller and are not
 * altered yet: changing one broker's copy would split its replicas. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "config/topic_config.h"
#include "core/error.h"
#include "server/log_retention.h"

int kiq_api_alter_broker_check(kiq_broker_t *b, kiq_str_t resource_name, const kiq_str_t *names, int32_t n)
{
    char id[16];
    snprintf(id, sizeof id, "%d", b->node_id);
    if (resource_name.len > 0 && !kiq_str_eq(resource_name, id)) {
        kiq_error_set("Unexpected broker id, expected %s or empty string, but received " KIQ_STR_FMT, id,
                      KIQ_STR_ARG(resource_name));
        return KIQ_ERR_INVALID_REQUEST;
    }
    if (n <= 0) return KIQ_ERR_NONE;
    char list[512];
    size_t len = 0;
    for (int32_t i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s" KIQ_STR_FMT, i ? ", " : "",
                                KIQ_STR_ARG(names[i]));
    kiq_error_set("Cannot update these configs dynamically: [%s] (every broker config is static here)", list);
    return KIQ_ERR_INVALID_REQUEST;
}

static int replace_all(kiq_topic_configs_t *cfg, void *ctx)
{
    const kiq_alter_configs_request_resources_t *res = ctx;
    kiq_topic_configs_clear(cfg);
    for (int32_t i = 0; i < res->configs_n; i++) {
        kiq_str_t name = res->configs[i].name, value = res->configs[i].value;
        int err = kiq_topic_configs_set(cfg, name.p, name.len, value.p, value.p ? value.len : -1);
        if (err) return err;
    }
    return KIQ_ERR_NONE;
}

static int16_t alter_resource(kiq_broker_t *b, kiq_request_t *r, const kiq_alter_configs_request_resources_t *res,
                              bool validate_only)
{
    if (res->resource_type == KIQ_API_RESOURCE_BROKER) {
        int32_t n = res->configs_n > 0 ? res->configs_n : 0;
        kiq_str_t *names = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *names);
        for (int32_t i = 0; i < n; i++) names[i] = res->configs[i].name;
        return (int16_t)kiq_api_alter_broker_check(b, res->resource_name, names, n);
    }
    return (int16_t)kiq_api_alter_topic_configs(b, res->resource_type, res->resource_name, replace_all, (void *)res,
                                                validate_only);
}

int kiq_api_alter_topic_configs(kiq_broker_t *b, int8_t resource_type, kiq_str_t name,
                                int (*edit)(kiq_topic_configs_t *cfg, void *ctx), void *ctx, bool validate_only)
{
    if (resource_type != KIQ_API_RESOURCE_TOPIC) {
        kiq_error_set("Unsupported resource type %d", resource_type);
        return KIQ_ERR_INVALID_REQUEST;
    }
    if (b->cluster) {
        kiq_error_set("Topic configs cannot be altered in cluster mode yet: they are set when the topic is created");
        return KIQ_ERR_INVALID_REQUEST;
    }
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (!topic) {
        kiq_error_set("Topic " KIQ_STR_FMT " does not exist", KIQ_STR_ARG(name));
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    int err = kiq_topics_update_configs(b->topics, topic, edit, ctx, validate_only);
    if (!err && !validate_only) kiq_log_retention_apply_topic(topic, b->config);
    kiq_topic_unref(topic);
    return err;
}

int kiq_api_alter_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_configs_request_t *req = request;
    kiq_alter_configs_response_t *out = response;
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        const kiq_alter_configs_request_resources_t *res = &req->resources[i];
        kiq_alter_configs_response_responses_t *o = &out->responses[i];
        kiq_alter_configs_response_responses_init(o);
        o->resource_type = res->resource_type;
        o->resource_name = res->resource_name;
        kiq_error_clear();
        o->error_code = alter_resource(b, r, res, req->validate_only);
        if (o->error_code) o->error_message = kiq_api_error_message(r);
    }
    return KIQ_HANDLER_RESPOND;
}
