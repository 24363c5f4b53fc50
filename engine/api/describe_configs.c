/* DescribeConfigs for topics (2) and brokers (4), with config sources and
 * synonyms as Kafka reports them. Topic configs can be altered; broker
 * configs are all static (read-only).
 *
 * In cluster mode the controller's broker also serves it on its control
 * plane, for topics, from the controller's metadata: that is where a
 * replica learns the configs of a topic it starts hosting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "config/topic_config.h"
#include "controller/controller.h"
#include "core/error.h"

enum { RESOURCE_TOPIC = 2, RESOURCE_BROKER = 4 };

typedef kiq_describe_configs_response_results_configs_t config_entry_t;

static bool wanted(const kiq_describe_configs_request_resources_t *res, const char *name)
{
    if (res->configuration_keys_n < 0) return true;
    for (int32_t i = 0; i < res->configuration_keys_n; i++)
        if (kiq_str_eq(res->configuration_keys[i], name)) return true;
    return false;
}

static void add_synonym(kiq_request_t *r, config_entry_t *e, const char *name, const char *value,
                        int8_t source)
{
    kiq_describe_configs_response_results_configs_synonyms_t *s = &e->synonyms[e->synonyms_n++];
    kiq_describe_configs_response_results_configs_synonyms_init(s);
    s->name = kiq_api_str(r, name);
    s->value = kiq_api_str(r, value);
    s->source = source;
}

static void fill_entry(kiq_request_t *r, const kiq_describe_configs_request_t *req, config_entry_t *e,
                       const char *name, const char *value, int source, int type, bool read_only,
                       const char *doc)
{
    kiq_describe_configs_response_results_configs_init(e);
    e->name = kiq_api_str(r, name);
    e->value = kiq_api_str(r, value);
    e->read_only = read_only;
    e->is_default = source == KIQ_CONFIG_SOURCE_DEFAULT;
    e->config_source = (int8_t)source;
    e->config_type = (int8_t)type;
    if (req->include_documentation && doc) e->documentation = kiq_api_str(r, doc);
    if (req->include_synonyms) e->synonyms = kiq_arena_calloc(&r->arena, 2, sizeof *e->synonyms);
}

/* The topic's dynamic configs into an empty *tc: the controller's on the
 * controller broker's control plane, otherwise this broker's. Kafka error
 * code, out's message set. */
static int16_t topic_configs(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name,
                             kiq_describe_configs_response_results_t *out, kiq_topic_configs_t *tc)
{
    if (r->listener == KIQ_LISTENER_CONTROL) {
        if (!b->controller) {
            out->error_message = kiq_api_str(r, "This broker does not host the controller");
            return KIQ_ERR_NOT_CONTROLLER;
        }
        kiq_error_clear();
        int rc = name.p ? kiq_controller_topic_configs(b->controller, name.p, (size_t)name.len, tc)
                        : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        if (rc) out->error_message = kiq_api_str(r, rc == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION ? "Topic does not exist"
                                                                                              : kiq_error_get());
        return (int16_t)rc;
    }
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (!topic) {
        out->error_message = kiq_api_str(r, "Topic does not exist");
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    int rc = kiq_topic_configs_snapshot(topic, tc);
    kiq_topic_unref(topic);
    if (rc != 0) {
        out->error_message = kiq_api_error_message(r);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    return KIQ_ERR_NONE;
}

static void describe_topic(kiq_broker_t *b, kiq_request_t *r, const kiq_describe_configs_request_t *req,
                           const kiq_describe_configs_request_resources_t *res,
                           kiq_describe_configs_response_results_t *out)
{
    kiq_topic_configs_t tc = {0};
    out->error_code = topic_configs(b, r, res->resource_name, out, &tc);
    if (out->error_code) return;
    out->configs = kiq_arena_calloc(&r->arena, (size_t)kiq_topic_config_count, sizeof *out->configs);
    for (int i = 0; i < kiq_topic_config_count; i++) {
        const kiq_topic_config_def_t *d = &kiq_topic_config_defs[i];
        if (!wanted(res, d->name)) continue;
        char buf[32];
        int source;
        const char *value = kiq_topic_config_effective(b->config, &tc, i, buf, sizeof buf, &source);
        config_entry_t *e = &out->configs[out->configs_n++];
        fill_entry(r, req, e, d->name, value, source, d->type, false, NULL);
        if (!req->include_synonyms) continue;
        /* the topic's own value first, then what it would inherit */
        if (source == KIQ_CONFIG_SOURCE_DYNAMIC_TOPIC) add_synonym(r, e, d->name, value, (int8_t)source);
        if (d->broker_config >= 0) {
            bool is_default;
            const char *bv = kiq_config_text(b->config, d->broker_config, &is_default);
            add_synonym(r, e, kiq_config_defs[d->broker_config].name, bv,
                        is_default ? KIQ_CONFIG_SOURCE_DEFAULT : KIQ_CONFIG_SOURCE_STATIC_BROKER);
        }
    }
    kiq_topic_configs_clear(&tc);
}

static void describe_broker(kiq_broker_t *b, kiq_request_t *r, const kiq_describe_configs_request_t *req,
                            const kiq_describe_configs_request_resources_t *res,
                            kiq_describe_configs_response_results_t *out)
{
    char id[16];
    snprintf(id, sizeof id, "%d", b->node_id);
    if (res->resource_name.len > 0 && !kiq_str_eq(res->resource_name, id)) {
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        out->error_message = kiq_api_str(r, "Unexpected broker id");
        return;
    }
    out->configs = kiq_arena_calloc(&r->arena, KIQ_CFG__COUNT, sizeof *out->configs);
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        const kiq_config_def_t *d = &kiq_config_defs[i];
        if (!wanted(res, d->name)) continue;
        bool is_default;
        const char *value = kiq_config_text(b->config, i, &is_default);
        int source = is_default ? KIQ_CONFIG_SOURCE_DEFAULT : KIQ_CONFIG_SOURCE_STATIC_BROKER;
        config_entry_t *e = &out->configs[out->configs_n++];
        fill_entry(r, req, e, d->name, value, source, kiq_config_wire_type(i), true, d->doc);
        if (req->include_synonyms) add_synonym(r, e, d->name, value, (int8_t)source);
    }
}

int kiq_api_describe_configs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                    void *response)
{
    const kiq_describe_configs_request_t *req = request;
    kiq_describe_configs_response_t *out = response;
    int32_t n = req->resources_n > 0 ? req->resources_n : 0;
    out->results_n = n;
    out->results = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->results);
    for (int32_t i = 0; i < n; i++) {
        const kiq_describe_configs_request_resources_t *res = &req->resources[i];
        kiq_describe_configs_response_results_t *o = &out->results[i];
        kiq_describe_configs_response_results_init(o);
        o->resource_type = res->resource_type;
        o->resource_name = res->resource_name;
        if (res->resource_type == RESOURCE_TOPIC)
            describe_topic(b, r, req, res, o);
        else if (res->resource_type == RESOURCE_BROKER)
            describe_broker(b, r, req, res, o);
        else {
            o->error_code = KIQ_ERR_INVALID_REQUEST;
            o->error_message = kiq_api_str(r, "Unsupported resource type");
        }
    }
    return KIQ_HANDLER_RESPOND;
}
