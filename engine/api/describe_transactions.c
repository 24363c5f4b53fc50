/* DescribeTransactions: each transactional id as its coordinator keeps it
 * (state by Kafka's name, timeout, start, producer and epoch, the
 * partitions of the ongoing transaction grouped by topic); an id another
 * broker coordinates is NOT_COORDINATOR, an unknown one
 * TRANSACTIONAL_ID_NOT_FOUND. */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "txn/txn_coordinator.h"

/* The partitions of t grouped by topic, into e (in a). */
static void topics_of(const kiq_txn_t *t, kiq_arena_t *a, kiq_describe_transactions_response_transaction_states_t *e)
{
    e->topics = kiq_arena_calloc(a, (size_t)(t->npartitions ? t->npartitions : 1), sizeof *e->topics);
    e->topics_n = 0;
    for (int i = 0; i < t->npartitions; i++) {
        int k = 0;
        while (k < e->topics_n && !kiq_str_eq(e->topics[k].topic, t->partitions[i].topic)) k++;
        if (k < e->topics_n) continue;
        kiq_describe_transactions_response_transaction_states_topics_t *tp = &e->topics[e->topics_n++];
        kiq_describe_transactions_response_transaction_states_topics_init(tp);
        tp->topic = (kiq_str_t){kiq_arena_strndup(a, t->partitions[i].topic, strlen(t->partitions[i].topic)),
                                (int32_t)strlen(t->partitions[i].topic)};
        tp->partitions = kiq_arena_calloc(a, (size_t)t->npartitions, sizeof *tp->partitions);
        for (int j = i; j < t->npartitions; j++)
            if (strcmp(t->partitions[j].topic, t->partitions[i].topic) == 0)
                tp->partitions[tp->partitions_n++] = t->partitions[j].partition;
    }
}

int kiq_api_describe_transactions_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_transactions_request_t *req = request;
    kiq_describe_transactions_response_t *out = response;
    int32_t n = req->transactional_ids_n > 0 ? req->transactional_ids_n : 0;
    out->transaction_states_n = n;
    out->transaction_states = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->transaction_states);
    for (int32_t i = 0; i < n; i++) {
        kiq_describe_transactions_response_transaction_states_t *e = &out->transaction_states[i];
        kiq_describe_transactions_response_transaction_states_init(e);
        e->transactional_id = req->transactional_ids[i];
        /* an error's entry carries zeros, as Kafka's does */
        e->transaction_state = KIQ_STR("");
        /* as Kafka: DESCRIBE on the transactional id */
        if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TRANSACTIONAL_ID, req->transactional_ids[i])) {
            e->error_code = KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            continue;
        }
        kiq_txn_t t;
        e->error_code = kiq_txn_coordinator_describe(b->txns, req->transactional_ids[i], &t);
        if (e->error_code) continue;
        e->transaction_state = KIQ_STR(kiq_txn_state_names[t.state]);
        e->transaction_timeout_ms = t.timeout_ms;
        e->transaction_start_time_ms = t.start_ms;
        e->producer_id = t.producer_id;
        e->producer_epoch = t.producer_epoch;
        topics_of(&t, &r->arena, e);
        kiq_txn_free(&t);
    }
    return KIQ_HANDLER_RESPOND;
}
