/* JoinGroup: a member joins (or rejoins) its group; parked until the rebalance's join phase ends. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_join_group_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    return kiq_group_join(b->groups, r, req, resp) ? KIQ_HANDLER_PARKED : KIQ_HANDLER_RESPOND;
}
