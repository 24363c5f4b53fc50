/* DeleteAcls: bindings removed by this node's active controller
 * (kiq_controller_delete_acls), ALTER on the cluster needed; refusals per
 * filter as CreateAcls answers them, forwarded alike. */
#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"
#include "server/controller_link.h"

#define ACLS_WAIT_MS 30000

int kiq_api_delete_acls_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_delete_acls_request_t *req = request;
    kiq_delete_acls_response_t *out = response;
    int16_t code = !b->authorizer                                  ? KIQ_ERR_SECURITY_DISABLED
                   : !kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER) ? KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED
                   : b->cluster && r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)
                       ? KIQ_ERR_NOT_CONTROLLER
                       : 0;
    if (!code) {
        if (b->cluster) {
            void *ctx = kiq_api_park_for_link(b, r, out);
            kiq_controller_link_whole(b, KIQ_API_DELETE_ACLS, req, ACLS_WAIT_MS, &r->arena, out, kiq_api_answer_parked,
                                      ctx);
            return KIQ_HANDLER_PARKED;
        }
        kiq_controller_delete_acls(b->controller, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    int n = req->filters_n > 0 ? req->filters_n : 0;
    out->filter_results = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *out->filter_results);
    out->filter_results_n = n;
    for (int i = 0; i < n; i++) {
        kiq_delete_acls_response_filter_results_init(&out->filter_results[i]);
        out->filter_results[i].error_code = code;
        if (code == KIQ_ERR_SECURITY_DISABLED)
            out->filter_results[i].error_message = kiq_request_str(r, "No Authorizer is configured on the broker");
    }
    return KIQ_HANDLER_RESPOND;
}
