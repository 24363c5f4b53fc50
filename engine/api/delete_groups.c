/* DeleteGroups: empty groups and their offsets go. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_delete_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_delete(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
