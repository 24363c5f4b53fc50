/* DescribeDelegationToken (KIP-48): the tokens of the owners named (null:
 * all, an empty list: none), from this node's controller's image. */
#include "api/api.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"

int kiq_api_describe_delegation_token_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_describe_delegation_token_response_t *out = response;
    const char *principal;
    if ((out->error_code = kiq_dtoken_request_check(b, r, &principal)) == 0)
        kiq_controller_describe_tokens(b->controller, request, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
