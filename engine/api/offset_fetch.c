/* OffsetFetch: a group's committed offsets (-1 where nothing was committed). */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_offset_fetch_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_fetch_offsets(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
