/* DescribeGroups: state, protocol and members of each group asked for. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_describe_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_describe(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
