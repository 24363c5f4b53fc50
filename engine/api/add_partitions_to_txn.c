/* AddPartitionsToTxn v0-3: a transactional producer's partitions join its
 * transaction at its coordinator, answered once the new state is
 * replicated in __transaction_state. */
#include "api/api.h"
#include "api/replication_wait.h"
#include "txn/txn_coordinator.h"


static void timed_out(void *response)
{
    kiq_add_partitions_to_txn_response_t *out = response;
    for (int32_t i = 0; i < out->results_by_topic_v3_and_below_n; i++)
        for (int32_t j = 0; j < out->results_by_topic_v3_and_below[i].results_by_partition_n; j++)
            out->results_by_topic_v3_and_below[i].results_by_partition[j].partition_error_code =
                KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

int kiq_api_add_partitions_to_txn_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    int32_t partition;
    int64_t need;
    kiq_txn_add_partitions(b->txns, r->header.api_version, request, response, &r->arena, &partition, &need);
    return kiq_api_respond_when_replicated(b, r, response, KIQ_TXN_TOPIC, partition, need, KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS,
                                           timed_out);
}
