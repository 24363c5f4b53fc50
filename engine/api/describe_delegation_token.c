/* DescribeDelegationToken (KIP-48): the tokens of the owners named (null:
 * all, an empty list: none), from the active controller's image (here, or
 * forwarded there in a cluster). With an authorizer the broker the client
 * asked leaves out what it may not see (KIP-373): a token is the client's
 * own, or it needs DESCRIBE on the token or DESCRIBE_TOKENS on its owner. */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/delegation_token_checks.h"
#include "controller/controller.h"
#include "controller/delegation_tokens.h"
#include "server/controller_link.h"

#define TOKEN_WAIT_MS 30000

static void filter(kiq_broker_t *b, kiq_request_t *r, kiq_describe_delegation_token_response_t *out)
{
    if (!b->authorizer || out->error_code || r->listener == KIQ_LISTENER_CONTROL) return;
    int kept = 0;
    for (int i = 0; i < out->tokens_n; i++) {
        const kiq_describe_delegation_token_response_tokens_t *t = &out->tokens[i];
        char owner[300];
        kiq_dtoken_principal_join(owner, sizeof owner, t->principal_type, t->principal_name);
        bool seen = strcmp(owner, r->principal) == 0 ||
                    kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_DELEGATION_TOKEN, t->token_id) ||
                    kiq_api_allowed(b, r, KIQ_OP_DESCRIBE_TOKENS, KIQ_RES_USER, kiq_request_str(r, owner));
        if (seen) out->tokens[kept++] = *t;
    }
    out->tokens_n = kept;
}

typedef struct described {
    kiq_broker_t *b;
    kiq_request_t *r;
    kiq_describe_delegation_token_response_t *out;
    void *parked;
} described_t;

static void answered(void *ctx)
{
    described_t *d = ctx;
    filter(d->b, d->r, d->out);
    kiq_api_answer_parked(d->parked);
}

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
        described_t *d = kiq_arena_alloc(&r->arena, sizeof *d);
        *d = (described_t){b, r, out, kiq_api_park_for_link(b, r, out)};
        kiq_controller_link_whole(b, KIQ_API_DESCRIBE_DELEGATION_TOKEN, to, TOKEN_WAIT_MS, &r->arena, out, answered,
                                  d);
        return KIQ_HANDLER_PARKED;
    }
    kiq_controller_describe_tokens(b->controller, req, &r->arena, out);
    filter(b, r, out);
    return KIQ_HANDLER_RESPOND;
}
