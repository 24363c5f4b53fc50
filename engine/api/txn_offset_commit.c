/* TxnOffsetCommit: a transactional producer commits its consumer group's
 * offsets inside its transaction (send_offsets_to_transaction), at the
 * group's coordinator; answered once the records are replicated, applied
 * when the transaction's marker reaches the group's partition. */
#include "api/api.h"
#include "api/replication_wait.h"
#include "group/group_coordinator.h"

static void timed_out(void *response)
{
    kiq_txn_offset_commit_response_t *out = response;
    for (int32_t i = 0; i < out->topics_n; i++)
        for (int32_t j = 0; j < out->topics[i].partitions_n; j++)
            if (!out->topics[i].partitions[j].error_code)
                out->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

int kiq_api_txn_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    int32_t partition = -1;
    int64_t need;
    kiq_group_txn_commit_offsets(b->groups, r, request, response, &partition, &need);
    return kiq_api_respond_when_replicated(b, r, response, KIQ_OFFSETS_TOPIC, partition, need,
                                           KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS, timed_out);
}
