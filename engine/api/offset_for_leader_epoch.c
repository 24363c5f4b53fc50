/* OffsetForLeaderEpoch: where a leader epoch ended in the leader's log
 * (the next epoch's start, or the log end for the latest), so a consumer
 * can tell its position was truncated away after a leader change
 * (librdkafka asks after every leader change). Only the leader answers,
 * checking current_leader_epoch as Fetch does. The answer follows Kafka's
 * endOffsetFor (log/leader_epoch_cache.h): an unknown or future epoch is
 * (-1, -1). */
#include "api/api.h"
#include "api/authorize.h"
#include "replica/leader.h"

int kiq_api_offset_for_leader_epoch_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_offset_for_leader_epoch_request_t *req = request;
    kiq_offset_for_leader_epoch_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    bool cluster_action = req->replica_id < 0 || kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION);
    out->topics_n = n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->topics);
    for (int32_t i = 0; i < n; i++) {
        const kiq_offset_for_leader_epoch_request_topics_t *t = &req->topics[i];
        kiq_offset_for_leader_epoch_response_topics_t *tr = &out->topics[i];
        kiq_offset_for_leader_epoch_response_topics_init(tr);
        tr->topic = t->topic;
        int32_t np = t->partitions_n > 0 ? t->partitions_n : 0;
        tr->partitions_n = np;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)(np ? np : 1), sizeof *tr->partitions);
        kiq_topic_t *topic = kiq_topics_get(b->topics, t->topic);
        /* as Kafka: a follower's ClusterAction, a client's DESCRIBE on the topic */
        bool allowed = req->replica_id >= 0 ? cluster_action
                                            : kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, t->topic);
        for (int32_t j = 0; j < np; j++) {
            const kiq_offset_for_leader_epoch_request_topics_partitions_t *p = &t->partitions[j];
            kiq_offset_for_leader_epoch_response_topics_partitions_t *pr = &tr->partitions[j];
            kiq_offset_for_leader_epoch_response_topics_partitions_init(pr);
            pr->partition = p->partition;
            if (!allowed) {
                pr->error_code = req->replica_id >= 0 ? KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED
                                                      : KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            kiq_partition_t *part;
            kiq_partition_log_t *log;
            pr->error_code = kiq_replica_led_partition(topic, p->partition, p->current_leader_epoch, &part, &log);
            if (pr->error_code) continue;
            kiq_partition_log_end_offset_for_epoch(log, p->leader_epoch, &pr->leader_epoch, &pr->end_offset);
        }
        kiq_topic_unref(topic);
    }
    return KIQ_HANDLER_RESPOND;
}
