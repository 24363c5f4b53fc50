/* SaslAuthenticate: one token of the mechanism the handshake chose, and
 * the server's answer. A refused or malformed token gets
 * SASL_AUTHENTICATION_FAILED with Kafka's message and the connection is
 * closed after it; so does a request out of turn or on a listener without
 * SASL (ILLEGAL_SASL_STATE). v1+ answers the session's lifetime
 * (KIP-368): the client re-authenticates within it. */
#include <stdlib.h>

#include "api/api.h"
#include "core/error.h"
#include "core/say.h"
#include "security/sasl.h"

int kiq_api_sasl_authenticate_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_sasl_authenticate_request_t *req = request;
    kiq_sasl_authenticate_response_t *out = response;
    if (!r->sasl) {
        out->error_code = KIQ_ERR_ILLEGAL_SASL_STATE;
        out->error_message = kiq_request_str(r, "SaslAuthenticate on a listener without SASL");
        r->answer_then_close = true;
        return KIQ_HANDLER_RESPOND;
    }
    uint8_t *token;
    size_t len;
    kiq_error_clear();
    out->error_code = (int16_t)kiq_sasl_authenticate(r->sasl, req->auth_bytes.p ? req->auth_bytes.p : (const uint8_t *)"",
                                                     req->auth_bytes.p ? (size_t)req->auth_bytes.len : 0, &token, &len);
    if (out->error_code) {
        /* the reason stays here: the client hears Kafka's words, nothing about which part was wrong */
        KIQ_WARN_LIMITED("connection %s: SASL authentication failed: %s", r->peer, kiq_error_get());
        out->error_message = kiq_request_error_message(r);
        out->auth_bytes = (kiq_bytes_t){(const uint8_t *)"", 0};
        r->answer_then_close = true;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_request_own(r, token);
    out->auth_bytes = (kiq_bytes_t){token, (int32_t)len};
    r->sasl_raw_answer = out->auth_bytes;
    if (kiq_sasl_authenticated(r->sasl)) out->session_lifetime_ms = kiq_sasl_session_lifetime_ms(r->sasl);
    if (kiq_sasl_authenticated(r->sasl))
        KIQ_DEBUG("connection %s: authenticated as %s", r->peer, kiq_sasl_principal(r->sasl));
    return KIQ_HANDLER_RESPOND;
}
