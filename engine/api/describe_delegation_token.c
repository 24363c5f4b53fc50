/* DescribeDelegationToken (KIP-48): the tokens of the owners named (null:
 * all, an empty list: none), from the active controller's image (here, or
 * forwarded there in a cluster). */
#include "api/api.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"
#include "server/controller_link.h"

#define TOKEN_WAIT_MS 30000

int kiq_api_describe_delegation_token_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_delegation_token_request_t *req = request;
    kiq_describe_delegation_token_response_t *out = response;
    const char *principal;
    if ((out->error_code = kiq_dtoken_request_check(b, r, req->kafkaiq_requester, &principal)) != 0)
        return KIQ_HANDLER_RESPOND;
    if (b->cluster) {
        kiq_describe_delegation_token_request_t *to = kiq_arena_alloc(&r->arena, sizeof *to);
        *to = *req;
        to->kafkaiq_requester = kiq_request_str(r, principal);
        void *ctx = kiq_api_park_for_link(b, r, out);
        kiq_controller_link_whole(b, KIQ_API_DESCRIBE_DELEGATION_TOKEN, to, TOKEN_WAIT_MS, &r->arena, out,
                                  kiq_api_answer_parked, ctx);
        return KIQ_HANDLER_PARKED;
    }
    kiq_controller_describe_tokens(b->controller, req, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
