/* OffsetDelete: removes committed offsets of topics the group no longer
 * reads. As Kafka: DELETE on the group (surface.lua), then READ on each
 * topic; a refused topic is answered TOPIC_AUTHORIZATION_FAILED per
 * partition, ahead of the others, and never reaches the group. */
#include "api/api.h"
#include "api/authorize.h"
#include "group/group_coordinator.h"

int kiq_api_offset_delete_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_offset_delete_request_t *req = request;
    kiq_offset_delete_response_t *resp = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    kiq_offset_delete_request_t allowed = *req;
    allowed.topics = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *allowed.topics);
    allowed.topics_n = 0;
    kiq_offset_delete_response_topics_t *denied = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *denied);
    int32_t ndenied = 0;
    for (int32_t i = 0; i < n; i++) {
        const kiq_offset_delete_request_topics_t *t = &req->topics[i];
        if (kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, t->name)) {
            allowed.topics[allowed.topics_n++] = *t;
            continue;
        }
        kiq_offset_delete_response_topics_t *d = &denied[ndenied++];
        kiq_offset_delete_response_topics_init(d);
        d->name = t->name;
        d->partitions_n = t->partitions_n > 0 ? t->partitions_n : 0;
        d->partitions = kiq_arena_calloc(&r->arena, (size_t)d->partitions_n + 1, sizeof *d->partitions);
        for (int32_t j = 0; j < d->partitions_n; j++) {
            kiq_offset_delete_response_topics_partitions_init(&d->partitions[j]);
            d->partitions[j].partition_index = t->partitions[j].partition_index;
            d->partitions[j].error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
    kiq_group_delete_offsets(b->groups, r, &allowed, resp);
    if (ndenied) {
        kiq_offset_delete_response_topics_t *all =
            kiq_arena_calloc(&r->arena, (size_t)(ndenied + resp->topics_n) + 1, sizeof *all);
        for (int32_t i = 0; i < ndenied; i++) all[i] = denied[i];
        for (int32_t i = 0; i < resp->topics_n; i++) all[ndenied + i] = resp->topics[i];
        resp->topics = all;
        resp->topics_n += ndenied;
    }
    return KIQ_HANDLER_RESPOND;
}
