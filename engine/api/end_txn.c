/* EndTxn: a transactional producer commits or aborts; answered once the
 * PrepareCommit/PrepareAbort state is replicated in __transaction_state.
 * The markers and the Complete state follow on the coordinator's marker
 * thread: a producer that starts its next transaction before then gets
 * CONCURRENT_TRANSACTIONS and retries, as with Kafka. */
#include "api/api.h"
#include "api/replication_wait.h"
#include "txn/txn_coordinator.h"

static void timed_out(void *response)
{
    kiq_end_txn_response_t *out = response;
    out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

int kiq_api_end_txn_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_end_txn_response_t *out = response;
    int32_t partition;
    int64_t need;
    out->error_code = kiq_txn_end(b->txns, r->header.api_version, request, &partition, &need, out);
    return kiq_api_respond_when_replicated(b, r, response, KIQ_TXN_TOPIC, partition, need,
                                           KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS, timed_out);
}
