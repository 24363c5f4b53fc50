/* The dynamic configs the controller keeps (AlterConfigs,
 * IncrementalAlterConfigs): checked, recorded, pushed to the brokers. */
#include "controller/controller_internal.h"

/* Under mu: a ConfigRecord for each key that differs between before and
 * after (NULL: unset), after's value or null. */
static void config_records(batch_t *b, int8_t type, const char *resource, char *const *before, char *const *after,
                           int n, const char *(*name_of)(int))
{
    for (int i = 0; i < n; i++) {
        if (!before[i] == !after[i] && (!before[i] || strcmp(before[i], after[i]) == 0)) continue;
        kiq_metadata_record_t *cr = kiq_ctl_add_record(b, KIQ_MR_CONFIG);
        cr->m.config.resource_type = type;
        cr->m.config.resource_name = kiq_ctl_astr(b->a, resource);
        cr->m.config.name = kiq_ctl_astr(b->a, name_of(i));
        cr->m.config.value = after[i] ? kiq_ctl_astr(b->a, after[i]) : KIQ_STR_NULL;
    }
}

static const char *topic_config_name(int i) { return kiq_topic_config_defs[i].name; }
static const char *broker_config_name(int i) { return kiq_config_defs[i].name; }
static const char *group_config_name(int i) { return kiq_group_config_names[i]; }
static const char *client_metrics_config_name(int i) { return kiq_client_metrics_config_names[i]; }

/* Under mu: the resource's configs in the image, n of them named by
 * name_of: before points into the image, after gets copies to edit. -1
 * when out of memory (after then holds what was copied). */
static int image_configs(kiq_controller_t *c, int8_t type, const char *resource, char **before, char **after, int n,
                         const char *(*name_of)(int))
{
    for (int i = 0; i < n; i++) {
        const char *v = kiq_metadata_image_config(c->image, type, resource, name_of(i));
        before[i] = (char *)v;
        if (v && !(after[i] = strdup(v))) return kiq_error_set("out of memory");
    }
    return 0;
}

/* Under mu: one resource's change, its records into b. A Kafka error code. */
static int16_t change_configs(kiq_controller_t *c, batch_t *b, const kiq_config_order_t *e)
{
    int8_t type = kiq_config_order_type(e);
    kiq_str_t name = kiq_config_order_name(e);
    char resource[256];
    if (!name.p || name.len >= (int32_t)sizeof resource) {
        kiq_error_set("Invalid resource name");
        return KIQ_ERR_INVALID_REQUEST;
    }
    snprintf(resource, sizeof resource, KIQ_STR_FMT, KIQ_STR_ARG(name));
    int16_t err;
    if (type == KIQ_CONFIG_RESOURCE_TOPIC) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic(c->image, name.p, (size_t)name.len);
        if (!ti) {
            kiq_error_set("Topic %s does not exist", resource);
            return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        }
        kiq_topic_configs_t before = {0}, after = {0};
        if (image_configs(c, type, resource, before.value, after.value, KIQ_TOPIC_CONFIG_COUNT, topic_config_name) != 0) {
            kiq_topic_configs_clear(&after);
            return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
        err = (int16_t)kiq_config_change_topic(&after, c->cfg, e);
        if (!err) config_records(b, type, resource, before.value, after.value, KIQ_TOPIC_CONFIG_COUNT, topic_config_name);
        kiq_topic_configs_clear(&after);
        return err;
    }
    if (type == KIQ_CONFIG_RESOURCE_GROUP) {
        /* a share group's configs (config/group_configs.h); any group id,
         * as Kafka takes them before the group exists */
        kiq_group_configs_t before = {{0}}, after = {{0}};
        if (image_configs(c, type, resource, before.v, after.v, KIQ_GROUP_CFG__COUNT, group_config_name) != 0) {
            kiq_group_configs_clear(&after);
            return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
        err = (int16_t)kiq_config_change_group(&after, e);
        if (!err) config_records(b, type, resource, before.v, after.v, KIQ_GROUP_CFG__COUNT, group_config_name);
        kiq_group_configs_clear(&after);
        return err;
    }
    if (type == KIQ_CONFIG_RESOURCE_CLIENT_METRICS) {
        kiq_client_metrics_configs_t before = {{0}}, after = {{0}};
        if (image_configs(c, type, resource, before.v, after.v, KIQ_CM_CFG__COUNT, client_metrics_config_name) != 0) {
            kiq_client_metrics_configs_clear(&after);
            return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
        err = (int16_t)kiq_config_change_client_metrics(&after, e);
        if (!err)
            config_records(b, type, resource, before.v, after.v, KIQ_CM_CFG__COUNT, client_metrics_config_name);
        kiq_client_metrics_configs_clear(&after);
        return err;
    }
    if (type != KIQ_CONFIG_RESOURCE_BROKER) {
        kiq_error_set("Unsupported resource type %d", type);
        return KIQ_ERR_INVALID_REQUEST;
    }
    /* "" is the cluster-wide default, else a registered broker's id */
    char *end;
    long id = strtol(resource, &end, 10);
    if (resource[0] && (*end || !kiq_metadata_image_broker(c->image, (int32_t)id))) {
        kiq_error_set("Unknown broker id %s (a broker config resource names a registered broker, or is empty for the "
                      "cluster default)",
                      resource);
        return KIQ_ERR_INVALID_REQUEST;
    }
    kiq_dynamic_configs_t before = {0}, after = {0};
    if (image_configs(c, type, resource, before.value, after.value, KIQ_CFG__COUNT, broker_config_name) != 0) {
        kiq_dynamic_configs_clear(&after);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    err = (int16_t)kiq_config_change_broker(&after, c->cfg, e);
    if (!err) config_records(b, type, resource, before.value, after.value, KIQ_CFG__COUNT, broker_config_name);
    kiq_dynamic_configs_clear(&after);
    return err;
}

/* Under mu: commits what the edits wrote (unless validate_only). */
static int16_t commit_configs(kiq_controller_t *c, batch_t *b, bool validate_only)
{
    if (validate_only) return KIQ_ERR_NONE;
    return kiq_ctl_commit(c, b) == 0 ? KIQ_ERR_NONE : KIQ_ERR_UNKNOWN_SERVER_ERROR;
}

static kiq_str_t error_copy(kiq_arena_t *a)
{
    const char *e = kiq_error_get();
    return (kiq_str_t){kiq_arena_strndup(a, e, strlen(e)), (int32_t)strlen(e)};
}

void kiq_controller_change_configs(kiq_controller_t *c, kiq_arena_t *arena, kiq_config_order_t *orders, int n,
                                   bool validate_only)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < n; i++) {
        kiq_error_clear();
        size_t mark = b.n;
        orders[i].error = orders[i].refused ? orders[i].refused : change_configs(c, &b, &orders[i]);
        if (orders[i].error) {
            b.n = mark; /* all or nothing per resource */
            orders[i].message = error_copy(arena);
        }
    }
    int16_t err = commit_configs(c, &b, validate_only);
    if (!err && !validate_only) {
        /* unclean.leader.election.enable turned on elects at once for a
         * partition left without a leader, as Kafka's controller does */
        kiq_ctl_elect_offline(c, &b);
        kiq_ctl_commit(c, &b);
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    for (int i = 0; err && i < n; i++)
        if (!orders[i].error) orders[i].error = err;
}
