/* DescribeUserScramCredentials (KIP-554): the mechanisms and iterations of
 * each user's SCRAM credentials, from the metadata image of this node's
 * controller, DESCRIBE on the cluster needed. A node without one (a
 * standalone broker, or a broker whose controller is elsewhere: not
 * forwarded yet) answers NOT_CONTROLLER. */
#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"
#include "core/error.h"

int kiq_api_describe_user_scram_credentials_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                                   void *response)
{
    kiq_describe_user_scram_credentials_response_t *out = response;
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_DESCRIBE)) {
        /* as Kafka answers it: the top-level error and one result, for no user, saying it again */
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        out->results = kiq_arena_calloc(&r->arena, 1, sizeof *out->results);
        out->results_n = 1;
        kiq_describe_user_scram_credentials_response_results_init(&out->results[0]);
        out->results[0].user = KIQ_STR("");
        out->results[0].error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    if (!b->controller) {
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
        out->error_message = kiq_request_str(r, "SCRAM credentials are kept by a controller quorum: this node hosts none");
        return KIQ_HANDLER_RESPOND;
    }
    kiq_controller_describe_scram(b->controller, request, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
