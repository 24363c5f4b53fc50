/* LeaveGroup: members leave at once instead of timing out. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_leave_group_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_leave(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
