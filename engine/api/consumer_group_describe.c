/* ConsumerGroupDescribe: the new consumer protocol's groups (KIP-848); a
 * classic group is answered GROUP_ID_NOT_FOUND, as Kafka answers, and
 * librdkafka then describes it with DescribeGroups. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_consumer_group_describe_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_consumer_describe(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
