/* ListGroups: the groups this coordinator holds, with their states. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_list_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_list(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
