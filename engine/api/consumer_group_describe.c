/* ConsumerGroupDescribe: the new consumer protocol's groups (KIP-848); a
 * classic group is answered GROUP_ID_NOT_FOUND, as Kafka answers, and
 * librdkafka then describes it with DescribeGroups. */
#include <stdint.h>

#include "api/api.h"
#include "api/authorize.h"
#include "group/group_coordinator.h"

int kiq_api_consumer_group_describe_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    const kiq_consumer_group_describe_request_t *in = req;
    kiq_consumer_group_describe_response_t *out = resp;
    kiq_group_consumer_describe(b->groups, r, req, resp);
    /* as Kafka: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED */
    for (int32_t i = 0; i < out->groups_n; i++) {
        kiq_consumer_group_describe_response_groups_t *g = &out->groups[i];
        if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_GROUP, g->group_id)) {
            kiq_str_t id = g->group_id;
            kiq_consumer_group_describe_response_groups_init(g);
            g->group_id = id;
            g->error_code = KIQ_ERR_GROUP_AUTHORIZATION_FAILED;
        } else if (in->include_authorized_operations && g->authorized_operations != INT32_MIN) {
            /* where the coordinator answered them (not for a group it does not know) */
            g->authorized_operations = kiq_api_operations(b, r, KIQ_RES_GROUP, g->group_id);
        }
    }
    return KIQ_HANDLER_RESPOND;
}
