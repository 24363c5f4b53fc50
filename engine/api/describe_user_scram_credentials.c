/* DescribeUserScramCredentials (KIP-554): the mechanisms and iterations of
 * each user's SCRAM credentials, from the active controller's metadata
 * image: here when this node's controller is active, else forwarded to it.
 * DESCRIBE on the cluster is needed. A standalone broker, with no
 * controller quorum, answers NOT_CONTROLLER. */
#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"
#include "core/error.h"
#include "server/controller_link.h"

#define DESCRIBE_WAIT_MS 30000

typedef struct forwarded_describe {
    kiq_request_t *r;
    kiq_describe_user_scram_credentials_response_t *out;
} forwarded_describe_t;

static void described(void *ctx)
{
    forwarded_describe_t *f = ctx;
    kiq_request_respond(f->r, f->out);
}

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
    if (r->listener == KIQ_LISTENER_CONTROL || !b->cluster) {
        /* forwarded here, or a standalone broker */
        if (b->controller) {
            kiq_controller_describe_scram(b->controller, request, &r->arena, out);
        } else {
            out->error_code = KIQ_ERR_NOT_CONTROLLER;
            out->error_message = kiq_request_str(r, "SCRAM credentials are kept by a controller quorum: this node hosts none");
        }
        return KIQ_HANDLER_RESPOND;
    }
    forwarded_describe_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
    *f = (forwarded_describe_t){r, out};
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_whole(b, KIQ_API_DESCRIBE_USER_SCRAM_CREDENTIALS, request, DESCRIBE_WAIT_MS, &r->arena, out,
                              described, f);
    return KIQ_HANDLER_PARKED;
}
