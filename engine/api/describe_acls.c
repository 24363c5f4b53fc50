/* DescribeAcls: the bindings matching the filter, from the metadata image
 * of this node's controller (DESCRIBE on the cluster, the surface's
 * column). SECURITY_DISABLED without an authorizer, as Kafka answers;
 * NOT_CONTROLLER on a node without a controller (not forwarded yet). */
#include "api/api.h"
#include "controller/controller.h"

int kiq_api_describe_acls_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_describe_acls_response_t *out = response;
    if (!b->authorizer) {
        out->error_code = KIQ_ERR_SECURITY_DISABLED;
        out->error_message = kiq_request_str(r, "No Authorizer is configured on the broker");
    } else if (!b->controller) {
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
        out->error_message = kiq_request_str(r, "ACLs are kept by a controller quorum: this node hosts none");
    } else
        kiq_controller_describe_acls(b->controller, request, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
