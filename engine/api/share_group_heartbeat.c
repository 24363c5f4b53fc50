/* ShareGroupHeartbeat: a share group member's (KIP-932) join, heartbeat
 * and leave in one; the coordinator answers at once. */
#include "api/api.h"
#include "api/share_state_topic.h"
#include "group/group_coordinator.h"

int kiq_api_share_group_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    /* a share group in use: its partitions' leaders will keep state */
    kiq_api_share_state_topic_ensure(b);
    kiq_group_share_heartbeat(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
