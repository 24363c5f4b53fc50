/* CreateDelegationToken (KIP-48): a token for the requester (or the owner
 * v3 names) made by the active controller (see controller.h), forwarded
 * there in a cluster; a token for another owner needs CREATE_TOKENS on
 * that user (KIP-373, DELEGATION_TOKEN_AUTHORIZATION_FAILED). Refused
 * before it, as Kafka's broker answers: the owner and requester named,
 * the timestamps -1; a renewer other than a User is INVALID_PRINCIPAL_TYPE. */
#include <stdbool.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"

#define TOKEN_WAIT_MS 30000

int kiq_api_create_delegation_token_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_create_delegation_token_request_t *req = request;
    kiq_create_delegation_token_response_t *out = response;
    const char *principal;
    int16_t err = kiq_dtoken_request_check(b, r, req->kafkaiq_requester, &principal);
    for (int i = 0; !err && i < req->renewers_n; i++) {
        kiq_str_t t = req->renewers[i].principal_type;
        if (!t.p || t.len != 4 || memcmp(t.p, "User", 4) != 0) err = KIQ_ERR_INVALID_PRINCIPAL_TYPE;
    }
    char owner[300];
    bool named = req->owner_principal_name.p && req->owner_principal_name.len > 0;
    if (named) kiq_dtoken_principal_join(owner, sizeof owner, req->owner_principal_type, req->owner_principal_name);
    if (!err && named && r->listener != KIQ_LISTENER_CONTROL && strcmp(owner, principal) != 0 &&
        !kiq_api_allowed(b, r, KIQ_OP_CREATE_TOKENS, KIQ_RES_USER, kiq_request_str(r, owner)))
        err = KIQ_ERR_DELEGATION_TOKEN_AUTHORIZATION_FAILED;
    if (!err) {
        if (b->cluster) {
            kiq_create_delegation_token_request_t *to = kiq_arena_alloc(&r->arena, sizeof *to);
            *to = *req;
            to->kafkaiq_requester = kiq_request_str(r, principal);
            return kiq_api_to_controller(b, r, KIQ_API_CREATE_DELEGATION_TOKEN, to, TOKEN_WAIT_MS, out);
        }
        kiq_controller_create_token(b->controller, principal, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    kiq_dtoken_principal_split(&r->arena, named ? owner : principal, &out->principal_type, &out->principal_name);
    kiq_dtoken_principal_split(&r->arena, principal, &out->token_requester_principal_type,
                               &out->token_requester_principal_name);
    out->error_code = err;
    out->issue_timestamp_ms = out->expiry_timestamp_ms = out->max_timestamp_ms = -1;
    return KIQ_HANDLER_RESPOND;
}
