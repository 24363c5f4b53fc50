/* DeleteShareGroupOffsets: an empty share group's state of whole topics
 * forgotten (KIP-932; kafka-share-groups --delete-offsets), in memory and
 * in __share_group_state (tombstones); the group starts there again as
 * share.auto.offset.reset says. In a cluster each partition's leader holds
 * its state: the other brokers are asked too (share_fanout.h). */
#include "api/authorize.h"
#include "api/share_fanout.h"
#include "api/share_state_topic.h"
#include "api/share_partitions.h"
#include "core/error.h"
#include "core/say.h"
#include "group/group_coordinator.h"
#include "share/share_state.h"

/* A topic's error wherever one broker had one: the same request, so the
 * same shape. */
static void merge(void *response, const void *remote, kiq_arena_t *arena)
{
    (void)arena;
    kiq_delete_share_group_offsets_response_t *resp = response;
    const kiq_delete_share_group_offsets_response_t *rem = remote;
    if (!rem) return;
    for (int32_t i = 0; i < resp->responses_n && i < rem->responses_n; i++)
        if (!resp->responses[i].error_code && rem->responses[i].error_code)
            resp->responses[i].error_code = rem->responses[i].error_code;
}

int kiq_api_delete_share_group_offsets_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_delete_share_group_offsets_request_t *req = request;
    kiq_delete_share_group_offsets_response_t *resp = response;
    /* a coordinator's ask: it checked the group */
    bool from_broker = kiq_api_share_from_broker(b, r);
    if (!from_broker && (resp->error_code = kiq_group_share_check(b->groups, req->group_id, true, false)) != 0)
        return KIQ_HANDLER_RESPOND;
    resp->responses_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->responses = kiq_arena_calloc(&r->arena, (size_t)(resp->responses_n ? resp->responses_n : 1),
                                       sizeof *resp->responses);
    /* as Kafka: READ on each topic too (DELETE on the group in
     * surface.lua), asked outside the share lock */
    bool *denied = kiq_arena_calloc(&r->arena, (size_t)resp->responses_n + 1, sizeof *denied);
    for (int32_t i = 0; i < resp->responses_n; i++)
        denied[i] = !from_broker && !kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, req->topics[i].topic_name);
    kiq_share_state_ctx_t sc;
    kiq_api_share_state_ctx(b, &sc);
    kiq_share_lock(b->shares);
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(b, req->group_id, &cfg);
    for (int32_t i = 0; i < resp->responses_n; i++) {
        kiq_delete_share_group_offsets_response_responses_t *tr = &resp->responses[i];
        kiq_delete_share_group_offsets_response_responses_init(tr);
        tr->topic_name = req->topics[i].topic_name;
        if (denied[i]) {
            tr->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        kiq_topic_t *t = kiq_topics_get(b->topics, tr->topic_name);
        if (!t) {
            tr->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        tr->topic_id = t->id;
        for (int32_t p = 0; p < t->npartitions; p++) {
            kiq_api_share_forget(b, &cfg, req->group_id, &t->id, p);
            if (kiq_share_state_delete(&sc, req->group_id, &t->id, p) != 0) {
                KIQ_WARN_LIMITED("share group " KIQ_STR_FMT ": state of %s-%d not deleted: %s",
                                 KIQ_STR_ARG(req->group_id), t->name, p, kiq_error_get());
                tr->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
            }
        }
        kiq_topic_unref(t);
    }
    kiq_share_unlock(b->shares);
    if (from_broker) return KIQ_HANDLER_RESPOND;
    return kiq_api_share_fanout(b, r, request, response, sizeof *resp, merge);
}
