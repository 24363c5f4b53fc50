#include "server/broker_configs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/topic_config.h"
#include "core/error.h"
#include "core/str_map.h"
#include "share/share_manager.h"
#include "core/say.h"
#include "group/offsets_topic.h"
#include "log/file_io.h"
#include "server/broker.h"
#include "server/client_telemetry.h"
#include "log/log_retention.h"

#define STORE_DIR ".broker-configs"

static const char *const level_files[KIQ_CFG_LEVELS] = {
    [KIQ_CFG_LEVEL_BROKER] = "broker.properties",
    [KIQ_CFG_LEVEL_CLUSTER] = "cluster.properties",
};

static int store_path(kiq_broker_t *b, enum kiq_config_level level, char *buf, size_t n)
{
    if ((size_t)snprintf(buf, n, "%s/" STORE_DIR "/%s", b->log_dirs[0].path, level_files[level]) >= n)
        return kiq_error_set("log directory path too long");
    return 0;
}

/* One level's saved values: name=value lines. */
static int load_level(kiq_broker_t *b, enum kiq_config_level level)
{
    char path[PATH_MAX];
    if (store_path(b, level, path, sizeof path) != 0) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : kiq_error_errno("cannot read %s", path);
    char line[4096];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq || line[0] == '#') continue;
        *eq = '\0';
        int id = kiq_config_find(line);
        if (id < 0 || kiq_config_set_dynamic(b->config, level, id, eq + 1) != 0) {
            if (id < 0) kiq_error_set("%s: unknown config %s", path, line);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

int kiq_broker_configs_load(kiq_broker_t *b)
{
    if (b->cluster) return 0;
    for (int l = 0; l < KIQ_CFG_LEVELS; l++)
        if (load_level(b, l) != 0) return -1;
    if (kiq_config_dynamic_value(b->config, KIQ_CFG_LEVEL_CLUSTER, KIQ_CFG_MIN_INSYNC_REPLICAS)) return 0;
    /* as Kafka 4.1+'s controller does once active (KIP-966): the static
     * min.insync.replicas kept among the cluster-wide configs */
    kiq_dynamic_configs_t cfg = {{0}};
    bool is_default;
    if (kiq_broker_configs_get(b, KIQ_CFG_LEVEL_CLUSTER, &cfg) != 0) return -1;
    cfg.value[KIQ_CFG_MIN_INSYNC_REPLICAS] =
        strdup(kiq_config_static_text(b->config, KIQ_CFG_MIN_INSYNC_REPLICAS, &is_default));
    int rc = cfg.value[KIQ_CFG_MIN_INSYNC_REPLICAS] ? kiq_broker_configs_put(b, KIQ_CFG_LEVEL_CLUSTER, &cfg)
                                                    : kiq_error_set("out of memory");
    kiq_dynamic_configs_clear(&cfg);
    return rc;
}

void kiq_broker_configs_log_config(kiq_broker_t *b, const kiq_log_config_t *base, kiq_log_config_t *out)
{
    *out = *base;
    out->segment_bytes = (int32_t)kiq_config_int(b->config, KIQ_CFG_LOG_SEGMENT_BYTES);
    out->index_interval_bytes = (int32_t)kiq_config_int(b->config, KIQ_CFG_LOG_INDEX_INTERVAL_BYTES);
    out->segment_index_bytes = (int32_t)kiq_config_int(b->config, KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES);
}

int kiq_broker_configs_get(kiq_broker_t *b, enum kiq_config_level level, kiq_dynamic_configs_t *out)
{
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        const char *v = kiq_config_dynamic_value(b->config, level, i);
        if (v && !(out->value[i] = strdup(v))) {
            kiq_dynamic_configs_clear(out);
            return kiq_error_set("out of memory");
        }
    }
    return 0;
}

/* Writes the level's file whole (by rename, synced). */
static int save_level(kiq_broker_t *b, enum kiq_config_level level, const kiq_dynamic_configs_t *cfg)
{
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
    if ((size_t)snprintf(dir, sizeof dir, "%s/" STORE_DIR, b->log_dirs[0].path) >= sizeof dir ||
        store_path(b, level, path, sizeof path) != 0)
        return kiq_error_set("log directory path too long");
    if (kiq_mkdir_p(dir) != 0) return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return kiq_error_errno("cannot write %s", tmp);
    for (int i = 0; i < KIQ_CFG__COUNT; i++)
        if (cfg->value[i]) fprintf(f, "%s=%s\n", kiq_config_defs[i].name, cfg->value[i]);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fclose(f);
        return kiq_error_errno("cannot write %s", tmp);
    }
    fclose(f);
    if (rename(tmp, path) != 0) return kiq_error_errno("cannot rename %s", tmp);
    kiq_fsync_dir(dir);
    return 0;
}

int kiq_broker_configs_put(kiq_broker_t *b, enum kiq_config_level level, const kiq_dynamic_configs_t *cfg)
{
    if (!b->cluster && save_level(b, level, cfg) != 0) return -1;
    bool changed = false;
    for (int i = 0; i < KIQ_CFG__COUNT; i++) {
        const char *now = kiq_config_dynamic_value(b->config, level, i);
        const char *want = cfg->value[i];
        if (!now == !want && (!now || strcmp(now, want) == 0)) continue;
        if (kiq_config_set_dynamic(b->config, level, i, want) != 0) {
            KIQ_ERROR("broker %d: %s", b->node_id, kiq_error_get());
            continue;
        }
        KIQ_INFO("broker %d: %s is %s%s", b->node_id, kiq_config_defs[i].name, want ? want : "no longer set",
                 level == KIQ_CFG_LEVEL_CLUSTER ? " cluster-wide" : " for this broker");
        changed = true;
    }
    if (changed && b->topics) {
        kiq_log_config_t lc;
        kiq_broker_configs_log_config(b, &b->log_cfg, &lc);
        kiq_topics_set_log_config(b->topics, &lc);
        kiq_log_retention_apply_configs(b->topics, b->config);
    }
    return 0;
}

static int replace_with(kiq_topic_configs_t *cfg, void *ctx)
{
    kiq_topic_configs_clear(cfg);
    return kiq_topic_configs_copy(cfg, ctx) == 0 ? KIQ_ERR_NONE : KIQ_ERR_UNKNOWN_SERVER_ERROR;
}

static bool same_topic_configs(const kiq_topic_configs_t *a, const kiq_topic_configs_t *b)
{
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        if (!a->value[i] != !b->value[i]) return false;
        if (a->value[i] && strcmp(a->value[i], b->value[i]) != 0) return false;
    }
    return true;
}

/* A hosted topic takes the configs the controller keeps for it (none
 * listed: none), when they differ from its own. */
static void apply_topic(kiq_broker_t *b, kiq_topic_t *topic, const kiq_update_metadata_request_t *req)
{
    kiq_topic_configs_t want = {0}, now = {0};
    for (int32_t i = 0; i < req->kafkaiq_configs_n; i++) {
        const kiq_update_metadata_request_kafkaiq_configs_t *e = &req->kafkaiq_configs[i];
        if (e->resource_type != KIQ_CONFIG_RESOURCE_TOPIC || !kiq_str_eq(e->resource_name, topic->name)) continue;
        if (kiq_topic_configs_set(&want, e->name.p, e->name.len, e->value.p, e->value.p ? e->value.len : -1) != 0)
            KIQ_WARN("broker %d: the controller's %s config " KIQ_STR_FMT " is not one this broker takes: %s", b->node_id,
                     topic->name, KIQ_STR_ARG(e->name), kiq_error_get());
    }
    if (kiq_topic_configs_snapshot(topic, &now) == 0 && !same_topic_configs(&want, &now)) {
        if (kiq_topics_update_configs(b->topics, topic, replace_with, &want, false) == 0)
            kiq_log_retention_apply_topic(topic, b->config);
        else
            KIQ_ERROR("broker %d: cannot apply the configs of %s: %s", b->node_id, topic->name, kiq_error_get());
    }
    kiq_topic_configs_clear(&want);
    kiq_topic_configs_clear(&now);
}

/* The groups' configs (share groups', config/group_configs.h) as the
 * controller keeps them, replacing what was pushed before. */
static void apply_groups(kiq_broker_t *b, const kiq_update_metadata_request_t *req)
{
    if (!b->shares) return;
    kiq_share_lock(b->shares);
    kiq_share_group_configs_reset(b->shares);
    for (int32_t i = 0; i < req->kafkaiq_configs_n; i++) {
        const kiq_update_metadata_request_kafkaiq_configs_t *e = &req->kafkaiq_configs[i];
        if (e->resource_type != KIQ_CONFIG_RESOURCE_GROUP || !e->value.p || !e->resource_name.p) continue;
        int k = kiq_group_config_find(e->name);
        kiq_group_configs_t c = {{0}};
        const kiq_group_configs_t *now = kiq_share_group_configs(b->shares, e->resource_name.p, e->resource_name.len);
        if (k < 0 || (now && kiq_group_configs_copy(&c, now) != 0) || kiq_group_configs_set(&c, k, e->value) != 0) {
            KIQ_WARN("broker %d: the controller's group config " KIQ_STR_FMT " is not one this broker takes",
                     b->node_id, KIQ_STR_ARG(e->name));
            kiq_group_configs_clear(&c);
            continue;
        }
        if (kiq_share_group_configs_put(b->shares, e->resource_name.p, e->resource_name.len, &c) != 0)
            KIQ_ERROR("broker %d: out of memory keeping group configs", b->node_id);
    }
    kiq_share_unlock(b->shares);
}

/* The client-metrics resources as the controller keeps them, replacing
 * what was pushed before all at once. */
static void apply_client_metrics(kiq_broker_t *b, const kiq_update_metadata_request_t *req)
{
    kiq_str_map_t *fresh = kiq_str_map_new();
    for (int32_t i = 0; fresh && i < req->kafkaiq_configs_n; i++) {
        const kiq_update_metadata_request_kafkaiq_configs_t *e = &req->kafkaiq_configs[i];
        if (e->resource_type != KIQ_CONFIG_RESOURCE_CLIENT_METRICS || !e->value.p || !e->resource_name.p) continue;
        kiq_client_metrics_configs_t *c = kiq_str_map_get(fresh, e->resource_name.p, (size_t)e->resource_name.len);
        if (!c && (c = calloc(1, sizeof *c)) &&
            kiq_str_map_put(fresh, e->resource_name.p, (size_t)e->resource_name.len, c) != 0) {
            free(c);
            c = NULL;
        }
        int k = kiq_client_metrics_config_find(e->name);
        if (!c) {
            KIQ_ERROR("broker %d: out of memory keeping client metrics configs", b->node_id);
        } else if (k < 0 || kiq_client_metrics_configs_set(c, k, e->value) != 0) {
            KIQ_WARN("broker %d: the controller's client metrics config " KIQ_STR_FMT " is not one this broker takes",
                     b->node_id, KIQ_STR_ARG(e->name));
        }
    }
    if (fresh) kiq_client_telemetry_resources_replace(b->telemetry, fresh);
    else KIQ_ERROR("broker %d: out of memory keeping client metrics configs", b->node_id);
}

void kiq_broker_configs_apply_pushed(kiq_broker_t *b, const kiq_update_metadata_request_t *req)
{
    apply_groups(b, req);
    apply_client_metrics(b, req);
    kiq_dynamic_configs_t levels[KIQ_CFG_LEVELS] = {{{0}}};
    char self[16];
    snprintf(self, sizeof self, "%d", b->node_id);
    for (int32_t i = 0; i < req->kafkaiq_configs_n; i++) {
        const kiq_update_metadata_request_kafkaiq_configs_t *e = &req->kafkaiq_configs[i];
        if (e->resource_type != KIQ_CONFIG_RESOURCE_BROKER || !e->value.p) continue;
        enum kiq_config_level level = e->resource_name.len == 0 ? KIQ_CFG_LEVEL_CLUSTER : KIQ_CFG_LEVEL_BROKER;
        if (level == KIQ_CFG_LEVEL_BROKER && !kiq_str_eq(e->resource_name, self)) continue;
        if (kiq_dynamic_configs_set(&levels[level], e->name.p, e->name.len, e->value.p, e->value.len) != 0)
            KIQ_WARN("broker %d: the controller's broker config " KIQ_STR_FMT " is not one this broker takes: %s",
                     b->node_id, KIQ_STR_ARG(e->name), kiq_error_get());
    }
    for (int l = 0; l < KIQ_CFG_LEVELS; l++) {
        kiq_broker_configs_put(b, l, &levels[l]);
        kiq_dynamic_configs_clear(&levels[l]);
    }
    if (!b->topics) return;
    int count;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    for (int i = 0; i < count; i++)
        /* __consumer_offsets' configs are the broker's own (offsets.topic.*) */
        if (strcmp(list[i]->name, KIQ_OFFSETS_TOPIC) != 0) apply_topic(b, list[i], req);
    kiq_topics_list_free(list, count);
}
