/* DescribeAcls: the bindings matching the filter, from the metadata image
 * of the active controller (here, or forwarded there by any broker of a
 * cluster); DESCRIBE on the cluster, the surface's column.
 * SECURITY_DISABLED without an authorizer, as Kafka answers. */
#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"

#define ACLS_WAIT_MS 30000

int kiq_api_describe_acls_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_acls_request_t *req = request;
    kiq_describe_acls_response_t *out = response;
    if (!b->authorizer) {
        out->error_code = KIQ_ERR_SECURITY_DISABLED;
        out->error_message = kiq_request_str(r, KIQ_NO_AUTHORIZER_MESSAGE);
        return KIQ_HANDLER_RESPOND;
    }
    if (b->cluster && !(r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)))
        return kiq_api_to_controller(b, r, KIQ_API_DESCRIBE_ACLS, req, ACLS_WAIT_MS, out);
    if (b->controller && !b->cluster) {
        kiq_controller_describe_acls(b->controller, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    out->error_code = KIQ_ERR_NOT_CONTROLLER;
    out->error_message = kiq_request_str(r, "this node is not the active controller");
    return KIQ_HANDLER_RESPOND;
}
