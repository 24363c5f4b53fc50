/* InitProducerId: gives an idempotent producer its producer id and epoch;
 * a transactional one's come from its transaction coordinator, which
 * bumps the epoch of the id (fencing an older producer of it) and answers
 * once the new state is replicated in __transaction_state. */
#include <inttypes.h>
#include <stdint.h>

#include "api/api.h"
#include "api/replication_wait.h"
#include "core/error.h"
#include "core/say.h"
#include "txn/txn_coordinator.h"

static void timed_out(void *response)
{
    kiq_init_producer_id_response_t *out = response;
    out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    out->producer_id = -1;
    out->producer_epoch = -1;
}

int kiq_api_init_producer_id_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_init_producer_id_request_t *req = request;
    kiq_init_producer_id_response_t *out = response;
    out->producer_id = -1;
    out->producer_epoch = -1;
    /* v3+: a producer that has an id asks for its epoch to be bumped (both
     * given, or neither) */
    bool given = req->producer_id != -1, epoch_given = req->producer_epoch != -1;
    if (given != epoch_given || (given && (req->producer_id < 0 || req->producer_epoch < 0))) {
        KIQ_WARN_LIMITED("InitProducerId from %s: producer id %" PRId64 " with epoch %d is not a valid pair",
                         r->peer, req->producer_id, req->producer_epoch);
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        return KIQ_HANDLER_RESPOND;
    }
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
        KIQ_ERROR("InitProducerId from %s: cannot allocate a producer id: %s", r->peer, kiq_error_get());
        /* retriable for the clients: they ask again */
        out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        return KIQ_HANDLER_RESPOND;
    }
    out->producer_id = id;
    out->producer_epoch = 0;
    KIQ_DEBUG("InitProducerId from %s: producer id %" PRId64, r->peer, id);
    return KIQ_HANDLER_RESPOND;
}
