/* ShareAcknowledge (KIP-932): a share group member's acknowledgements of
 * records it was delivered, without fetching: accept, release (to be
 * delivered again, or archived at the delivery limit) or reject, per
 * offset range, each range checked whole (INVALID_RECORD_STATE when some
 * record there is not acquired by the member). Epoch -1 closes the share
 * session after them: what the member still holds is released. */
#include <string.h>

#include "api/share_partitions.h"
#include "core/clock.h"

int kiq_api_share_acknowledge_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_share_acknowledge_request_t *req = request;
    kiq_share_acknowledge_response_t *resp = response;
    /* as Kafka: READ on the group (surface.lua), then on each topic, a
     * refused one's partitions answered TOPIC_AUTHORIZATION_FAILED */
    bool *denied = kiq_arena_calloc(&r->arena, (size_t)(req->topics_n > 0 ? req->topics_n : 0) + 1, sizeof *denied);
    for (int32_t i = 0; i < req->topics_n; i++) denied[i] = !kiq_api_share_topic_allowed(b, r, &req->topics[i].topic_id);
    kiq_share_lock(b->shares);
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(b, req->group_id, &cfg);
    kiq_share_session_t *s;
    int16_t err = kiq_api_share_session(b, req->group_id, req->member_id, req->share_session_epoch, false, &s);
    if (err) {
        kiq_share_unlock(b->shares);
        resp->error_code = err;
        return KIQ_HANDLER_RESPOND;
    }
    uint64_t owner = s->owner;
    kiq_api_leader_nodes_t leaders = {0}; /* named in current_leader hints (KIP-951) */
    resp->acquisition_lock_timeout_ms = cfg.lock_ms;
    int64_t now_ms = kiq_clock_mono_ns() / 1000000;
    resp->responses_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->responses = kiq_arena_calloc(&r->arena, (size_t)(resp->responses_n ? resp->responses_n : 1),
                                       sizeof *resp->responses);
    for (int32_t i = 0; i < resp->responses_n; i++) {
        const kiq_share_acknowledge_request_topics_t *t = &req->topics[i];
        kiq_share_acknowledge_response_responses_t *tr = &resp->responses[i];
        kiq_share_acknowledge_response_responses_init(tr);
        tr->topic_id = t->topic_id;
        tr->partitions_n = t->partitions_n > 0 ? t->partitions_n : 0;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)(tr->partitions_n ? tr->partitions_n : 1),
                                          sizeof *tr->partitions);
        for (int32_t j = 0; j < tr->partitions_n; j++) {
            const kiq_share_acknowledge_request_topics_partitions_t *p = &t->partitions[j];
            kiq_share_acknowledge_response_responses_partitions_t *pr = &tr->partitions[j];
            kiq_share_acknowledge_response_responses_partitions_init(pr);
            pr->partition_index = p->partition_index;
            if (denied[i]) {
                pr->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            /* 0 and 0 but where led elsewhere, as Kafka's defaults */
            kiq_topic_t *topic;
            if ((pr->error_code = kiq_api_share_log(b, &t->topic_id, p->partition_index, &topic)) != 0) {
                if (pr->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER)
                    kiq_api_share_leader(b, r, &t->topic_id, p->partition_index, &pr->current_leader.leader_id,
                                         &pr->current_leader.leader_epoch, &leaders);
                continue;
            }
            kiq_share_partition_t *sp = kiq_api_share_partition(b, &cfg, req->group_id, topic, p->partition_index,
                                                                now_ms);
            for (int32_t k = 0; k < p->acknowledgement_batches_n && !pr->error_code; k++) {
                const kiq_share_acknowledge_request_topics_partitions_acknowledgement_batches_t *ab =
                    &p->acknowledgement_batches[k];
                pr->error_code = sp ? kiq_api_share_ack_batch(sp, ab->first_offset, ab->last_offset,
                                                              ab->acknowledge_types, ab->acknowledge_types_n, owner,
                                                              now_ms + cfg.lock_ms)
                                    : KIQ_ERR_UNKNOWN_SERVER_ERROR;
                kiq_api_share_acknowledged(b, r, req->group_id, topic, p->partition_index, ab->first_offset,
                                           ab->last_offset, ab->acknowledge_types, ab->acknowledge_types_n,
                                           pr->error_code, sp);
            }
            if (sp) kiq_api_share_store(b, req->group_id, &t->topic_id, p->partition_index, sp);
            kiq_topic_unref(topic);
        }
    }
    if (req->share_session_epoch == -1)
        kiq_share_session_close(b->shares, req->group_id.p, req->group_id.len, req->member_id.p, req->member_id.len);
    kiq_share_unlock(b->shares);
    resp->node_endpoints_n = leaders.n;
    resp->node_endpoints = kiq_arena_calloc(&r->arena, (size_t)(leaders.n ? leaders.n : 1), sizeof *resp->node_endpoints);
    for (int i = 0; i < leaders.n; i++) {
        kiq_share_acknowledge_response_node_endpoints_init(&resp->node_endpoints[i]);
        resp->node_endpoints[i].node_id = leaders.nodes[i].id;
        resp->node_endpoints[i].host = KIQ_STR(leaders.nodes[i].host);
        resp->node_endpoints[i].port = leaders.nodes[i].port;
    }
    return KIQ_HANDLER_RESPOND;
}
