/* ExpireDelegationToken (KIP-48): a token named by its HMAC expires after
 * a period or at once; decided by the active controller (see
 * controller.h), forwarded there in a cluster. */
#include "api/api.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"

#define TOKEN_WAIT_MS 30000

int kiq_api_expire_delegation_token_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_expire_delegation_token_request_t *req = request;
    kiq_expire_delegation_token_response_t *out = response;
    const char *principal;
    if ((out->error_code = kiq_dtoken_request_check(b, r, req->kafkaiq_requester, &principal)) != 0) {
        out->expiry_timestamp_ms = -1; /* Kafka's error timestamp */
        return KIQ_HANDLER_RESPOND;
    }
    if (b->cluster) {
        kiq_expire_delegation_token_request_t *to = kiq_arena_alloc(&r->arena, sizeof *to);
        *to = *req;
        to->kafkaiq_requester = kiq_request_str(r, principal);
        return kiq_api_to_controller(b, r, KIQ_API_EXPIRE_DELEGATION_TOKEN, to, TOKEN_WAIT_MS, out);
    }
    kiq_controller_expire_token(b->controller, principal, req, out);
    return KIQ_HANDLER_RESPOND;
}
