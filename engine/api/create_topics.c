/* CreateTopics. Standalone, this broker is the controller, so it creates
 * topics itself. Partition count and replication factor follow Kafka's
 * rules and defaults; the topic's configs are checked (INVALID_CONFIG
 * naming the bad one) and kept, and v5+ answers with the effective
 * configs.
 *
 * In cluster mode the controller decides (server/controller_link.h): any
 * broker forwards there, and the broker hosting the controller also takes
 * the forwarded requests on its control plane. The controller keeps the
 * topic's configs with it; each replica asks for them when it first hosts
 * the topic (replica/replica_manager.c). A client's request is parked
 * while the controller decides and then until this broker's metadata knows
 * the new topic (bounded by its timeout, 10 s at most), so its next
 * Metadata sees it; no I/O thread waits meanwhile. */
#include <stdio.h>

#include "api/quota_throttle.h"
#include "api/topic_orders.h"
#include "api/authorize.h"
#include "config/topic_config.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/uuid.h"
#include "server/controller_link.h"
#include "log/log_retention.h"
#include "controller/metadata_cache.h"

/* The longest a client's CreateTopics waits for the new topic to reach
 * this broker's metadata. */
#define CLUSTER_WAIT_MAX_MS 10000

static int16_t check_topic(kiq_broker_t *b, const kiq_create_topics_request_topics_t *t,
                           int32_t *partitions, int16_t *rf, kiq_topic_configs_t *cfg)
{
    *partitions = t->num_partitions;
    *rf = t->replication_factor;
    if (t->assignments_n > 0) {
        if (t->num_partitions != -1 || t->replication_factor != -1) {
            kiq_error_set("Both numPartitions or replicationFactor and replicasAssignments were set. "
                          "Both cannot be used at the same time.");
            return KIQ_ERR_INVALID_REQUEST;
        }
        *partitions = t->assignments_n;
        *rf = (int16_t)t->assignments[0].broker_ids_n;
        for (int32_t i = 0; i < t->assignments_n; i++) {
            const kiq_create_topics_request_topics_assignments_t *a = &t->assignments[i];
            if (a->partition_index != i || a->broker_ids_n != *rf) {
                kiq_error_set("partition assignments must cover partitions 0..%d with %d replicas each",
                              t->assignments_n - 1, *rf);
                return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
            }
            for (int32_t j = 0; j < a->broker_ids_n; j++)
                if (a->broker_ids[j] != b->node_id) {
                    kiq_error_set("Unknown broker %d in the replica assignment", a->broker_ids[j]);
                    return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
                }
        }
    }
    if (*partitions == -1) *partitions = (int32_t)kiq_config_int(b->config, KIQ_CFG_NUM_PARTITIONS);
    if (*rf == -1) *rf = (int16_t)kiq_config_int(b->config, KIQ_CFG_DEFAULT_REPLICATION_FACTOR);
    if (*partitions <= 0) {
        kiq_error_set("Number of partitions must be larger than 0.");
        return KIQ_ERR_INVALID_PARTITIONS;
    }
    if (*rf <= 0) {
        kiq_error_set("Replication factor must be larger than 0.");
        return KIQ_ERR_INVALID_REPLICATION_FACTOR;
    }
    if (*rf > 1) {
        kiq_error_set("Replication factor: %d larger than available brokers: 1.", *rf);
        return KIQ_ERR_INVALID_REPLICATION_FACTOR;
    }
    for (int32_t i = 0; i < t->configs_n; i++) {
        kiq_str_t name = t->configs[i].name, value = t->configs[i].value;
        int err = kiq_topic_configs_set(cfg, name.p, name.len, value.p, value.p ? value.len : -1);
        if (err) return (int16_t)err;
    }
    return (int16_t)kiq_topic_configs_check_together(cfg);
}

/* v5+: every topic config with its value and where it comes from. */
static void list_configs(kiq_broker_t *b, kiq_request_t *r, const kiq_topic_configs_t *cfg,
                         kiq_create_topics_response_topics_t *tr)
{
    tr->configs = kiq_arena_calloc(&r->arena, (size_t)kiq_topic_config_count, sizeof *tr->configs);
    tr->configs_n = kiq_topic_config_count;
    for (int i = 0; i < kiq_topic_config_count; i++) {
        kiq_create_topics_response_topics_configs_t *c = &tr->configs[i];
        kiq_create_topics_response_topics_configs_init(c);
        char buf[32];
        int source;
        const char *value = kiq_topic_config_effective(b->config, cfg, i, buf, sizeof buf, &source);
        c->name = kiq_request_str(r, kiq_topic_config_defs[i].name);
        c->value = kiq_request_str(r, value);
        c->config_source = (int8_t)source;
    }
}

static bool duplicate(const kiq_create_topics_request_t *req, int32_t i)
{
    kiq_str_t n = req->topics[i].name;
    for (int32_t j = 0; j < i; j++)
        if (n.p && req->topics[j].name.len == n.len && memcmp(req->topics[j].name.p, n.p, (size_t)n.len) == 0)
            return true;
    return false;
}

/* What can be refused here before asking the controller; the checked
 * configs go into *cfg, for the controller to keep with the topic. */
static int16_t cluster_check(const kiq_create_topics_request_t *req, int32_t i, kiq_topic_configs_t *cfg)
{
    const kiq_create_topics_request_topics_t *t = &req->topics[i];
    if (duplicate(req, i)) {
        kiq_error_set("Create topics request from client contains a duplicate topic");
        return KIQ_ERR_INVALID_REQUEST;
    }
    if (t->assignments_n > 0) {
        kiq_error_set("manual replica assignments are not supported in cluster mode");
        return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    }
    for (int32_t j = 0; j < t->configs_n; j++) {
        kiq_str_t name = t->configs[j].name, value = t->configs[j].value;
        int16_t err = (int16_t)kiq_topic_configs_set(cfg, name.p, name.len, value.p, value.p ? value.len : -1);
        if (err) return err;
    }
    return (int16_t)kiq_topic_configs_check_together(cfg);
}

/* The response from the controller's decisions; each topic's checked
 * configs (ctx) cleared after. */
static void fill(kiq_api_topic_orders_t *t)
{
    kiq_broker_t *b = t->b;
    const kiq_create_topics_request_t *req = t->r->body;
    kiq_create_topics_response_t *out = t->resp;
    kiq_topic_configs_t *cfgs = t->ctx;
    for (int32_t i = 0; i < t->n; i++) {
        const kiq_topic_order_t *o = kiq_api_topic_orders_of(t, i);
        if (!o) continue;
        kiq_create_topics_response_topics_t *tr = &out->topics[i];
        tr->error_code = o->error;
        tr->error_message = o->message;
        if (o->error) continue;
        kiq_cached_partition_t p0;
        int32_t np = kiq_metadata_cache_partition_count(b->metadata, o->name.p, (size_t)o->name.len);
        if (np > 0 && kiq_metadata_cache_partition(b->metadata, o->name.p, (size_t)o->name.len, 0, &p0)) {
            tr->num_partitions = np;
            tr->replication_factor = (int16_t)p0.nreplicas;
            kiq_metadata_cache_topic_id(b->metadata, o->name.p, (size_t)o->name.len, &tr->topic_id);
        } else {
            /* not here yet: what the controller was asked for, its defaults
             * being this config's */
            tr->num_partitions = o->partitions != -1 ? o->partitions
                                                     : (int32_t)kiq_config_int(b->config, KIQ_CFG_NUM_PARTITIONS);
            tr->replication_factor =
                o->replication_factor != -1 ? o->replication_factor
                                            : (int16_t)kiq_config_int(b->config, KIQ_CFG_DEFAULT_REPLICATION_FACTOR);
            if (req->validate_only) kiq_uuid_random(&tr->topic_id);
        }
        if (t->r->header.api_version >= 5) list_configs(b, t->r, &cfgs[i], tr);
    }
    for (int32_t i = 0; i < t->n; i++) kiq_topic_configs_clear(&cfgs[i]);
}

/* As Kafka: CREATE on the cluster, or on the topic. */
static bool may_create(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name)
{
    if (kiq_api_cluster_allowed(b, r, KIQ_OP_CREATE) || kiq_api_allowed(b, r, KIQ_OP_CREATE, KIQ_RES_TOPIC, name))
        return true;
    kiq_error_set("Authorization failed.");
    return false;
}

static int cluster_create(kiq_broker_t *b, kiq_request_t *r, const kiq_create_topics_request_t *req,
                          kiq_create_topics_response_t *out, int32_t n)
{
    bool forwarded = r->listener == KIQ_LISTENER_CONTROL;
    int wait_ms = req->timeout_ms > 0 && req->timeout_ms < CLUSTER_WAIT_MAX_MS ? req->timeout_ms : CLUSTER_WAIT_MAX_MS;
    kiq_api_topic_orders_t *t = kiq_api_topic_orders_new(b, r, out, n, wait_ms);
    /* the forwarded request's control-plane thread is the one that
     * applies UpdateMetadata here: it must not wait for it */
    t->wait = !forwarded && !req->validate_only;
    t->shown = kiq_api_topic_led_here;
    t->fill = fill;
    kiq_topic_configs_t *cfgs = t->ctx = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *cfgs);
    for (int32_t i = 0; i < n; i++) {
        const kiq_create_topics_request_topics_t *rt = &req->topics[i];
        kiq_create_topics_response_topics_t *tr = &out->topics[i];
        kiq_create_topics_response_topics_init(tr);
        tr->name = rt->name;
        kiq_error_clear();
        if (forwarded && !kiq_broker_active_controller(b)) {
            kiq_error_set("broker %d is not the controller", b->node_id);
            tr->error_code = KIQ_ERR_NOT_CONTROLLER;
        } else {
            tr->error_code = may_create(b, r, rt->name) ? cluster_check(req, i, &cfgs[i])
                                                         : KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
        if (!tr->error_code && !forwarded && !req->validate_only) {
            int32_t parts = rt->num_partitions != -1 ? rt->num_partitions
                            : rt->assignments_n > 0  ? rt->assignments_n
                                                     : (int32_t)kiq_config_int(b->config, KIQ_CFG_NUM_PARTITIONS);
            /* v6+ may answer THROTTLING_QUOTA_EXCEEDED (KIP-599) */
            tr->error_code = kiq_api_mutation_quota(b, r, parts, r->header.api_version >= 6);
            if (tr->error_code) kiq_error_set("The throttling quota has been exceeded.");
        }
        if (tr->error_code) {
            tr->error_message = kiq_request_error_message(r);
            continue;
        }
        *kiq_api_topic_orders_add(t, i) =
            (kiq_topic_order_t){.name = rt->name, .partitions = rt->num_partitions,
                                .replication_factor = rt->replication_factor, .configs = &cfgs[i]};
    }
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_create_topics(b, t->orders, t->norders, req->validate_only, wait_ms, &r->arena,
                                      kiq_api_topic_orders_decided, t);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_create_topics_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                 void *response)
{
    const kiq_create_topics_request_t *req = request;
    kiq_create_topics_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    out->topics_n = n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->topics);
    if (b->cluster) return cluster_create(b, r, req, out, n);
    for (int32_t i = 0; i < n; i++) {
        const kiq_create_topics_request_topics_t *t = &req->topics[i];
        kiq_create_topics_response_topics_t *tr = &out->topics[i];
        kiq_create_topics_response_topics_init(tr);
        tr->name = t->name;
        int32_t partitions;
        int16_t rf;
        kiq_topic_configs_t cfg = {0};
        kiq_error_clear();
        int16_t err = may_create(b, r, t->name) ? check_topic(b, t, &partitions, &rf, &cfg)
                                                : KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        if (!err && duplicate(req, i)) {
            kiq_error_set("Create topics request from client contains a duplicate topic");
            err = KIQ_ERR_INVALID_REQUEST;
        }
        if (!err && !req->validate_only) {
            err = kiq_api_mutation_quota(b, r, partitions, r->header.api_version >= 6);
            if (err) kiq_error_set("The throttling quota has been exceeded.");
        }
        if (!err)
            err = (int16_t)kiq_topics_create_with_configs(b->topics, t->name, partitions, rf, &cfg,
                                                          req->validate_only);
        tr->error_code = err;
        if (err) {
            tr->error_message = kiq_request_error_message(r);
            kiq_topic_configs_clear(&cfg);
            continue;
        }
        tr->num_partitions = partitions;
        tr->replication_factor = rf;
        if (r->header.api_version >= 5) list_configs(b, r, &cfg, tr);
        kiq_topic_configs_clear(&cfg);
        kiq_topic_t *topic = req->validate_only ? NULL : kiq_topics_get(b->topics, t->name);
        if (topic) kiq_log_retention_apply_topic(topic, b->config);
        if (topic) {
            tr->topic_id = topic->id;
            kiq_topic_unref(topic);
        } else if (req->validate_only) {
            /* Kafka's controller names the id the topic would have had */
            kiq_uuid_random(&tr->topic_id);
        }
    }
    return KIQ_HANDLER_RESPOND;
}
