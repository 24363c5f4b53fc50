/* ConsumerGroupDescribe: there are no groups of the new consumer protocol
 * (KIP-848) here; every group asked for is answered GROUP_ID_NOT_FOUND, as
 * Kafka answers for a classic group, and librdkafka then describes it with
 * DescribeGroups. */
#include "api/api.h"
#include "core/error.h"

int kiq_api_consumer_group_describe_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_consumer_group_describe_request_t *req = request;
    kiq_consumer_group_describe_response_t *out = response;
    int32_t n = req->group_ids_n > 0 ? req->group_ids_n : 0;
    out->groups_n = n;
    out->groups = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->groups);
    for (int32_t i = 0; i < n; i++) {
        kiq_consumer_group_describe_response_groups_t *g = &out->groups[i];
        kiq_consumer_group_describe_response_groups_init(g);
        g->group_id = req->group_ids[i];
        g->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
        kiq_error_set("Group " KIQ_STR_FMT " is not a consumer group.", KIQ_STR_ARG(req->group_ids[i]));
        g->error_message = kiq_request_error_message(r);
    }
    return KIQ_HANDLER_RESPOND;
}
