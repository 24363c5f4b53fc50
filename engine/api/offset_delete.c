/* OffsetDelete: removes committed offsets of topics the group no longer reads. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_offset_delete_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_delete_offsets(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
