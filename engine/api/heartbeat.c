/* Heartbeat: a member shows it is alive and learns of rebalances. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    (void)r;
    kiq_group_heartbeat(b->groups, req, resp);
    return KIQ_HANDLER_RESPOND;
}
