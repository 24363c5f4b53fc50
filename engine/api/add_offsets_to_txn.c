/* AddOffsetsToTxn: the group's __consumer_offsets partition joins the
 * producer's transaction (the offsets themselves come with
 * TxnOffsetCommit to the group coordinator), answered once the new state
 * is replicated in __transaction_state. */
#include "api/api.h"
#include "api/replication_wait.h"
#include "txn/txn_coordinator.h"


static void timed_out(void *response)
{
    kiq_add_offsets_to_txn_response_t *out = response;
    out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

int kiq_api_add_offsets_to_txn_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_add_offsets_to_txn_response_t *out = response;
    int32_t partition;
    int64_t need;
    out->error_code = kiq_txn_add_offsets(b->txns, r->header.api_version, request, &partition, &need);
    return kiq_api_respond_when_replicated(b, r, response, KIQ_TXN_TOPIC, partition, need, KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS,
                                           timed_out);
}
