/* BrokerHeartbeat (control plane, controller only): a broker is alive. */
#include "api/api.h"
#include "controller/controller.h"

int kiq_api_broker_heartbeat_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    (void)r;
    if (!b->controller) {
        ((kiq_broker_heartbeat_response_t *)resp)->error_code = KIQ_ERR_NOT_CONTROLLER;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_controller_heartbeat(b->controller, req, resp);
    return KIQ_HANDLER_RESPOND;
}
