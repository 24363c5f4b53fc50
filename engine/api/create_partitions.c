/* CreatePartitions: grows topics, never shrinks them. Standalone, this
 * broker is the controller: it checks the request with the controller's
 * rules (its only broker is itself) and adds the partitions' logs. In
 * cluster mode the controller decides (server/controller_link.h) and
 * writes a PartitionRecord per new partition; the new replicas come to
 * their brokers with LeaderAndIsr, and a client's request is answered once
 * this broker's metadata has the new count (bounded by its timeout, 10 s
 * at most), so its next Metadata sees the partitions; parked meanwhile
 * (api/topic_orders.h). */
#include <string.h>

#include "api/quota_throttle.h"
#include "api/topic_orders.h"
#include "api/authorize.h"
#include "controller/controller.h"
#include "core/clock.h"
#include "core/error.h"
#include "server/controller_link.h"
#include "log/log_retention.h"
#include "controller/metadata_cache.h"

/* The longest a client's CreatePartitions waits for the new partitions to
 * reach this broker's metadata. */
#define CLUSTER_WAIT_MAX_MS 10000

static bool duplicate(const kiq_create_partitions_request_t *req, int32_t i)
{
    kiq_str_t n = req->topics[i].name;
    for (int32_t j = 0; j < req->topics_n; j++) {
        kiq_str_t m = req->topics[j].name;
        if (j != i && n.p && m.p && m.len == n.len && memcmp(m.p, n.p, (size_t)n.len) == 0) return true;
    }
    return false;
}

/* A standalone broker knows one broker, itself, always live. */
static int self_state(void *ctx, int32_t id) { return id == *(const int32_t *)ctx ? 1 : -1; }

static int16_t grow_standalone(kiq_broker_t *b, kiq_request_t *r, const kiq_create_partitions_request_topics_t *t,
                               bool validate_only)
{
    kiq_topic_t *topic = kiq_topics_get(b->topics, t->name);
    if (!topic) {
        kiq_error_set("The topic '" KIQ_STR_FMT "' does not exist.", KIQ_STR_ARG(t->name));
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    int16_t err = (int16_t)kiq_controller_check_growth(topic->name, topic->npartitions, topic->replication_factor,
                                                       t->count, t->assignments, t->assignments_n, self_state,
                                                       &b->node_id, NULL);
    if (!err && !validate_only) {
        /* the new partitions count against the client's mutation quota; v3+ may refuse (KIP-599) */
        err = kiq_api_mutation_quota(b, r, t->count - atomic_load(&topic->npartitions), r->header.api_version >= 3);
        if (err) kiq_error_set("The throttling quota has been exceeded.");
    }
    if (!err && !validate_only) {
        err = (int16_t)kiq_topics_add_partitions(b->topics, topic, t->count, true);
        kiq_log_retention_apply_topic(topic, b->config);
    }
    kiq_topic_unref(topic);
    return err;
}

static bool grown_here(kiq_metadata_cache_t *mc, const kiq_topic_order_t *o)
{
    return kiq_metadata_cache_partition_count(mc, o->name.p, (size_t)o->name.len) >= o->partitions;
}

static void fill(kiq_api_topic_orders_t *t)
{
    kiq_create_partitions_response_t *out = t->resp;
    for (int32_t i = 0; i < t->n; i++) {
        const kiq_topic_order_t *o = kiq_api_topic_orders_of(t, i);
        if (!o) continue;
        out->results[i].error_code = o->error;
        out->results[i].error_message = o->message;
    }
}

/* Asks the controller; then the answer waits for this broker's metadata
 * to show the new counts (not when forwarded: the control-plane thread
 * that runs this is the one that applies the metadata here). */
static int grow_cluster(kiq_broker_t *b, kiq_request_t *r, const kiq_create_partitions_request_t *req,
                        kiq_create_partitions_response_t *out)
{
    int32_t n = out->results_n;
    bool forwarded = r->listener == KIQ_LISTENER_CONTROL;
    int wait_ms = req->timeout_ms > 0 && req->timeout_ms < CLUSTER_WAIT_MAX_MS ? req->timeout_ms : CLUSTER_WAIT_MAX_MS;
    kiq_api_topic_orders_t *t = kiq_api_topic_orders_new(b, r, out, n, wait_ms);
    t->wait = !forwarded && !req->validate_only;
    t->shown = grown_here;
    t->fill = fill;
    for (int32_t i = 0; i < n; i++) {
        const kiq_create_partitions_request_topics_t *rt = &req->topics[i];
        kiq_create_partitions_response_results_t *res = &out->results[i];
        if (res->error_code) continue;
        if (forwarded && !kiq_broker_active_controller(b)) {
            kiq_error_set("broker %d is not the controller", b->node_id);
            res->error_code = KIQ_ERR_NOT_CONTROLLER;
            res->error_message = kiq_request_error_message(r);
            continue;
        }
        if (!forwarded && !req->validate_only) {
            /* the new partitions count against the client's mutation quota; v3+ may refuse (KIP-599) */
            int32_t now = kiq_metadata_cache_partition_count(b->metadata, rt->name.p, (size_t)rt->name.len);
            res->error_code = kiq_api_mutation_quota(b, r, now >= 0 ? rt->count - now : 0, r->header.api_version >= 3);
            if (res->error_code) {
                res->error_message = kiq_request_str(r, "The throttling quota has been exceeded.");
                continue;
            }
        }
        *kiq_api_topic_orders_add(t, i) = (kiq_topic_order_t){
            .name = rt->name, .partitions = rt->count, .assignments = rt->assignments,
            .nassignments = rt->assignments_n};
    }
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_create_partitions(b, t->orders, t->norders, req->validate_only, wait_ms, &r->arena,
                                          kiq_api_topic_orders_decided, t);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_create_partitions_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_create_partitions_request_t *req = request;
    kiq_create_partitions_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    out->results_n = n;
    out->results = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->results);
    for (int32_t i = 0; i < n; i++) {
        kiq_create_partitions_response_results_t *res = &out->results[i];
        kiq_create_partitions_response_results_init(res);
        res->name = req->topics[i].name;
        if (duplicate(req, i)) {
            kiq_error_set("Duplicate topic in request.");
            res->error_code = KIQ_ERR_INVALID_REQUEST;
            res->error_message = kiq_request_error_message(r);
        } else if (!kiq_api_allowed(b, r, KIQ_OP_ALTER, KIQ_RES_TOPIC, res->name)) {
            /* as Kafka: ALTER on the topic */
            res->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
    if (b->cluster) return grow_cluster(b, r, req, out);
    for (int32_t i = 0; i < n; i++) {
        kiq_create_partitions_response_results_t *res = &out->results[i];
        if (res->error_code) continue;
        kiq_error_clear();
        res->error_code = grow_standalone(b, r, &req->topics[i], req->validate_only);
        if (res->error_code) res->error_message = kiq_request_error_message(r);
    }
    return KIQ_HANDLER_RESPOND;
}
