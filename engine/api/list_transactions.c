/* ListTransactions: the transactional ids this broker coordinates, each
 * with its producer id and state, filtered by state names (unknown names
 * are listed back), producer ids and (v1) how long the transaction has
 * been running. */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "core/clock.h"
#include "txn/txn_coordinator.h"

typedef struct listing {
    const kiq_list_transactions_request_t *req;
    kiq_list_transactions_response_t *out;
    kiq_arena_t *a;
    bool states[KIQ__TXN_STATES]; /* asked for; all when none is named */
    int32_t cap;
    int64_t now_ms;
} listing_t;

static bool wanted(const listing_t *l, const kiq_txn_t *t)
{
    if (!l->states[t->state]) return false;
    bool pid_ok = l->req->producer_id_filters_n <= 0;
    for (int32_t i = 0; i < l->req->producer_id_filters_n && !pid_ok; i++)
        pid_ok = l->req->producer_id_filters[i] == t->producer_id;
    if (!pid_ok) return false;
    /* v1: only transactions running longer than the filter */
    if (l->req->duration_filter >= 0 && (t->start_ms < 0 || l->now_ms - t->start_ms <= l->req->duration_filter))
        return false;
    return true;
}

static void add(const kiq_txn_t *t, void *ctx)
{
    listing_t *l = ctx;
    if (!wanted(l, t)) return;
    kiq_list_transactions_response_t *out = l->out;
    if (out->transaction_states_n == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 16;
        kiq_list_transactions_response_transaction_states_t *more = kiq_arena_calloc(l->a, (size_t)cap, sizeof *more);
        if (out->transaction_states_n)
            memcpy(more, out->transaction_states, (size_t)out->transaction_states_n * sizeof *more);
        out->transaction_states = more;
        l->cap = cap;
    }
    kiq_list_transactions_response_transaction_states_t *e = &out->transaction_states[out->transaction_states_n++];
    kiq_list_transactions_response_transaction_states_init(e);
    e->transactional_id = (kiq_str_t){kiq_arena_strndup(l->a, t->id, strlen(t->id)), (int32_t)strlen(t->id)};
    e->producer_id = t->producer_id;
    e->transaction_state = KIQ_STR(kiq_txn_state_names[t->state]);
}

int kiq_api_list_transactions_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_list_transactions_request_t *req = request;
    kiq_list_transactions_response_t *out = response;
    listing_t l = {.req = req, .out = out, .a = &r->arena, .now_ms = kiq_clock_wall_ms()};
    int32_t nfilters = req->state_filters_n > 0 ? req->state_filters_n : 0;
    out->unknown_state_filters = kiq_arena_calloc(&r->arena, (size_t)(nfilters ? nfilters : 1),
                                                  sizeof *out->unknown_state_filters);
    for (int s = 0; s < KIQ__TXN_STATES; s++) l.states[s] = nfilters == 0;
    for (int32_t i = 0; i < nfilters; i++) {
        int s = 0;
        while (s < KIQ__TXN_STATES && !kiq_str_eq(req->state_filters[i], kiq_txn_state_names[s])) s++;
        if (s < KIQ__TXN_STATES)
            l.states[s] = true; /* Dead is a name, though never listed */
        else
            out->unknown_state_filters[out->unknown_state_filters_n++] = req->state_filters[i];
    }
    out->transaction_states_n = 0;
    kiq_txn_coordinator_foreach(b->txns, add, &l);
    /* as Kafka: only the transactional ids the principal may DESCRIBE
     * (asked here, outside the coordinator's walk) */
    int32_t kept = 0;
    for (int32_t i = 0; i < out->transaction_states_n; i++)
        if (kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TRANSACTIONAL_ID, out->transaction_states[i].transactional_id))
            out->transaction_states[kept++] = out->transaction_states[i];
    out->transaction_states_n = kept;
    return KIQ_HANDLER_RESPOND;
}
