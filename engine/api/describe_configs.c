/* DescribeConfigs for topics (2), brokers (4) and groups (32: share
 * groups' configs, share/group_configs.h), with config sources and
 * synonyms as Kafka reports them: a value set for this broker, then the
 * cluster-wide default, then server.properties, then the built-in default.
 * Topic configs can be altered, and the broker configs that change at
 * runtime (kiq_config_dynamic); the other broker configs are read-only.
 * The broker resource "" is the cluster-wide default: only the configs set
 * there.
 *
 * In cluster mode every broker answers for topics from the configs the
 * controller pushes with UpdateMetadata, hosting the topic or not; the
 * controller's broker also serves it on its control plane, from the
 * controller's metadata. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "server/client_telemetry.h"
#include "api/authorize.h"
#include "config/topic_config.h"
#include "controller/controller.h"
#include "controller/metadata_cache.h"
#include "core/error.h"
#include "share/share_manager.h"

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
    s->name = kiq_request_str(r, name);
    s->value = kiq_request_str(r, value);
    s->source = source;
}

static void fill_entry(kiq_request_t *r, const kiq_describe_configs_request_t *req, config_entry_t *e,
                       const char *name, const char *value, int source, int type, bool read_only,
                       const char *doc)
{
    kiq_describe_configs_response_results_configs_init(e);
    e->name = kiq_request_str(r, name);
    e->value = kiq_request_str(r, value);
    e->read_only = read_only;
    e->is_default = source == KIQ_CONFIG_SOURCE_DEFAULT;
    e->config_source = (int8_t)source;
    e->config_type = (int8_t)type;
    if (req->include_documentation && doc) e->documentation = kiq_request_str(r, doc);
    if (req->include_synonyms) e->synonyms = kiq_arena_calloc(&r->arena, 16, sizeof *e->synonyms);
}

/* Kafka's broker configs whose default is null: none of their values is
 * a default synonym. */
static bool null_default(const char *name)
{
    static const char *const names[] = {"log.retention.ms", "log.retention.minutes", "log.roll.ms",
                                        "log.roll.jitter.ms", "log.flush.interval.ms"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

/* A broker config's synonyms, in Kafka's precedence, each level that has a
 * value: this broker's dynamic value, the cluster-wide one, the static
 * one, the default. */
static void broker_synonyms(kiq_broker_t *b, kiq_request_t *r, config_entry_t *e, int id)
{
    const char *name = kiq_config_defs[id].name;
    const char *v = kiq_config_dynamic_value(b->config, KIQ_CFG_LEVEL_BROKER, id);
    if (v) add_synonym(r, e, name, v, KIQ_CONFIG_SOURCE_DYNAMIC_BROKER);
    if ((v = kiq_config_dynamic_value(b->config, KIQ_CFG_LEVEL_CLUSTER, id)))
        add_synonym(r, e, name, v, KIQ_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER);
    bool is_default;
    v = kiq_config_static_text(b->config, id, &is_default);
    if (!is_default) add_synonym(r, e, name, v, KIQ_CONFIG_SOURCE_STATIC_BROKER);
    if (!null_default(name)) add_synonym(r, e, name, kiq_config_defs[id].default_value, KIQ_CONFIG_SOURCE_DEFAULT);
}

/* The topic's dynamic configs into an empty *tc: the controller's on the
 * controller broker's control plane, otherwise this broker's. Kafka error
 * code, out's message set. */
static int16_t topic_configs(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name,
                             kiq_describe_configs_response_results_t *out, kiq_topic_configs_t *tc)
{
    if (r->listener == KIQ_LISTENER_CONTROL) {
        struct kiq_controller *ctl = kiq_broker_active_controller(b);
        if (!ctl) {
            out->error_message = kiq_request_str(r, "This broker does not host the controller");
            return KIQ_ERR_NOT_CONTROLLER;
        }
        kiq_error_clear();
        int rc = name.p ? kiq_controller_topic_configs(ctl, name.p, (size_t)name.len, tc)
                        : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        if (rc) out->error_message = kiq_request_str(r, rc == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION ? "Topic does not exist"
                                                                                              : kiq_error_get());
        return (int16_t)rc;
    }
    if (b->cluster) {
        /* from the controller's last push, hosted here or not, as Kafka's
         * brokers answer from their metadata image */
        if (name.p && kiq_metadata_cache_topic_configs(b->metadata, name.p, (size_t)name.len, tc) == 0)
            return KIQ_ERR_NONE;
        out->error_message = kiq_request_str(r, "Topic does not exist");
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (!topic) {
        out->error_message = kiq_request_str(r, "Topic does not exist");
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    int rc = kiq_topic_configs_snapshot(topic, tc);
    kiq_topic_unref(topic);
    if (rc != 0) {
        out->error_message = kiq_request_error_message(r);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    return KIQ_ERR_NONE;
}

/* Topic config i's broker synonyms as Kafka's ConfigHelper lists them: the
 * broker configs behind it (kiq_topic_config_synonyms) level by level
 * (this broker's dynamic value, the cluster's, server.properties, the
 * default), from the first entry of the config it takes its default from
 * on, so none when that one has no value anywhere (log.retention.ms). A
 * config this broker does not have is there with the topic's default. */
static void topic_synonyms(kiq_broker_t *b, kiq_request_t *r, config_entry_t *e, int i)
{
    const char *const *names = kiq_topic_config_synonyms(i);
    bool started = false;
    for (int level = 0; level < 4; level++) {
        for (int k = 0; names[k]; k++) {
            int id = kiq_config_find(names[k]);
            const char *v = NULL;
            int8_t source = KIQ_CONFIG_SOURCE_DEFAULT;
            if (level == 0 && id >= 0) {
                v = kiq_config_dynamic_value(b->config, KIQ_CFG_LEVEL_BROKER, id);
                source = KIQ_CONFIG_SOURCE_DYNAMIC_BROKER;
            } else if (level == 1 && id >= 0) {
                v = kiq_config_dynamic_value(b->config, KIQ_CFG_LEVEL_CLUSTER, id);
                source = KIQ_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER;
            } else if (level == 2 && id >= 0) {
                bool is_default;
                v = kiq_config_static_text(b->config, id, &is_default);
                if (is_default) v = NULL;
                source = KIQ_CONFIG_SOURCE_STATIC_BROKER;
            } else if (level == 3 && !null_default(names[k])) {
                v = id >= 0 ? kiq_config_defs[id].default_value : k == 0 ? kiq_topic_config_defs[i].fixed : NULL;
            }
            if (!v || (!started && k != 0)) continue;
            started = true;
            add_synonym(r, e, names[k], v, source);
        }
    }
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
        fill_entry(r, req, e, d->name, value, source, d->type, false, d->doc);
        if (!req->include_synonyms) continue;
        /* the topic's own value first, then what it would inherit */
        if (source == KIQ_CONFIG_SOURCE_DYNAMIC_TOPIC) add_synonym(r, e, d->name, value, (int8_t)source);
        topic_synonyms(b, r, e, i);
    }
    kiq_topic_configs_clear(&tc);
}

static void describe_broker(kiq_broker_t *b, kiq_request_t *r, const kiq_describe_configs_request_t *req,
                            const kiq_describe_configs_request_resources_t *res,
                            kiq_describe_configs_response_results_t *out)
{
    enum kiq_config_level level;
    kiq_error_clear();
    if ((out->error_code = (int16_t)kiq_api_config_level(b, res->resource_name, &level)) != 0) {
        out->error_message = kiq_request_error_message(r);
        return;
    }
    out->configs = kiq_arena_calloc(&r->arena, KIQ_CFG__COUNT, sizeof *out->configs);
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        const kiq_config_def_t *d = &kiq_config_defs[i];
        if (!wanted(res, d->name)) continue;
        const char *value = kiq_config_str(b->config, i);
        int source = kiq_config_source(b->config, i);
        /* unset, and without a default in Kafka: it tells none */
        if (source == KIQ_CONFIG_SOURCE_DEFAULT && null_default(d->name)) value = NULL;
        if (level == KIQ_CFG_LEVEL_CLUSTER) {
            /* the cluster-wide default: what is set there, and only that */
            if (!(value = kiq_config_dynamic_value(b->config, KIQ_CFG_LEVEL_CLUSTER, i))) continue;
            source = KIQ_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER;
        }
        /* passwords and keys: never told, as Kafka's PASSWORD configs */
        bool secret = kiq_config_sensitive(i);
        if (secret) value = NULL;
        config_entry_t *e = &out->configs[out->configs_n++];
        fill_entry(r, req, e, d->name, value, source, kiq_config_wire_type(i), !kiq_config_dynamic(i), d->doc);
        e->is_sensitive = secret;
        if (!req->include_synonyms || secret) continue;
        if (level == KIQ_CFG_LEVEL_CLUSTER) add_synonym(r, e, d->name, value, (int8_t)source);
        else broker_synonyms(b, r, e, i);
    }
}

/* A group's configs (share/group_configs.h): its own, else the broker's
 * group.share.* default (or Kafka's). */
static void describe_group(kiq_broker_t *b, kiq_request_t *r, const kiq_describe_configs_request_t *req,
                           const kiq_describe_configs_request_resources_t *res,
                           kiq_describe_configs_response_results_t *out)
{
    char lock[16], limit[16];
    snprintf(lock, sizeof lock, "%" PRId64, kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_RECORD_LOCK_DURATION_MS));
    snprintf(limit, sizeof limit, "%" PRId64, kiq_config_int(b->config, KIQ_CFG_GROUP_SHARE_DELIVERY_COUNT_LIMIT));
    const char *dflt[KIQ_GROUP_CFG__COUNT] = {
        [KIQ_GROUP_CFG_AUTO_OFFSET_RESET] = kiq_config_str(b->config, KIQ_CFG_SHARE_AUTO_OFFSET_RESET),
        [KIQ_GROUP_CFG_LOCK_DURATION_MS] = lock,
        [KIQ_GROUP_CFG_DELIVERY_COUNT_LIMIT] = limit,
        [KIQ_GROUP_CFG_ISOLATION_LEVEL] = "read_uncommitted",
    };
    static const int8_t types[KIQ_GROUP_CFG__COUNT] = {2, 3, 3, 2}; /* STRING, INT */
    out->configs = kiq_arena_calloc(&r->arena, KIQ_GROUP_CFG__COUNT, sizeof *out->configs);
    kiq_share_lock(b->shares);
    const kiq_group_configs_t *own = kiq_share_group_configs(b->shares, res->resource_name.p, res->resource_name.len);
    for (int i = 0; i < KIQ_GROUP_CFG__COUNT; i++) {
        if (!wanted(res, kiq_group_config_names[i])) continue;
        const char *v = own && own->v[i] ? own->v[i] : dflt[i];
        config_entry_t *e = &out->configs[out->configs_n++];
        fill_entry(r, req, e, kiq_group_config_names[i], v,
                   own && own->v[i] ? KIQ_CONFIG_SOURCE_GROUP : KIQ_CONFIG_SOURCE_DEFAULT, types[i], false, NULL);
        if (req->include_synonyms)
            add_synonym(r, e, kiq_group_config_names[i], v,
                        own && own->v[i] ? KIQ_CONFIG_SOURCE_GROUP : KIQ_CONFIG_SOURCE_DEFAULT);
    }
    kiq_share_unlock(b->shares);
}

/* A client-metrics resource's configs (KIP-714): its own, the others at
 * their defaults, as Kafka describes one. */
static void describe_client_metrics(kiq_broker_t *b, kiq_request_t *r, const kiq_describe_configs_request_t *req,
                                    const kiq_describe_configs_request_resources_t *res,
                                    kiq_describe_configs_response_results_t *out)
{
    char interval[16];
    snprintf(interval, sizeof interval, "%d", KIQ_CLIENT_METRICS_DEFAULT_INTERVAL_MS);
    const char *dflt[KIQ_CM_CFG__COUNT] = {[KIQ_CM_CFG_INTERVAL_MS] = interval, [KIQ_CM_CFG_MATCH] = "",
                                           [KIQ_CM_CFG_METRICS] = ""};
    static const int8_t types[KIQ_CM_CFG__COUNT] = {3, 7, 7}; /* INT, LIST */
    kiq_client_metrics_configs_t own = {{0}};
    if (kiq_client_telemetry_resource_get(b->telemetry, res->resource_name, &own) < 0) {
        out->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return;
    }
    out->configs = kiq_arena_calloc(&r->arena, KIQ_CM_CFG__COUNT, sizeof *out->configs);
    for (int i = 0; i < KIQ_CM_CFG__COUNT; i++) {
        if (!wanted(res, kiq_client_metrics_config_names[i])) continue;
        const char *v = own.v[i] ? own.v[i] : dflt[i];
        int8_t source = own.v[i] ? KIQ_CONFIG_SOURCE_CLIENT_METRICS : KIQ_CONFIG_SOURCE_DEFAULT;
        config_entry_t *e = &out->configs[out->configs_n++];
        fill_entry(r, req, e, kiq_client_metrics_config_names[i], v, source, types[i], false, NULL);
        if (req->include_synonyms) add_synonym(r, e, kiq_client_metrics_config_names[i], v, source);
    }
    kiq_client_metrics_configs_clear(&own);
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
        /* as Kafka: DESCRIBE_CONFIGS on the topic, the group, or the cluster for a broker */
        int16_t refused =
            res->resource_type == KIQ_CONFIG_RESOURCE_TOPIC
                ? (kiq_api_allowed(b, r, KIQ_OP_DESCRIBE_CONFIGS, KIQ_RES_TOPIC, res->resource_name)
                       ? 0 : KIQ_ERR_TOPIC_AUTHORIZATION_FAILED)
            : res->resource_type == KIQ_CONFIG_RESOURCE_GROUP
                ? (kiq_api_allowed(b, r, KIQ_OP_DESCRIBE_CONFIGS, KIQ_RES_GROUP, res->resource_name)
                       ? 0 : KIQ_ERR_GROUP_AUTHORIZATION_FAILED)
            : (res->resource_type == KIQ_CONFIG_RESOURCE_BROKER ||
               res->resource_type == KIQ_CONFIG_RESOURCE_CLIENT_METRICS) &&
                      !kiq_api_cluster_allowed(b, r, KIQ_OP_DESCRIBE_CONFIGS)
                ? KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED
                : 0;
        if (refused)
            o->error_code = refused;
        else if (res->resource_type == KIQ_CONFIG_RESOURCE_TOPIC)
            describe_topic(b, r, req, res, o);
        else if (res->resource_type == KIQ_CONFIG_RESOURCE_BROKER)
            describe_broker(b, r, req, res, o);
        else if (res->resource_type == KIQ_CONFIG_RESOURCE_GROUP)
            describe_group(b, r, req, res, o);
        else if (res->resource_type == KIQ_CONFIG_RESOURCE_CLIENT_METRICS)
            describe_client_metrics(b, r, req, res, o);
        else {
            o->error_code = KIQ_ERR_INVALID_REQUEST;
            o->error_message = kiq_request_str(r, "Unsupported resource type");
        }
    }
    return KIQ_HANDLER_RESPOND;
}
