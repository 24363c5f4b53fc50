/* ConsumerGroupHeartbeat: the new consumer protocol's (KIP-848) join,
 * heartbeat and leave in one. The answer waits until the records the
 * heartbeat wrote to __consumer_offsets are replicated (at once when the
 * coordinator is alone in the ISR), as Kafka answers once they are
 * committed; one not replicated within offsets.commit.timeout.ms is
 * answered COORDINATOR_NOT_AVAILABLE, Kafka's error for a write that timed
 * out, and the member heartbeats again. */
#include "api/api.h"
#include "api/authorize.h"
#include "api/replication_wait.h"
#include "group/group_coordinator.h"

static void timed_out(void *response)
{
    kiq_consumer_group_heartbeat_response_t *resp = response;
    if (resp->error_code) return;
    resp->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    resp->error_message = KIQ_STR("The coordinator's write did not replicate in time.");
    resp->assignment_null = true;
}

int kiq_api_consumer_group_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_consumer_group_heartbeat_request_t *req = request;
    kiq_consumer_group_heartbeat_response_t *resp = response;
    int32_t partition = -1;
    int64_t need = -1;
    /* as Kafka: READ on the group (surface.lua), then DESCRIBE on every
     * topic subscribed by name, else the heartbeat is refused whole (a
     * regex's topics are the coordinator's to filter) */
    if (!kiq_api_topics_describable(b, r, req->subscribed_topic_names, req->subscribed_topic_names_n)) {
        resp->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_group_consumer_heartbeat(b->groups, r, req, resp, &partition, &need);
    return kiq_api_respond_when_replicated(b, r, resp, KIQ_OFFSETS_TOPIC, partition, need,
                                           kiq_config_int(b->config, KIQ_CFG_OFFSETS_COMMIT_TIMEOUT_MS), timed_out);
}
