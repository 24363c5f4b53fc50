/* SaslHandshake: the mechanism a connection of a SASL listener will
 * authenticate with, and the enabled ones. A mechanism not enabled, a
 * second handshake, or a handshake on a listener without SASL (Kafka's
 * ILLEGAL_SASL_STATE) is answered and the connection closed. After v0 the
 * client sends its tokens without Kafka headers (see the processor). */
#include "api/api.h"
#include "security/sasl.h"

int kiq_api_sasl_handshake_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_sasl_handshake_request_t *req = request;
    kiq_sasl_handshake_response_t *out = response;
    if (!r->sasl || !b->sasl) {
        out->error_code = KIQ_ERR_ILLEGAL_SASL_STATE;
        r->answer_then_close = true;
        return KIQ_HANDLER_RESPOND;
    }
    const char *names[8];
    int n = kiq_sasl_mechanisms(b->sasl, names, 8);
    out->mechanisms = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->mechanisms);
    for (int i = 0; i < n; i++) out->mechanisms[i] = KIQ_STR(names[i]);
    out->mechanisms_n = n;
    out->error_code = (int16_t)kiq_sasl_handshake(r->sasl, req->mechanism.p ? req->mechanism.p : "",
                                                  req->mechanism.p ? (size_t)req->mechanism.len : 0);
    if (out->error_code) r->answer_then_close = true;
    /* v0 (before KIP-152): the tokens follow as frames of their own; a re-authentication needs v1 */
    else if (r->header.api_version == 0 && !kiq_sasl_authenticated(r->sasl)) kiq_sasl_set_raw_tokens(r->sasl);
    return KIQ_HANDLER_RESPOND;
}
