/* AlterShareGroupOffsets: an empty share group's start offset set on
 * partitions (KIP-932; kafka-share-groups --reset-offsets), a group of none
 * made one as Kafka does: what was in
 * flight there is forgotten, and the state stored. The state is the
 * partition leader's: in a cluster the other leaders are asked
 * (share_fanout.h). */
#include "api/authorize.h"
#include "api/share_fanout.h"
#include "api/share_partitions.h"
#include "group/group_coordinator.h"

/* A leader's answer in place of the coordinator's NOT_LEADER_OR_FOLLOWER:
 * the same request, so the same shape. */
static void merge(void *response, const void *remote, kiq_arena_t *arena)
{
    (void)arena;
    kiq_alter_share_group_offsets_response_t *resp = response;
    const kiq_alter_share_group_offsets_response_t *rem = remote;
    if (!rem) return;
    for (int32_t i = 0; i < resp->responses_n && i < rem->responses_n; i++)
        for (int32_t j = 0; j < resp->responses[i].partitions_n && j < rem->responses[i].partitions_n; j++) {
            kiq_alter_share_group_offsets_response_responses_partitions_t *mine = &resp->responses[i].partitions[j];
            const kiq_alter_share_group_offsets_response_responses_partitions_t *theirs =
                &rem->responses[i].partitions[j];
            if (mine->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER &&
                theirs->error_code != KIQ_ERR_NOT_LEADER_OR_FOLLOWER) {
                mine->error_code = theirs->error_code;
                mine->error_message.p = NULL;
                mine->error_message.len = -1;
            }
        }
}

int kiq_api_alter_share_group_offsets_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_share_group_offsets_request_t *req = request;
    kiq_alter_share_group_offsets_response_t *resp = response;
    /* a coordinator's ask: it checked the group and the topics */
    bool from_broker = kiq_api_share_from_broker(b, r);
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    /* as Kafka: READ on each topic too (the group's in surface.lua), asked
     * outside the share lock; a refused one's partitions are left alone,
     * and with none allowed the group is not asked (nor made) */
    bool *denied = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *denied);
    int32_t ndenied = 0;
    for (int32_t i = 0; i < n; i++)
        ndenied += denied[i] = !from_broker && !kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, req->topics[i].topic_name);
    bool none = n > 0 && ndenied == n;
    if (!from_broker && !none &&
        (resp->error_code = kiq_group_share_check(b->groups, req->group_id, true, true)) != 0)
        return KIQ_HANDLER_RESPOND;
    resp->responses_n = n;
    resp->responses = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *resp->responses);
    kiq_share_lock(b->shares);
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(b, req->group_id, &cfg);
    for (int32_t i = 0; i < resp->responses_n; i++) {
        const kiq_alter_share_group_offsets_request_topics_t *tq = &req->topics[i];
        kiq_alter_share_group_offsets_response_responses_t *tr = &resp->responses[i];
        kiq_alter_share_group_offsets_response_responses_init(tr);
        tr->topic_name = tq->topic_name;
        kiq_topic_t *t = kiq_topics_get(b->topics, tq->topic_name);
        if (t) tr->topic_id = t->id;
        tr->partitions_n = tq->partitions_n > 0 ? tq->partitions_n : 0;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)(tr->partitions_n ? tr->partitions_n : 1),
                                          sizeof *tr->partitions);
        for (int32_t j = 0; j < tr->partitions_n; j++) {
            const kiq_alter_share_group_offsets_request_topics_partitions_t *pq = &tq->partitions[j];
            kiq_alter_share_group_offsets_response_responses_partitions_t *pr = &tr->partitions[j];
            kiq_alter_share_group_offsets_response_responses_partitions_init(pr);
            pr->partition_index = pq->partition_index;
            kiq_topic_t *led = NULL;
            if (denied[i]) {
                pr->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            } else if (!t) {
                pr->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            } else if ((pr->error_code = kiq_api_share_log(b, &t->id, pq->partition_index, &led)) == 0) {
                kiq_share_partition_t *sp = kiq_share_partition_get(b->shares, req->group_id.p, req->group_id.len,
                                                                    &t->id, pq->partition_index, cfg.delivery_limit,
                                                                    cfg.max_locks);
                if (!sp) {
                    pr->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
                } else {
                    kiq_share_partition_reset(sp, pq->start_offset);
                    kiq_api_share_store(b, req->group_id, &t->id, pq->partition_index, sp);
                }
            }
            kiq_topic_unref(led);
        }
        kiq_topic_unref(t);
    }
    kiq_share_unlock(b->shares);
    if (from_broker || none) return KIQ_HANDLER_RESPOND;
    return kiq_api_share_fanout(b, r, request, response, sizeof *resp, merge);
}
