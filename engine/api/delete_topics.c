/* DeleteTopics: by name (v0-5) or by name or id (v6). In cluster mode the
 * controller deletes (server/controller_link.h), and a client's request is
 * answered once this broker's metadata no longer has the topic (bounded
 * by its timeout, 10 s at most), parked meanwhile (api/topic_orders.h). */
#include "api/quota_throttle.h"
#include "api/topic_orders.h"
#include "api/authorize.h"
#include "core/clock.h"
#include "core/error.h"
#include "server/controller_link.h"
#include "controller/metadata_cache.h"

#define CLUSTER_WAIT_MAX_MS 10000

static void delete_one(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name, const kiq_uuid_t *id,
                       kiq_delete_topics_response_responses_t *out)
{
    kiq_delete_topics_response_responses_init(out);
    out->name = name;
    if (id) out->topic_id = *id;
    if (!kiq_config_bool(b->config, KIQ_CFG_DELETE_TOPIC_ENABLE)) {
        out->error_code = KIQ_ERR_TOPIC_DELETION_DISABLED;
        return;
    }
    kiq_topic_t *topic = name.p ? kiq_topics_get(b->topics, name)
                                : kiq_topics_get_by_id(b->topics, id);
    /* as Kafka: DELETE on the topic, known or not when named */
    if ((topic || name.p) && !kiq_api_allowed(b, r, KIQ_OP_DELETE, KIQ_RES_TOPIC, topic ? KIQ_STR(topic->name) : name)) {
        kiq_topic_unref(topic);
        out->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        return;
    }
    if (!topic) {
        out->error_code = name.p ? KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION : KIQ_ERR_UNKNOWN_TOPIC_ID;
        return;
    }
    out->name = kiq_request_str(r, topic->name);
    out->topic_id = topic->id;
    /* the topic's partitions count against the client's mutation quota; v5+ may refuse (KIP-599) */
    out->error_code = kiq_api_mutation_quota(b, r, atomic_load(&topic->npartitions), r->header.api_version >= 5);
    if (out->error_code) {
        out->error_message = kiq_request_str(r, "The throttling quota has been exceeded.");
        kiq_topic_unref(topic);
        return;
    }
    out->error_code = (int16_t)kiq_topics_delete(b->topics, topic);
    kiq_topic_unref(topic);
}

/* Settles what can be answered here; false when the controller must be
 * asked. */
static bool cluster_check(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name, const kiq_uuid_t *id,
                          kiq_delete_topics_response_responses_t *out)
{
    kiq_delete_topics_response_responses_init(out);
    out->name = name;
    if (id) out->topic_id = *id;
    if (r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)) {
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
        return true;
    }
    if (!kiq_config_bool(b->config, KIQ_CFG_DELETE_TOPIC_ENABLE)) {
        out->error_code = KIQ_ERR_TOPIC_DELETION_DISABLED;
        return true;
    }
    kiq_cached_topic_t t;
    bool known = name.p ? kiq_metadata_cache_topic(b->metadata, name.p, (size_t)name.len, &r->arena, &t)
                        : kiq_metadata_cache_topic_by_id(b->metadata, id, &r->arena, &t);
    if (known) {
        out->name = (kiq_str_t){t.name, (int32_t)t.len};
        out->topic_id = t.id;
    }
    if ((known || name.p) && !kiq_api_allowed(b, r, KIQ_OP_DELETE, KIQ_RES_TOPIC, out->name)) {
        out->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        return true;
    }
    if (!known && !name.p) {
        out->error_code = KIQ_ERR_UNKNOWN_TOPIC_ID;
        return true;
    }
    /* an unknown name still goes to the controller, whose view is newer */
    return false;
}

static bool gone_here(kiq_metadata_cache_t *mc, const kiq_topic_order_t *o)
{
    return kiq_metadata_cache_partition_count(mc, o->name.p, (size_t)o->name.len) < 0;
}

static void fill(kiq_api_topic_orders_t *t)
{
    kiq_delete_topics_response_t *out = t->resp;
    for (int32_t i = 0; i < t->n; i++) {
        const kiq_topic_order_t *o = kiq_api_topic_orders_of(t, i);
        if (!o) continue;
        out->responses[i].error_code = o->error;
        if (t->r->header.api_version >= 5) out->responses[i].error_message = o->message;
    }
}

static int cluster_delete(kiq_broker_t *b, kiq_request_t *r, const kiq_delete_topics_request_t *req,
                          kiq_delete_topics_response_t *out, int32_t n, bool by_struct)
{
    int wait_ms = req->timeout_ms > 0 && req->timeout_ms < CLUSTER_WAIT_MAX_MS ? req->timeout_ms : CLUSTER_WAIT_MAX_MS;
    kiq_api_topic_orders_t *t = kiq_api_topic_orders_new(b, r, out, n, wait_ms);
    /* a forwarded request runs on the thread that applies the
     * controller's updates here: it must not wait for them */
    t->wait = r->listener != KIQ_LISTENER_CONTROL;
    t->shown = gone_here;
    t->fill = fill;
    for (int32_t i = 0; i < n; i++) {
        kiq_delete_topics_response_responses_t *o = &out->responses[i];
        bool settled = by_struct ? cluster_check(b, r, req->topics[i].name, &req->topics[i].topic_id, o)
                                 : cluster_check(b, r, req->topic_names[i], NULL, o);
        if (!settled && r->listener == KIQ_LISTENER_DATA) {
            /* the topic's partitions count against the client's mutation quota; v5+ may refuse (KIP-599) */
            int32_t parts = kiq_metadata_cache_partition_count(b->metadata, o->name.p, (size_t)o->name.len);
            o->error_code = kiq_api_mutation_quota(b, r, parts, r->header.api_version >= 5);
            if (o->error_code) {
                o->error_message = kiq_request_str(r, "The throttling quota has been exceeded.");
                settled = true;
            }
        }
        if (!settled)
            *kiq_api_topic_orders_add(t, i) =
                (kiq_topic_order_t){.name = o->name, .partitions = -1, .replication_factor = -1};
    }
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_delete_topics(b, t->orders, t->norders, wait_ms, &r->arena, kiq_api_topic_orders_decided, t);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_delete_topics_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                 void *response)
{
    const kiq_delete_topics_request_t *req = request;
    kiq_delete_topics_response_t *out = response;
    bool by_struct = r->header.api_version >= 6;
    int32_t n = by_struct ? req->topics_n : req->topic_names_n;
    if (n < 0) n = 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->responses);
    if (b->cluster) return cluster_delete(b, r, req, out, n, by_struct);
    for (int32_t i = 0; i < n; i++) {
        if (by_struct)
            delete_one(b, r, req->topics[i].name, &req->topics[i].topic_id, &out->responses[i]);
        else
            delete_one(b, r, req->topic_names[i], NULL, &out->responses[i]);
    }
    /* Fetches parked on a deleted topic answer UNKNOWN_TOPIC_OR_PARTITION
     * now instead of at the end of their max_wait. */
    if (n > 0) kiq_purgatory_notify_all(b->purgatory);
    return KIQ_HANDLER_RESPOND;
}
