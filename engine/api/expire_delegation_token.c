/* ExpireDelegationToken (KIP-48): a token named by its HMAC expires after
 * a period or at once; decided by this node's controller (see controller.h). */
#include "api/api.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"

int kiq_api_expire_delegation_token_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_expire_delegation_token_response_t *out = response;
    const char *principal;
    if ((out->error_code = kiq_dtoken_request_check(b, r, &principal)) == 0)
        kiq_controller_expire_token(b->controller, principal, request, out);
    else
        out->expiry_timestamp_ms = -1; /* Kafka's error timestamp */
    return KIQ_HANDLER_RESPOND;
}
