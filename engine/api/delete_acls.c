/* DeleteAcls: bindings removed by this node's active controller
 * (kiq_controller_delete_acls), ALTER on the cluster needed; refusals per
 * filter as CreateAcls answers them, forwarded alike. */
#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"

#define ACLS_WAIT_MS 30000

int kiq_api_delete_acls_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_delete_acls_request_t *req = request;
    kiq_delete_acls_response_t *out = response;
    int16_t code = kiq_api_acl_change_refusal(b, r);
    if (!code) {
        if (b->cluster) return kiq_api_to_controller(b, r, KIQ_API_DELETE_ACLS, req, ACLS_WAIT_MS, out);
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
            out->filter_results[i].error_message = kiq_request_str(r, KIQ_NO_AUTHORIZER_MESSAGE);
    }
    return KIQ_HANDLER_RESPOND;
}
