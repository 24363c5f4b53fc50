/* ShareGroupHeartbeat: a share group member's (KIP-932) join, heartbeat
 * and leave in one; the coordinator answers at once. */
#include "api/api.h"
#include "api/authorize.h"
#include "api/share_state_topic.h"
#include "group/group_coordinator.h"

int kiq_api_share_group_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_share_group_heartbeat_request_t *req = request;
    kiq_share_group_heartbeat_response_t *resp = response;
    /* as Kafka: READ on the group (surface.lua), then DESCRIBE on every
     * topic subscribed, else the heartbeat is refused whole */
    if (!kiq_api_topics_describable(b, r, req->subscribed_topic_names, req->subscribed_topic_names_n)) {
        resp->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    /* a share group in use: its partitions' leaders will keep state */
    kiq_api_share_state_topic_ensure(b);
    kiq_group_share_heartbeat(b->groups, r, req, resp);
    return KIQ_HANDLER_RESPOND;
}
