/* OffsetCommit: committed offsets go to __consumer_offsets, then to the
 * coordinator's cache; the answer waits until the partition's high
 * watermark passes them (at once when the coordinator is alone in the
 * ISR), so an acknowledged commit survives a coordinator failover. A
 * commit not replicated within offsets.commit.timeout.ms is answered
 * COORDINATOR_NOT_AVAILABLE, as Kafka does, and the client retries. */
#include "api/api.h"
#include "api/replication_wait.h"
#include "group/group_coordinator.h"

static void timed_out(void *response)
{
    kiq_offset_commit_response_t *resp = response;
    for (int32_t i = 0; i < resp->topics_n; i++)
        for (int32_t j = 0; j < resp->topics[i].partitions_n; j++)
            if (!resp->topics[i].partitions[j].error_code)
                resp->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

int kiq_api_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    int32_t partition = -1;
    int64_t need = -1;
    kiq_group_commit_offsets(b->groups, r, req, resp, &partition, &need);
    return kiq_api_respond_when_replicated(b, r, resp, KIQ_OFFSETS_TOPIC, partition, need,
                                           kiq_config_int(b->config, KIQ_CFG_OFFSETS_COMMIT_TIMEOUT_MS), timed_out);
}
