#include "controller/config_changes.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/errors.h"

enum { OP_SET = 0, OP_DELETE = 1, OP_APPEND = 2, OP_SUBTRACT = 3 };

int kiq_config_change_topic_replace(kiq_topic_configs_t *cfg, const kiq_alter_configs_request_resources_t *res)
{
    kiq_topic_configs_clear(cfg);
    for (int32_t i = 0; i < res->configs_n; i++) {
        kiq_str_t name = res->configs[i].name, value = res->configs[i].value;
        int err = kiq_topic_configs_set(cfg, name.p, name.len, value.p, value.p ? value.len : -1);
        if (err) return err;
    }
    return KIQ_ERR_NONE;
}

int kiq_config_change_broker_replace(kiq_dynamic_configs_t *cfg, const kiq_alter_configs_request_resources_t *res)
{
    kiq_dynamic_configs_clear(cfg);
    for (int32_t i = 0; i < res->configs_n; i++) {
        kiq_str_t name = res->configs[i].name, value = res->configs[i].value;
        if (!value.p) {
            kiq_error_set("Null value not supported for broker config " KIQ_STR_FMT, KIQ_STR_ARG(name));
            return KIQ_ERR_INVALID_CONFIG;
        }
        int err = kiq_dynamic_configs_set(cfg, name.p, name.len, value.p, value.len);
        if (err) return err;
    }
    return KIQ_ERR_NONE;
}

/* Kafka's request-level checks: known operations, no key twice. */
static int check_ops(const kiq_incremental_alter_configs_request_resources_t *res)
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

/* One operation on topic config i (found); current: its value in effect. */
static int topic_op(kiq_topic_configs_t *cfg, int i, const char *current,
                    const kiq_incremental_alter_configs_request_resources_configs_t *op)
{
    kiq_str_t value = op->value;
    int vlen = value.p ? value.len : -1;
    switch (op->config_operation) {
    case OP_SET: return kiq_topic_configs_set(cfg, kiq_topic_config_defs[i].name,
                                              (int)strlen(kiq_topic_config_defs[i].name), value.p, vlen);
    case OP_DELETE:
        free(cfg->value[i]);
        cfg->value[i] = NULL;
        return KIQ_ERR_NONE;
    case OP_APPEND: return kiq_topic_configs_append(cfg, i, current, value.p, vlen);
    default: return kiq_topic_configs_subtract(cfg, i, current, value.p, vlen);
    }
}

int kiq_config_change_topic_ops(kiq_topic_configs_t *cfg, const kiq_config_t *base,
                                const kiq_incremental_alter_configs_request_resources_t *res)
{
    int err = check_ops(res);
    for (int32_t k = 0; !err && k < res->configs_n; k++) {
        const kiq_incremental_alter_configs_request_resources_configs_t *op = &res->configs[k];
        int i = kiq_topic_config_find(op->name.p, op->name.len);
        if (i < 0) {
            kiq_error_set("Unknown topic config name: " KIQ_STR_FMT, KIQ_STR_ARG(op->name));
            return KIQ_ERR_INVALID_CONFIG;
        }
        char buf[32];
        int source;
        err = topic_op(cfg, i, kiq_topic_config_effective(base, cfg, i, buf, sizeof buf, &source), op);
    }
    return err;
}

/* The topic config a broker config is the default of, for APPEND and
 * SUBTRACT on a LIST broker config (log.cleanup.policy). */
static int list_topic_config(int id)
{
    for (int i = 0; i < kiq_topic_config_count; i++)
        if (kiq_topic_config_defs[i].broker_config == id && kiq_topic_config_defs[i].type == KIQ_CONFIG_WIRE_LIST)
            return i;
    return -1;
}

/* Kafka's dynamic broker configs of replication quotas, which KafkaIQ does
 * not have: never set here, so deleting one (kafka-reassign-partitions
 * --verify clears them after every reassignment) changes nothing and
 * succeeds, while setting one is refused like any config it cannot take. */
static bool unset_quota(kiq_str_t name)
{
    static const char *const quotas[] = {"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                                         "replica.alter.log.dirs.io.max.bytes.per.second"};
    for (size_t i = 0; i < sizeof quotas / sizeof quotas[0]; i++)
        if (kiq_str_eq(name, quotas[i])) return true;
    return false;
}

int kiq_config_change_broker_ops(kiq_dynamic_configs_t *cfg, const kiq_config_t *base,
                                 const kiq_incremental_alter_configs_request_resources_t *res)
{
    int err = check_ops(res);
    for (int32_t k = 0; !err && k < res->configs_n; k++) {
        const kiq_incremental_alter_configs_request_resources_configs_t *op = &res->configs[k];
        kiq_str_t name = op->name, value = op->value;
        if (op->config_operation == OP_SET || op->config_operation == OP_DELETE) {
            if (op->config_operation == OP_DELETE && unset_quota(name)) continue;
            if (op->config_operation == OP_SET && !value.p) {
                kiq_error_set("Null value not supported for broker config " KIQ_STR_FMT, KIQ_STR_ARG(name));
                return KIQ_ERR_INVALID_CONFIG;
            }
            err = kiq_dynamic_configs_set(cfg, name.p, name.len, op->config_operation == OP_SET ? value.p : NULL,
                                         value.len);
            continue;
        }
        int id = kiq_dynamic_config_find(name.p, name.len);
        int ti = id >= 0 ? list_topic_config(id) : -1;
        if (ti < 0) {
            kiq_error_set("Config value %s is not allowed for config key: " KIQ_STR_FMT,
                          op->config_operation == OP_APPEND ? "append" : "subtract", KIQ_STR_ARG(name));
            return id < 0 ? KIQ_ERR_INVALID_REQUEST : KIQ_ERR_INVALID_CONFIG;
        }
        /* the list arithmetic of the topic config it is the default of */
        kiq_topic_configs_t tmp = {0};
        const char *current = cfg->value[id] ? cfg->value[id] : kiq_config_str(base, (enum kiq_config_id)id);
        err = topic_op(&tmp, ti, current, op);
        if (!err) {
            free(cfg->value[id]);
            cfg->value[id] = tmp.value[ti];
            tmp.value[ti] = NULL;
        }
        kiq_topic_configs_clear(&tmp);
    }
    return err;
}

int kiq_config_change_topic(kiq_topic_configs_t *cfg, const kiq_config_t *base, const kiq_config_order_t *o)
{
    int err = o->replace ? kiq_config_change_topic_replace(cfg, o->replace)
                         : kiq_config_change_topic_ops(cfg, base, o->ops);
    return err ? err : kiq_topic_configs_check_together(cfg);
}

int kiq_config_change_broker(kiq_dynamic_configs_t *cfg, const kiq_config_t *base, const kiq_config_order_t *o)
{
    int err = o->replace ? kiq_config_change_broker_replace(cfg, o->replace)
                         : kiq_config_change_broker_ops(cfg, base, o->ops);
    kiq_str_t resource = kiq_config_order_name(o);
    if (!err && resource.p && resource.len == 0 && !cfg->value[KIQ_CFG_MIN_INSYNC_REPLICAS]) {
        kiq_error_set("min.insync.replicas cannot be removed from the cluster-wide broker configs (kept there "
                      "since Kafka 4.1, KIP-966)");
        return KIQ_ERR_INVALID_CONFIG;
    }
    return err;
}

/* A resource whose configs IncrementalAlterConfigs only sets or deletes,
 * one by one (groups, client-metrics resources), and Kafka's words for it. */
typedef struct set_only {
    const char *what;       /* "group", "client metrics" */
    const char *empty_name; /* the refusal of an empty resource name */
    int (*find)(kiq_str_t name);
    int (*set)(void *cfg, int i, kiq_str_t value);
} set_only_t;

static int change_set_only(const set_only_t *kind, void *cfg, const kiq_config_order_t *o)
{
    if (!o->ops) {
        kiq_error_set("AlterConfigs does not change %s configs: IncrementalAlterConfigs does", kind->what);
        return KIQ_ERR_INVALID_REQUEST;
    }
    kiq_str_t name = o->ops->resource_name;
    if (!name.p || name.len <= 0) {
        kiq_error_set("%s", kind->empty_name);
        return KIQ_ERR_INVALID_REQUEST;
    }
    for (int32_t i = 0; i < o->ops->configs_n; i++) {
        const kiq_incremental_alter_configs_request_resources_configs_t *c = &o->ops->configs[i];
        int k = kind->find(c->name);
        if (k < 0) {
            kiq_error_set("Unknown %s config name: " KIQ_STR_FMT, kind->what, KIQ_STR_ARG(c->name));
            return KIQ_ERR_INVALID_CONFIG;
        }
        if (c->config_operation == 0 && !c->value.p) {
            kiq_error_set("Null value not supported for: " KIQ_STR_FMT, KIQ_STR_ARG(c->name));
            return KIQ_ERR_INVALID_REQUEST;
        }
        if (c->config_operation != 0 && c->config_operation != 1) {
            kiq_error_set("A %s config is set or deleted, not appended to or subtracted from", kind->what);
            return KIQ_ERR_INVALID_REQUEST;
        }
        int err = kind->set(cfg, k, c->config_operation == 0 ? c->value : KIQ_STR_NULL);
        if (err) return err < 0 ? KIQ_ERR_UNKNOWN_SERVER_ERROR : err;
    }
    return KIQ_ERR_NONE;
}

static int set_group(void *cfg, int i, kiq_str_t value) { return kiq_group_configs_set(cfg, i, value); }

static int set_client_metrics(void *cfg, int i, kiq_str_t value)
{
    return kiq_client_metrics_configs_set(cfg, i, value);
}

int kiq_config_change_group(kiq_group_configs_t *cfg, const kiq_config_order_t *o)
{
    static const set_only_t kind = {"group", "Group id must not be empty", kiq_group_config_find, set_group};
    return change_set_only(&kind, cfg, o);
}

int kiq_config_change_client_metrics(kiq_client_metrics_configs_t *cfg, const kiq_config_order_t *o)
{
    static const set_only_t kind = {"client metrics", "Client metrics resource name must not be empty",
                                    kiq_client_metrics_config_find, set_client_metrics};
    return change_set_only(&kind, cfg, o);
}
