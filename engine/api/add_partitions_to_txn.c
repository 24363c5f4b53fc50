/* AddPartitionsToTxn: a transactional producer's partitions join its
 * transaction at its coordinator (v0-3), answered once the new state is
 * replicated in __transaction_state; v4 carries several transactions and,
 * with verify_only, asks whether partitions are in them (KIP-890 part 1:
 * what a partition leader asks before it takes a transaction's first
 * records). */
#include "api/api.h"
#include "api/authorize.h"
#include "api/replication_wait.h"
#include "txn/txn_coordinator.h"

static void timed_out(void *response)
{
    kiq_add_partitions_to_txn_response_t *out = response;
    for (int32_t i = 0; i < out->results_by_topic_v3_and_below_n; i++)
        for (int32_t j = 0; j < out->results_by_topic_v3_and_below[i].results_by_partition_n; j++)
            out->results_by_topic_v3_and_below[i].results_by_partition[j].partition_error_code =
                KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    for (int32_t i = 0; i < out->results_by_transaction_n; i++)
        for (int32_t j = 0; j < out->results_by_transaction[i].topic_results_n; j++)
            for (int32_t k = 0; k < out->results_by_transaction[i].topic_results[j].results_by_partition_n; k++)
                out->results_by_transaction[i].topic_results[j].results_by_partition[k].partition_error_code =
                    KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

/* v0-3 as Kafka authorizes it: WRITE on the transactional id, else every
 * partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then WRITE on each
 * topic, else TOPIC_AUTHORIZATION_FAILED there and OPERATION_NOT_ATTEMPTED
 * for the rest. False when refused (the answer filled). */
static bool authorized_v3(kiq_broker_t *b, kiq_request_t *r, const kiq_add_partitions_to_txn_request_t *req,
                          kiq_add_partitions_to_txn_response_t *out)
{
    int32_t n = req->v3_and_below_topics_n > 0 ? req->v3_and_below_topics_n : 0;
    bool txn = kiq_api_allowed(b, r, KIQ_OP_WRITE, KIQ_RES_TRANSACTIONAL_ID, req->v3_and_below_transactional_id);
    bool *denied = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *denied);
    bool any = !txn;
    for (int32_t i = 0; txn && i < n; i++)
        any |= denied[i] = !kiq_api_allowed(b, r, KIQ_OP_WRITE, KIQ_RES_TOPIC, req->v3_and_below_topics[i].name);
    if (!any) return true;
    out->results_by_topic_v3_and_below_n = n;
    out->results_by_topic_v3_and_below = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *out->results_by_topic_v3_and_below);
    for (int32_t i = 0; i < n; i++) {
        const kiq_add_partitions_to_txn_request_v3_and_below_topics_t *t = &req->v3_and_below_topics[i];
        kiq_add_partitions_to_txn_response_results_by_topic_v3_and_below_t *o = &out->results_by_topic_v3_and_below[i];
        kiq_add_partitions_to_txn_response_results_by_topic_v3_and_below_init(o);
        o->name = t->name;
        o->results_by_partition_n = t->partitions_n > 0 ? t->partitions_n : 0;
        o->results_by_partition = kiq_arena_calloc(&r->arena, (size_t)o->results_by_partition_n + 1,
                                                   sizeof *o->results_by_partition);
        int16_t code = !txn ? KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                       : denied[i] ? KIQ_ERR_TOPIC_AUTHORIZATION_FAILED
                                   : KIQ_ERR_OPERATION_NOT_ATTEMPTED;
        for (int32_t j = 0; j < o->results_by_partition_n; j++) {
            o->results_by_partition[j].partition_index = t->partitions[j];
            o->results_by_partition[j].partition_error_code = code;
        }
    }
    return false;
}

int kiq_api_add_partitions_to_txn_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_add_partitions_to_txn_request_t *req = request;
    kiq_add_partitions_to_txn_response_t *out = response;
    int32_t partition;
    int64_t need;
    if (r->header.api_version < 4 && !authorized_v3(b, r, req, out)) return KIQ_HANDLER_RESPOND;
    /* v4+ is a partition leader's question: ClusterAction */
    if (r->header.api_version >= 4 && !kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION)) {
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    if (r->header.api_version < 4) {
        kiq_txn_add_partitions(b->txns, r->header.api_version, request, response, &r->arena, &partition, &need);
        return kiq_api_respond_when_replicated(b, r, response, KIQ_TXN_TOPIC, partition, need,
                                               KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS, timed_out);
    }
    int32_t n = req->transactions_n > 0 ? req->transactions_n : 0;
    out->results_by_transaction_n = n;
    out->results_by_transaction = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->results_by_transaction);
    kiq_api_replication_need_t *needs = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *needs);
    int nneeds = 0;
    for (int32_t i = 0; i < n; i++) {
        kiq_add_partitions_to_txn_response_results_by_transaction_init(&out->results_by_transaction[i]);
        kiq_txn_add_partitions_v4(b->txns, &req->transactions[i], &out->results_by_transaction[i], &r->arena,
                                  &partition, &need);
        if (need >= 0) needs[nneeds++] = (kiq_api_replication_need_t){KIQ_TXN_TOPIC, partition, need};
    }
    return kiq_api_respond_when_all_replicated(b, r, response, needs, nneeds, KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS,
                                               timed_out);
}
