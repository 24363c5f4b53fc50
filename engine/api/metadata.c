/* Metadata: the brokers, the cluster id, the controller, and topics with
 * their partitions (api/topic_view.c: the metadata cache in cluster mode,
 * this broker's own topics standalone). Unknown topics are created when
 * auto.create.topics.enable and the request allow: standalone here and at
 * once; in cluster mode through the controller (the request parked until
 * it answers and this broker knows the new leaders, then described as
 * created; LEADER_NOT_AVAILABLE if they are not known in time: clients
 * retry, as they do with Kafka).
 * With an authorizer, as Kafka: topics the principal may not DESCRIBE are
 * left out of an all-topics answer and TOPIC_AUTHORIZATION_FAILED when
 * named; an unknown one it may not CREATE (cluster or topic) likewise; the
 * authorized operations asked for are computed (all of them without one). */
#include "api/authorize.h"
#include "api/topic_orders.h"
#include "core/error.h"
#include "group/offsets_topic.h"
#include "log/log_names.h"
#include "server/controller_link.h"
#include "controller/metadata_cache.h"

/* How long an auto-creating Metadata waits for the controller to answer. */
#define AUTO_CREATE_TIMEOUT_MS 5000

static void describe(kiq_broker_t *b, const kiq_metadata_request_t *req, kiq_request_t *r,
                     const kiq_cached_topic_t *topic, kiq_metadata_response_topics_t *t)
{
    t->name = (kiq_str_t){topic->name, (int32_t)topic->len};
    t->topic_id = topic->id;
    t->is_internal = strcmp(topic->name, KIQ_OFFSETS_TOPIC) == 0;
    if (req->include_topic_authorized_operations)
        t->topic_authorized_operations = kiq_api_operations(b, r, KIQ_RES_TOPIC, t->name);
    t->partitions_n = topic->npartitions;
    t->partitions = kiq_arena_calloc(&r->arena, (size_t)(topic->npartitions ? topic->npartitions : 1),
                                     sizeof *t->partitions);
    for (int32_t i = 0; i < topic->npartitions; i++) {
        const kiq_cached_partition_t *c = &topic->partitions[i];
        kiq_metadata_response_topics_partitions_t *p = &t->partitions[i];
        kiq_metadata_response_topics_partitions_init(p);
        KIQ_API_FILL_PARTITION(p, r, c, i);
    }
}

/* Live brokers from the cache in cluster mode (before the first update only
 * this one, so a client always has somewhere to go); standalone, itself. */
static void brokers(kiq_broker_t *b, kiq_request_t *r, kiq_metadata_response_t *out)
{
    kiq_cached_broker_t *list = NULL;
    int n = kiq_api_live_brokers(b, r, &list);
    out->brokers_n = n;
    out->brokers = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->brokers);
    for (int i = 0; i < n; i++) {
        kiq_metadata_response_brokers_t *o = &out->brokers[i];
        kiq_metadata_response_brokers_init(o);
        o->node_id = list[i].id;
        o->host = (kiq_str_t){list[i].host, (int32_t)strlen(list[i].host)};
        o->port = list[i].port;
        o->rack = list[i].rack ? (kiq_str_t){list[i].rack, (int32_t)strlen(list[i].rack)} : KIQ_STR_NULL;
    }
    int32_t controller = kiq_broker_controller_id(b);
    out->controller_id = controller >= 0 ? controller : b->controller_id;
    /* A controller-only node is no broker a client can reach: as Kafka's
     * brokers do, name one that is (this one, which forwards). */
    int i = 0;
    while (i < n && list[i].id != out->controller_id) i++;
    if (b->cluster && i == n && b->roles.broker) out->controller_id = b->node_id;
}

/* Standalone: creates the unknown topics the request may create; they are
 * then described like the others (or say why not). */
static void standalone_auto_create(kiq_broker_t *b, kiq_request_t *r, const kiq_metadata_request_t *req,
                                   kiq_metadata_response_t *out)
{
    for (int32_t i = 0; i < out->topics_n; i++) {
        kiq_metadata_response_topics_t *t = &out->topics[i];
        /* __consumer_offsets comes only from FindCoordinator, as in Kafka */
        if (t->error_code != KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION || kiq_str_eq(t->name, KIQ_OFFSETS_TOPIC)) continue;
        int rc = kiq_topics_create(b->topics, t->name,
                                   (int32_t)kiq_config_int(b->config, KIQ_CFG_NUM_PARTITIONS),
                                   (int16_t)kiq_config_int(b->config, KIQ_CFG_DEFAULT_REPLICATION_FACTOR), false);
        kiq_cached_topic_t topic;
        if ((rc == KIQ_ERR_NONE || rc == KIQ_ERR_TOPIC_ALREADY_EXISTS) &&
            kiq_api_topic_view(b, r, t->name, NULL, &topic)) {
            t->error_code = KIQ_ERR_NONE;
            describe(b, req, r, &topic, t);
        } else {
            t->error_code = KIQ_ERR_LEADER_NOT_AVAILABLE;
        }
    }
}

/* The controller's answers: a topic created, and led here by now, is
 * described; one still on its way says LEADER_NOT_AVAILABLE (clients
 * retry); otherwise why not. */
static void auto_created(kiq_api_topic_orders_t *t)
{
    kiq_metadata_response_t *out = t->resp;
    for (int32_t i = 0; i < t->n; i++) {
        const kiq_topic_order_t *o = kiq_api_topic_orders_of(t, i);
        if (!o) continue;
        bool coming = o->error == KIQ_ERR_NONE || o->error == KIQ_ERR_TOPIC_ALREADY_EXISTS ||
                      o->error == KIQ_ERR_REQUEST_TIMED_OUT;
        kiq_cached_topic_t topic;
        if (coming && kiq_api_topic_led_here(t->b->metadata, o) && kiq_api_topic_view(t->b, t->r, o->name, NULL, &topic)) {
            out->topics[i].error_code = KIQ_ERR_NONE;
            describe(t->b, t->r->body, t->r, &topic, &out->topics[i]);
        } else {
            out->topics[i].error_code = coming ? KIQ_ERR_LEADER_NOT_AVAILABLE : o->error;
        }
    }
}

/* Cluster mode: asks the controller for the unknown topics the request may
 * create, the request parked until it answers and this broker's metadata
 * shows their leaders (bounded), so the client's first Metadata already
 * names them: a test's first produce to a new topic goes out at once. */
static int cluster_auto_create(kiq_broker_t *b, kiq_request_t *r, kiq_metadata_response_t *out)
{
    kiq_api_topic_orders_t *t = kiq_api_topic_orders_new(b, r, out, out->topics_n, AUTO_CREATE_TIMEOUT_MS);
    t->fill = auto_created;
    t->wait = true;
    t->shown = kiq_api_topic_led_here;
    for (int32_t i = 0; i < out->topics_n; i++) {
        kiq_metadata_response_topics_t *mt = &out->topics[i];
        /* __consumer_offsets comes only from FindCoordinator, as in Kafka */
        if (mt->error_code != KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION || kiq_str_eq(mt->name, KIQ_OFFSETS_TOPIC)) continue;
        *kiq_api_topic_orders_add(t, i) = (kiq_topic_order_t){.name = mt->name, .partitions = -1,
                                                              .replication_factor = -1};
    }
    if (t->norders == 0) return KIQ_HANDLER_RESPOND;
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_create_topics(b, t->orders, t->norders, false, AUTO_CREATE_TIMEOUT_MS, &r->arena,
                                      kiq_api_topic_orders_decided, t);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_metadata_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_metadata_request_t *req = request;
    kiq_metadata_response_t *out = response;
    int16_t v = r->header.api_version;
    brokers(b, r, out);
    out->cluster_id = kiq_request_str(r, b->cluster_id);
    if (req->include_cluster_authorized_operations)
        out->cluster_authorized_operations = kiq_api_operations(b, r, KIQ_RES_CLUSTER, KIQ_STR(KIQ_ACL_CLUSTER_NAME));
    bool all = v == 0 ? req->topics_n == 0 : req->topics_n < 0;
    if (all) {
        kiq_cached_topic_t *list;
        int n = kiq_api_topic_views(b, r, &list);
        out->topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->topics);
        out->topics_n = 0;
        for (int i = 0; i < n; i++) {
            /* topics the principal may not describe are left out silently, as Kafka does */
            if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, (kiq_str_t){list[i].name, (int32_t)list[i].len}))
                continue;
            kiq_metadata_response_topics_init(&out->topics[out->topics_n]);
            describe(b, req, r, &list[i], &out->topics[out->topics_n++]);
        }
        return KIQ_HANDLER_RESPOND;
    }
    out->topics_n = req->topics_n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(req->topics_n ? req->topics_n : 1), sizeof *out->topics);
    bool unknown = false;
    bool auto_create = req->allow_auto_topic_creation && kiq_config_bool(b->config, KIQ_CFG_AUTO_CREATE_TOPICS_ENABLE);
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_metadata_request_topics_t *want = &req->topics[i];
        kiq_metadata_response_topics_t *t = &out->topics[i];
        kiq_metadata_response_topics_init(t);
        t->name = want->name;
        t->topic_id = want->topic_id;
        kiq_cached_topic_t topic;
        bool known = kiq_api_topic_view(b, r, want->name, &want->topic_id, &topic);
        kiq_str_t name = known ? (kiq_str_t){topic.name, (int32_t)topic.len} : want->name;
        if ((known || name.p) && !kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, name)) {
            t->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            kiq_uuid_t zero = {{0}};
            t->topic_id = zero;
            continue;
        }
        if (known) {
            describe(b, req, r, &topic, t);
            continue;
        }
        const char *why;
        if (!want->name.p)
            t->error_code = KIQ_ERR_UNKNOWN_TOPIC_ID;
        else if (!kiq_topic_name_valid(want->name, &why))
            t->error_code = KIQ_ERR_INVALID_TOPIC_EXCEPTION;
        else if (auto_create && !kiq_api_cluster_allowed(b, r, KIQ_OP_CREATE) &&
                 !kiq_api_allowed(b, r, KIQ_OP_CREATE, KIQ_RES_TOPIC, name))
            t->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED; /* may not create it */
        else
            t->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        unknown = unknown || t->error_code == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (unknown && auto_create) {
        if (b->cluster) return cluster_auto_create(b, r, out);
        standalone_auto_create(b, r, req, out);
    }
    return KIQ_HANDLER_RESPOND;
}
