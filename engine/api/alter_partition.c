/* AlterPartition (control plane, controller only): a leader changes its
 * partitions' ISR. */
#include "api/api.h"
#include "controller/controller.h"

int kiq_api_alter_partition_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    if (!ctl) {
        ((kiq_alter_partition_response_t *)resp)->error_code = KIQ_ERR_NOT_CONTROLLER;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_controller_alter_partition(ctl, &r->arena, r->header.api_version, req, resp);
    return KIQ_HANDLER_RESPOND;
}
