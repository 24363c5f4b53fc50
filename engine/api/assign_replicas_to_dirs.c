/* AssignReplicasToDirs (control plane, controller only): a broker says
 * where its replicas live, and which it cannot trust to write. */
#include "api/api.h"
#include "controller/controller.h"

int kiq_api_assign_replicas_to_dirs_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    if (!ctl) {
        ((kiq_assign_replicas_to_dirs_response_t *)resp)->error_code = KIQ_ERR_NOT_CONTROLLER;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_controller_assign_replicas_to_dirs(ctl, &r->arena, req, resp);
    return KIQ_HANDLER_RESPOND;
}
