/* DescribeClientQuotas: the quotas of the entities the filter matches,
 * from the metadata image of this node's controller. A node without one
 * (a standalone broker, or a broker whose controller is elsewhere: not
 * forwarded yet) answers NOT_CONTROLLER. */
#include "api/api.h"
#include "controller/controller.h"
#include "core/error.h"

int kiq_api_describe_client_quotas_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_describe_client_quotas_response_t *out = response;
    if (!b->controller) {
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
        out->error_message = kiq_request_str(r, "client quotas are kept by a controller quorum: this node hosts none");
        out->entries_n = -1;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_controller_describe_client_quotas(b->controller, request, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
