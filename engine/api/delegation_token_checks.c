/* See delegation_token_checks.h. */
#include "api/delegation_token_checks.h"

#include "proto/errors.h"
#include "security/sasl.h"

int16_t kiq_dtoken_request_check(kiq_broker_t *b, kiq_request_t *r, const char **principal)
{
    const char *p = r->sasl ? kiq_sasl_principal(r->sasl) : NULL;
    *principal = p ? p : "User:ANONYMOUS";
    if (!p || kiq_sasl_token_authenticated(r->sasl)) return KIQ_ERR_DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
    if (!b->controller) return KIQ_ERR_NOT_CONTROLLER;
    return 0;
}
