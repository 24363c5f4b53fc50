/* UnregisterBroker: the controller removes a broker's registration (its
 * leaderships move first); any broker forwards it there. A standalone
 * broker has no registrations: BROKER_ID_NOT_REGISTERED. */
#include "api/api.h"
#include "core/error.h"

#define UNREGISTER_WAIT_MS 30000

int kiq_api_unregister_broker_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_unregister_broker_request_t *req = request;
    kiq_unregister_broker_response_t *out = response;
    kiq_error_clear();
    if (r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)) {
        kiq_error_set("broker %d is not the active controller", b->node_id);
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
    } else if (b->cluster) {
        return kiq_api_to_controller(b, r, KIQ_API_UNREGISTER_BROKER, req, UNREGISTER_WAIT_MS, out);
    } else {
        kiq_error_set("broker %d is not registered: a standalone broker has no controller", req->broker_id);
        out->error_code = KIQ_ERR_BROKER_ID_NOT_REGISTERED;
    }
    out->error_message = kiq_request_error_message(r);
    return KIQ_HANDLER_RESPOND;
}
