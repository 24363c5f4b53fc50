/* AlterPartitionReassignments: the controller starts or cancels
 * reassignments (kiq_controller_alter_reassignments); any broker forwards
 * it there. A standalone broker holds every partition's only replica and
 * has no other broker to move one to: each partition is answered on its
 * own, a target of this broker alone as a reassignment already complete
 * (Kafka's tool sends one with a plan that only moves log directories),
 * anything else INVALID_REPLICA_ASSIGNMENT. */
#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"

#define REASSIGN_WAIT_MAX_MS 30000

/* Each partition answered on its own; refused: each with that error (the
 * authorizer's refusal, answered per partition as Kafka's controller does). */
static void answer_alone(kiq_broker_t *b, kiq_request_t *r, const kiq_alter_partition_reassignments_request_t *req,
                         kiq_alter_partition_reassignments_response_t *out, int16_t refused)
{
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        const kiq_alter_partition_reassignments_request_topics_t *t = &req->topics[i];
        kiq_alter_partition_reassignments_response_responses_t *o = &out->responses[i];
        kiq_alter_partition_reassignments_response_responses_init(o);
        o->name = t->name;
        o->partitions_n = t->partitions_n > 0 ? t->partitions_n : 0;
        o->partitions = kiq_arena_calloc(&r->arena, (size_t)(o->partitions_n ? o->partitions_n : 1),
                                         sizeof *o->partitions);
        kiq_topic_t *topic = kiq_topics_get(b->topics, t->name);
        for (int32_t j = 0; j < o->partitions_n; j++) {
            const kiq_alter_partition_reassignments_request_topics_partitions_t *in = &t->partitions[j];
            kiq_alter_partition_reassignments_response_responses_partitions_t *po = &o->partitions[j];
            kiq_alter_partition_reassignments_response_responses_partitions_init(po);
            po->partition_index = in->partition_index;
            if (refused)
                po->error_code = refused;
            else if (!topic || in->partition_index < 0 || in->partition_index >= topic->npartitions)
                po->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            else if (in->replicas_n < 0)
                po->error_code = KIQ_ERR_NO_REASSIGNMENT_IN_PROGRESS;
            else if (in->replicas_n != 1 || in->replicas[0] != b->node_id) {
                po->error_code = KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
                po->error_message = kiq_request_str(r, "a standalone broker has no other broker to reassign "
                                                       "replicas to");
            }
        }
        kiq_topic_unref(topic);
    }
}

int kiq_api_alter_partition_reassignments_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                                 void *response)
{
    const kiq_alter_partition_reassignments_request_t *req = request;
    kiq_alter_partition_reassignments_response_t *out = response;
    kiq_error_clear();
    /* as Kafka: ALTER on the cluster, asked where the client sent it */
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER)) {
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        answer_alone(b, r, req, out, KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED);
        return KIQ_HANDLER_RESPOND;
    }
    if (r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)) {
        kiq_error_set("broker %d is not the active controller", b->node_id);
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
    } else if (b->cluster) {
        int wait =
            req->timeout_ms > 0 && req->timeout_ms < REASSIGN_WAIT_MAX_MS ? req->timeout_ms : REASSIGN_WAIT_MAX_MS;
        return kiq_api_to_controller(b, r, KIQ_API_ALTER_PARTITION_REASSIGNMENTS, req, wait, out);
    } else {
        answer_alone(b, r, req, out, 0);
    }
    out->error_message = kiq_request_error_message(r);
    return KIQ_HANDLER_RESPOND;
}
