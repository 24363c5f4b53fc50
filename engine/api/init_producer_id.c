/* InitProducerId: gives an idempotent producer its producer id and epoch.
 * Transactions are not supported: a transactional id is refused with
 * COORDINATOR_NOT_AVAILABLE (Kafka would send it to a transaction
 * coordinator, which this broker does not have). */
#include <inttypes.h>
#include <stdint.h>

#include "api/api.h"
#include "core/error.h"
#include "core/say.h"

int kiq_api_init_producer_id_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_init_producer_id_request_t *req = request;
    kiq_init_producer_id_response_t *out = response;
    out->producer_id = -1;
    out->producer_epoch = -1;
    if (req->transactional_id.p) {
        KIQ_WARN("InitProducerId from %s with transactional id '%.*s': transactions are not supported", r->peer,
                 (int)req->transactional_id.len, req->transactional_id.p);
        out->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
        return KIQ_HANDLER_RESPOND;
    }
    /* v3+: a producer that has an id asks for its epoch to be bumped (both
     * given, or neither) */
    bool given = req->producer_id != -1, epoch_given = req->producer_epoch != -1;
    if (given != epoch_given || (given && (req->producer_id < 0 || req->producer_epoch < 0))) {
        KIQ_WARN("InitProducerId from %s: producer id %" PRId64 " with epoch %d is not a valid pair", r->peer,
                 req->producer_id, req->producer_epoch);
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        return KIQ_HANDLER_RESPOND;
    }
    if (given && req->producer_epoch < INT16_MAX) {
        out->producer_id = req->producer_id;
        out->producer_epoch = (int16_t)(req->producer_epoch + 1);
        KIQ_DEBUG("InitProducerId from %s: producer %" PRId64 " epoch bumped to %d", r->peer, out->producer_id,
                  out->producer_epoch);
        return KIQ_HANDLER_RESPOND;
    }
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
