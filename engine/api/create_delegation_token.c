/* CreateDelegationToken (KIP-48): a token for the requester (or the owner
 * v3 names) made by this node's controller; see controller.h. */
#include "api/api.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"

int kiq_api_create_delegation_token_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_create_delegation_token_response_t *out = response;
    const char *principal;
    if ((out->error_code = kiq_dtoken_request_check(b, r, &principal)) == 0)
        kiq_controller_create_token(b->controller, principal, request, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
