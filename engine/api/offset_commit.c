/* OffsetCommit: committed offsets go to __consumer_offsets, then to the coordinator's cache. */
#include "api/api.h"
#include "group/group_coordinator.h"

int kiq_api_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_group_commit_offsets(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
