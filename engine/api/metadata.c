/* Metadata: this broker, the cluster id, and topics with their partitions.
 * Unknown topics are created here when auto.create.topics.enable allows.
 *
 * In cluster mode the answer comes from the metadata cache (what the
 * controller last pushed): every live broker, the controller, and each
 * partition's leader, replicas, ISR and offline replicas. An unknown topic
 * is created through the controller and answered LEADER_NOT_AVAILABLE for
 * now; clients retry, as they do with Kafka. */
#include "api/api.h"
#include "core/error.h"
#include "group/offsets_topic.h"
#include "server/controller_link.h"
#include "server/metadata_cache.h"

/* How long an auto-creating Metadata waits for the controller to answer. */
#define AUTO_CREATE_TIMEOUT_MS 5000

static void describe_topic(kiq_broker_t *b, kiq_request_t *r, kiq_topic_t *topic,
                           kiq_metadata_response_topics_t *t)
{
    t->name = kiq_api_str(r, topic->name);
    t->topic_id = topic->id;
    t->is_internal = strcmp(topic->name, KIQ_OFFSETS_TOPIC) == 0;
    int32_t n = topic->npartitions; /* once: the topic may grow meanwhile */
    t->partitions_n = n;
    t->partitions = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *t->partitions);
    for (int32_t i = 0; i < n; i++) {
        kiq_metadata_response_topics_partitions_t *p = &t->partitions[i];
        kiq_metadata_response_topics_partitions_init(p);
        p->partition_index = i;
        p->leader_id = b->node_id;
        p->leader_epoch = topic->partitions[i]->leader_epoch;
        p->replica_nodes_n = p->isr_nodes_n = 1;
        p->replica_nodes = p->isr_nodes = kiq_arena_alloc(&r->arena, sizeof(int32_t));
        p->replica_nodes[0] = b->node_id;
        /* As Kafka's controller leaves it when the only replica's log
         * directory fails: no leader, the ISR kept, the replica offline. */
        kiq_partition_log_t *log = topic->partitions[i]->log;
        if (!log || kiq_partition_log_offline(log)) {
            p->error_code = KIQ_ERR_LEADER_NOT_AVAILABLE;
            p->leader_id = -1;
            p->offline_replicas_n = 1;
            p->offline_replicas = p->replica_nodes;
        }
    }
}

static kiq_topic_t *lookup_or_create(kiq_broker_t *b, const kiq_metadata_request_t *req,
                                     kiq_str_t name, int16_t *error)
{
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (topic) return topic;
    const char *why;
    if (!kiq_topic_name_valid(name, &why)) {
        *error = KIQ_ERR_INVALID_TOPIC_EXCEPTION;
        return NULL;
    }
    *error = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (!req->allow_auto_topic_creation || !kiq_config_bool(b->config, KIQ_CFG_AUTO_CREATE_TOPICS_ENABLE))
        return NULL;
    int rc = kiq_topics_create(b->topics, name,
                               (int32_t)kiq_config_int(b->config, KIQ_CFG_NUM_PARTITIONS),
                               (int16_t)kiq_config_int(b->config, KIQ_CFG_DEFAULT_REPLICATION_FACTOR),
                               false);
    if (rc != KIQ_ERR_NONE && rc != KIQ_ERR_TOPIC_ALREADY_EXISTS) {
        *error = KIQ_ERR_LEADER_NOT_AVAILABLE;
        return NULL;
    }
    return kiq_topics_get(b->topics, name);
}

static int32_t *copy_ids(kiq_request_t *r, const int32_t *ids, int n)
{
    int32_t *out = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out);
    memcpy(out, ids, (size_t)n * sizeof *out);
    return out;
}

static void cluster_describe(kiq_request_t *r, const kiq_cached_topic_t *topic, kiq_metadata_response_topics_t *t)
{
    t->name = (kiq_str_t){topic->name, (int32_t)topic->len};
    t->topic_id = topic->id;
    t->is_internal = strcmp(topic->name, KIQ_OFFSETS_TOPIC) == 0;
    t->partitions_n = topic->npartitions;
    t->partitions = kiq_arena_calloc(&r->arena, (size_t)(topic->npartitions ? topic->npartitions : 1),
                                     sizeof *t->partitions);
    for (int32_t i = 0; i < topic->npartitions; i++) {
        const kiq_cached_partition_t *c = &topic->partitions[i];
        kiq_metadata_response_topics_partitions_t *p = &t->partitions[i];
        kiq_metadata_response_topics_partitions_init(p);
        p->partition_index = i;
        p->leader_id = c->leader;
        p->leader_epoch = c->leader_epoch;
        p->replica_nodes_n = c->nreplicas;
        p->replica_nodes = copy_ids(r, c->replicas, c->nreplicas);
        p->isr_nodes_n = c->nisr;
        p->isr_nodes = copy_ids(r, c->isr, c->nisr);
        p->offline_replicas_n = c->noffline;
        p->offline_replicas = copy_ids(r, c->offline, c->noffline);
        if (c->leader < 0) p->error_code = KIQ_ERR_LEADER_NOT_AVAILABLE;
    }
}

/* Live brokers from the cache; before the first update only this one, so
 * a client always has somewhere to go. */
static void cluster_brokers(kiq_broker_t *b, kiq_request_t *r, kiq_metadata_response_t *out)
{
    kiq_cached_broker_t *list;
    int n = kiq_metadata_cache_brokers(b->metadata, NULL, &r->arena, &list);
    if (n == 0) {
        list = kiq_arena_alloc(&r->arena, sizeof *list);
        list[0] = (kiq_cached_broker_t){b->node_id, b->advertised_port, b->advertised_host, NULL};
        n = 1;
    }
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
    int32_t controller = kiq_metadata_cache_controller(b->metadata);
    out->controller_id = controller >= 0 ? controller : b->controller_id;
}

/* Asks the controller for the unknown topics the request may create;
 * their answers then say LEADER_NOT_AVAILABLE (or why not). */
static void cluster_auto_create(kiq_broker_t *b, kiq_request_t *r, kiq_metadata_response_t *out)
{
    kiq_topic_order_t *orders = kiq_arena_calloc(&r->arena, (size_t)(out->topics_n ? out->topics_n : 1),
                                                 sizeof *orders);
    int n = 0;
    for (int32_t i = 0; i < out->topics_n; i++) {
        kiq_metadata_response_topics_t *t = &out->topics[i];
        /* __consumer_offsets comes only from FindCoordinator, as in Kafka */
        if (t->error_code != KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION || kiq_str_eq(t->name, KIQ_OFFSETS_TOPIC)) continue;
        orders[n++] = (kiq_topic_order_t){.name = t->name, .partitions = -1, .replication_factor = -1};
    }
    if (n == 0) return;
    kiq_controller_link_create_topics(b, orders, n, false, AUTO_CREATE_TIMEOUT_MS, &r->arena);
    for (int32_t i = 0, k = 0; i < out->topics_n && k < n; i++) {
        kiq_metadata_response_topics_t *t = &out->topics[i];
        if (t->name.p != orders[k].name.p) continue;
        int16_t err = orders[k++].error;
        /* created, or being created: the leader is on its way */
        bool coming = err == KIQ_ERR_NONE || err == KIQ_ERR_TOPIC_ALREADY_EXISTS || err == KIQ_ERR_REQUEST_TIMED_OUT;
        t->error_code = coming ? KIQ_ERR_LEADER_NOT_AVAILABLE : err;
    }
}

static int cluster_metadata(kiq_broker_t *b, kiq_request_t *r, const kiq_metadata_request_t *req,
                            kiq_metadata_response_t *out)
{
    int16_t v = r->header.api_version;
    cluster_brokers(b, r, out);
    out->cluster_id = kiq_api_str(r, b->cluster_id);
    bool all = v == 0 ? req->topics_n == 0 : req->topics_n < 0;
    if (all) {
        kiq_cached_topic_t *list;
        int n = kiq_metadata_cache_topics(b->metadata, &r->arena, &list);
        out->topics_n = n;
        out->topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->topics);
        for (int i = 0; i < n; i++) {
            kiq_metadata_response_topics_init(&out->topics[i]);
            cluster_describe(r, &list[i], &out->topics[i]);
        }
        return KIQ_HANDLER_RESPOND;
    }
    out->topics_n = req->topics_n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(req->topics_n ? req->topics_n : 1), sizeof *out->topics);
    bool unknown = false;
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_metadata_request_topics_t *want = &req->topics[i];
        kiq_metadata_response_topics_t *t = &out->topics[i];
        kiq_metadata_response_topics_init(t);
        t->name = want->name;
        t->topic_id = want->topic_id;
        kiq_cached_topic_t topic;
        bool found = want->name.p
                         ? kiq_metadata_cache_topic(b->metadata, want->name.p, (size_t)want->name.len, &r->arena, &topic)
                         : kiq_metadata_cache_topic_by_id(b->metadata, &want->topic_id, &r->arena, &topic);
        if (found) {
            cluster_describe(r, &topic, t);
            continue;
        }
        const char *why;
        if (!want->name.p)
            t->error_code = KIQ_ERR_UNKNOWN_TOPIC_ID;
        else if (!kiq_topic_name_valid(want->name, &why))
            t->error_code = KIQ_ERR_INVALID_TOPIC_EXCEPTION;
        else
            t->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        unknown = unknown || t->error_code == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (unknown && req->allow_auto_topic_creation && kiq_config_bool(b->config, KIQ_CFG_AUTO_CREATE_TOPICS_ENABLE))
        cluster_auto_create(b, r, out);
    return KIQ_HANDLER_RESPOND;
}

int kiq_api_metadata_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_metadata_request_t *req = request;
    kiq_metadata_response_t *out = response;
    int16_t v = r->header.api_version;
    if (b->cluster) return cluster_metadata(b, r, req, out);

    out->brokers_n = 1;
    out->brokers = kiq_arena_alloc(&r->arena, sizeof *out->brokers);
    kiq_metadata_response_brokers_init(out->brokers);
    out->brokers[0].node_id = b->node_id;
    out->brokers[0].host = kiq_api_str(r, b->advertised_host);
    out->brokers[0].port = b->advertised_port;
    out->cluster_id = kiq_api_str(r, b->cluster_id);
    out->controller_id = b->node_id;

    bool all = v == 0 ? req->topics_n == 0 : req->topics_n < 0;
    if (all) {
        int n;
        kiq_topic_t **list = kiq_topics_list(b->topics, &n);
        out->topics_n = n;
        out->topics = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->topics);
        for (int i = 0; i < n; i++) {
            kiq_metadata_response_topics_init(&out->topics[i]);
            describe_topic(b, r, list[i], &out->topics[i]);
        }
        kiq_topics_list_free(list, n);
        return KIQ_HANDLER_RESPOND;
    }
    out->topics_n = req->topics_n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)req->topics_n, sizeof *out->topics);
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_metadata_request_topics_t *want = &req->topics[i];
        kiq_metadata_response_topics_t *t = &out->topics[i];
        kiq_metadata_response_topics_init(t);
        t->name = want->name;
        t->topic_id = want->topic_id;
        kiq_topic_t *topic;
        int16_t error = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        if (!want->name.p)
            topic = kiq_topics_get_by_id(b->topics, &want->topic_id);
        else
            topic = lookup_or_create(b, req, want->name, &error);
        if (!topic) {
            t->error_code = want->name.p ? error : KIQ_ERR_UNKNOWN_TOPIC_ID;
            continue;
        }
        describe_topic(b, r, topic, t);
        kiq_topic_unref(topic);
    }
    return KIQ_HANDLER_RESPOND;
}
