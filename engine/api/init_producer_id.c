/* InitProducerId: gives an idempotent producer its producer id and epoch;
 * a transactional one's come from its transaction coordinator, which
 * bumps the epoch of the id (fencing an older producer of it) and answers
 * once the new state is replicated in __transaction_state. In a cluster
 * the ids come in blocks from the controller: a request finding none in
 * hand waits in the purgatory for the next block (the first is asked for
 * at registration). */
#include <inttypes.h>
#include <stdint.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/replication_wait.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "txn/txn_coordinator.h"

/* How long a request waits for the controller's block of producer ids
 * before a retriable answer. */
#define IDS_WAIT_MS 5000

static void timed_out(void *response)
{
    kiq_init_producer_id_response_t *out = response;
    out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    out->producer_id = -1;
    out->producer_epoch = -1;
}

/* The answer, producer ids being in hand (or not coming in time). */
static int answer(kiq_broker_t *b, kiq_request_t *r, const kiq_init_producer_id_request_t *req,
                  kiq_init_producer_id_response_t *out)
{
    if (req->transactional_id.p) {
        int32_t partition;
        int64_t need;
        kiq_txn_init_producer_id(b->txns, r->header.api_version, req, out, &partition, &need);
        return kiq_api_respond_when_replicated(b, r, out, KIQ_TXN_TOPIC, partition, need, KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS,
                                               timed_out);
    }
    /* an idempotent producer gets a new id whatever it had, as from Kafka:
     * bumping the epoch of an id it names would let it fence any producer */
    int64_t id;
    if (kiq_producer_ids_next(b->producer_ids, &id) != 0) {
        KIQ_WARN_LIMITED("InitProducerId from %s: no producer id to give: %s", r->peer, kiq_error_get());
        /* retriable for the clients: they ask again */
        out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        return KIQ_HANDLER_RESPOND;
    }
    out->producer_id = id;
    out->producer_epoch = 0;
    KIQ_DEBUG("InitProducerId from %s: producer id %" PRId64, r->peer, id);
    return KIQ_HANDLER_RESPOND;
}

/* A request waiting for a block of producer ids from the controller (the
 * first after a start, or one asked for late); in the request's arena. */
typedef struct ids_wait {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    uint64_t key;
    kiq_broker_t *b;
    kiq_request_t *r;
    const kiq_init_producer_id_request_t *req;
    kiq_init_producer_id_response_t *out;
} ids_wait_t;

static bool ids_came(kiq_delayed_op_t *op, bool expired)
{
    ids_wait_t *w = (ids_wait_t *)op;
    if (!expired && !kiq_producer_ids_ready(w->b->producer_ids)) return false;
    kiq_api_finish(w->r, w->out, answer(w->b, w->r, w->req, w->out));
    return true;
}

/* Parked until a block comes (or IDS_WAIT_MS), never waited for on the
 * I/O thread. */
static int wait_for_ids(kiq_broker_t *b, kiq_request_t *r, const kiq_init_producer_id_request_t *req,
                        kiq_init_producer_id_response_t *out)
{
    ids_wait_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    *w = (ids_wait_t){.key = kiq_purgatory_producer_ids_key(), .b = b, .r = r, .req = req, .out = out};
    w->op.kind = KIQ_DELAYED_REQUEST;
    w->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)IDS_WAIT_MS * 1000000;
    w->op.try_complete = ids_came;
    w->op.keys = &w->key;
    w->op.nkeys = 1;
    kiq_api_handled(b, r); /* r is the purgatory's from here on */
    kiq_purgatory_park(b->purgatory, &w->op);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_init_producer_id_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_init_producer_id_request_t *req = request;
    kiq_init_producer_id_response_t *out = response;
    out->producer_id = -1;
    out->producer_epoch = -1;
    /* as Kafka: WRITE on the transactional id; without one, IdempotentWrite
     * on the cluster or WRITE on some topic */
    if (req->transactional_id.p ? !kiq_api_allowed(b, r, KIQ_OP_WRITE, KIQ_RES_TRANSACTIONAL_ID, req->transactional_id)
                                : !kiq_api_cluster_allowed(b, r, KIQ_OP_IDEMPOTENT_WRITE) &&
                                      !kiq_api_allowed_any(b, r, KIQ_OP_WRITE, KIQ_RES_TOPIC)) {
        out->error_code = req->transactional_id.p ? KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                                                  : KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    /* v3+: a producer that has an id asks for its epoch to be bumped (both
     * given, or neither) */
    bool given = req->producer_id != -1, epoch_given = req->producer_epoch != -1;
    if (given != epoch_given || (given && (req->producer_id < 0 || req->producer_epoch < 0))) {
        KIQ_WARN_LIMITED("InitProducerId from %s: producer id %" PRId64 " with epoch %d is not a valid pair",
                         r->peer, req->producer_id, req->producer_epoch);
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        return KIQ_HANDLER_RESPOND;
    }
    if (!kiq_producer_ids_ready(b->producer_ids)) return wait_for_ids(b, r, req, out);
    return answer(b, r, req, out);
}
