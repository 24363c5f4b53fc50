/* SyncGroup: the leader hands out the assignment; the others wait for theirs. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_sync_group_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    return kiq_group_sync(b->groups, r, req, resp) ? KIQ_HANDLER_PARKED : KIQ_HANDLER_RESPOND;
}
