/* Metadata: this broker, the cluster id, and topics with their partitions.
 * Unknown topics are created here when auto.create.topics.enable allows. */
#include "api/api.h"
#include "core/error.h"
#include "group/offsets_topic.h"

static void describe_topic(kiq_broker_t *b, kiq_request_t *r, kiq_topic_t *topic,
                           kiq_metadata_response_topics_t *t)
{
    t->name = kiq_api_str(r, topic->name);
    t->topic_id = topic->id;
    t->is_internal = strcmp(topic->name, KIQ_OFFSETS_TOPIC) == 0;
    t->partitions_n = topic->npartitions;
    t->partitions = kiq_arena_calloc(&r->arena, (size_t)topic->npartitions, sizeof *t->partitions);
    for (int32_t i = 0; i < topic->npartitions; i++) {
        kiq_metadata_response_topics_partitions_t *p = &t->partitions[i];
        kiq_metadata_response_topics_partitions_init(p);
        p->partition_index = i;
        p->leader_id = b->node_id;
        p->leader_epoch = topic->partitions[i].leader_epoch;
        p->replica_nodes_n = p->isr_nodes_n = 1;
        p->replica_nodes = p->isr_nodes = kiq_arena_alloc(&r->arena, sizeof(int32_t));
        p->replica_nodes[0] = b->node_id;
        /* As Kafka's controller leaves it when the only replica's log
         * directory fails: no leader, the ISR kept, the replica offline. */
        if (kiq_partition_log_offline(topic->partitions[i].log)) {
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

int kiq_api_metadata_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_metadata_request_t *req = request;
    kiq_metadata_response_t *out = response;
    int16_t v = r->header.api_version;

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
