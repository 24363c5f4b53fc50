/* See delegation_token_checks.h. */
#include "api/delegation_token_checks.h"

#include <string.h>

#include "api/authorize.h"
#include "proto/errors.h"
#include "security/sasl.h"
#include "server/controller_link.h"

int16_t kiq_dtoken_request_check(kiq_broker_t *b, kiq_request_t *r, kiq_str_t requester, const char **principal)
{
    if (r->listener == KIQ_LISTENER_CONTROL && requester.p && requester.len > 0) {
        char *p = kiq_arena_alloc(&r->arena, (size_t)requester.len + 1);
        memcpy(p, requester.p, (size_t)requester.len);
        p[requester.len] = 0;
        *principal = p;
        return kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION) ? 0 : KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
    }
    const char *p = r->sasl ? kiq_sasl_principal(r->sasl) : NULL;
    *principal = p ? p : "User:ANONYMOUS";
    if (!p || kiq_sasl_token_authenticated(r->sasl)) return KIQ_ERR_DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
    if (b->cluster && r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b))
        return KIQ_ERR_NOT_CONTROLLER;
    if (!b->cluster && !b->controller) return KIQ_ERR_NOT_CONTROLLER;
    return 0;
}
