/* DescribeAcls: the bindings matching the filter, from the metadata image
 * of the active controller (here, or forwarded there by any broker of a
 * cluster); DESCRIBE on the cluster, the surface's column.
 * SECURITY_DISABLED without an authorizer, as Kafka answers. */
#include "api/api.h"
#include "controller/controller.h"
#include "server/controller_link.h"

#define ACLS_WAIT_MS 30000

int kiq_api_describe_acls_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_acls_request_t *req = request;
    kiq_describe_acls_response_t *out = response;
    if (!b->authorizer) {
        out->error_code = KIQ_ERR_SECURITY_DISABLED;
        out->error_message = kiq_request_str(r, "No Authorizer is configured on the broker");
        return KIQ_HANDLER_RESPOND;
    }
    if (b->cluster && !(r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b))) {
        void *ctx = kiq_api_park_for_link(b, r, out);
        kiq_controller_link_whole(b, KIQ_API_DESCRIBE_ACLS, req, ACLS_WAIT_MS, &r->arena, out, kiq_api_answer_parked,
                                  ctx);
        return KIQ_HANDLER_PARKED;
    }
    if (b->controller && !b->cluster) {
        kiq_controller_describe_acls(b->controller, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    out->error_code = KIQ_ERR_NOT_CONTROLLER;
    out->error_message = kiq_request_str(r, "this node is not the active controller");
    return KIQ_HANDLER_RESPOND;
}
