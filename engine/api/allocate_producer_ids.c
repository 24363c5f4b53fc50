/* AllocateProducerIds (control plane, controller only): a block of
 * producer ids for a broker. */
#include "api/api.h"
#include "controller/controller.h"

int kiq_api_allocate_producer_ids_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    (void)r;
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    if (!ctl) {
        ((kiq_allocate_producer_ids_response_t *)resp)->error_code = KIQ_ERR_NOT_CONTROLLER;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_controller_allocate_producer_ids(ctl, req, resp);
    return KIQ_HANDLER_RESPOND;
}
