/* ShareGroupDescribe: share groups (KIP-932); a group of another kind is
 * answered GROUP_ID_NOT_FOUND, as Kafka answers. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_share_group_describe_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_share_describe(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
