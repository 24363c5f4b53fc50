/* CreateAcls: bindings added by this node's active controller
 * (kiq_controller_create_acls), ALTER on the cluster needed. Every
 * creation gets the refusal when there is no authorizer
 * (SECURITY_DISABLED), a creation Kafka cannot build (UNKNOWN_SERVER_ERROR),
 * no permission (CLUSTER_AUTHORIZATION_FAILED); in a cluster forwarded to
 * the active controller by any broker (NOT_CONTROLLER where it arrived
 * forwarded at a controller no longer active). */
#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"

#define ACLS_WAIT_MS 30000

/* A creation naming ANY (or MATCH) where a binding needs a value: Kafka
 * cannot even build its bindings and fails the whole request with
 * UNKNOWN_SERVER_ERROR. */
static bool unbuildable(const kiq_create_acls_request_t *req)
{
    for (int32_t i = 0; i < req->creations_n; i++) {
        const kiq_create_acls_request_creations_t *c = &req->creations[i];
        if (c->resource_type == KIQ_RES_ANY || c->resource_pattern_type == KIQ_PAT_ANY ||
            c->resource_pattern_type == KIQ_PAT_MATCH || c->operation == KIQ_OP_ANY || c->permission_type == KIQ_PERM_ANY)
            return true;
    }
    return false;
}

int kiq_api_create_acls_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_create_acls_request_t *req = request;
    kiq_create_acls_response_t *out = response;
    int16_t code = kiq_api_acl_change_refusal(b, r);
    if (code != KIQ_ERR_SECURITY_DISABLED && unbuildable(req)) code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (!code) {
        if (b->cluster) return kiq_api_to_controller(b, r, KIQ_API_CREATE_ACLS, req, ACLS_WAIT_MS, out);
        kiq_controller_create_acls(b->controller, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    int n = req->creations_n > 0 ? req->creations_n : 0;
    out->results = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *out->results);
    out->results_n = n;
    for (int i = 0; i < n; i++) {
        kiq_create_acls_response_results_init(&out->results[i]);
        out->results[i].error_code = code;
        if (code == KIQ_ERR_SECURITY_DISABLED)
            out->results[i].error_message = kiq_request_str(r, KIQ_NO_AUTHORIZER_MESSAGE);
    }
    return KIQ_HANDLER_RESPOND;
}
