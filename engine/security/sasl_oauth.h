/* OAUTHBEARER's server side (RFC 7628, KIP-255, KIP-768) as Kafka serves
 * it: the client's first message carries a bearer token, validated either
 * as Kafka's default unsecured validator does (an unsigned JWT, alg none,
 * its options from the listener's oauthbearer.sasl.jaas.config) or, when
 * sasl.oauthbearer.jwks.endpoint.url names a file, as a JWS signed by one
 * of that JWKS's keys (through cjose) with the expected audience and
 * issuer and Kafka's clock skew. The principal is the subject claim; the
 * token's expiry bounds the session (KIP-368).
 *
 * kiq_oauth_t: built on the thread building the broker, read-only once
 * the listener runs (handler threads validate against it at once). */
#ifndef KIQ_SECURITY_SASL_OAUTH_H
#define KIQ_SECURITY_SASL_OAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

typedef struct kiq_oauth kiq_oauth_t;

/* From the sasl.oauthbearer.* configs and the JAAS options; NULL with the
 * reason (a JWKS that cannot be read or has no usable key, a URL that is
 * not a file, an option out of range). */
kiq_oauth_t *kiq_oauth_new(const kiq_config_t *c);
void kiq_oauth_free(kiq_oauth_t *o);

/* RFC 7628's client first message, gs2 header then key=value pairs each
 * ended by \x01 and a final \x01: 0 with the bearer token (pointing into
 * in) and the authorization id (empty when none); -1 with the reason. */
int kiq_oauth_client_message(const uint8_t *in, size_t len, const char **token, size_t *token_len,
                             const char **authzid, size_t *authzid_len);

enum { KIQ_OAUTH_INVALID = 1, KIQ_OAUTH_SCOPE = 2 };

typedef struct kiq_oauth_token {
    char principal[256];
    int64_t expires_ms; /* the exp claim, wall clock */
} kiq_oauth_token_t;

/* Validates a token at now_ms (wall clock): 0 with its principal and
 * expiry; KIQ_OAUTH_INVALID (unparseable, unsigned where a signature is
 * needed, a bad signature, expired, a wrong audience or issuer) or
 * KIQ_OAUTH_SCOPE (a required scope missing) with the reason in the
 * error slot. */
int kiq_oauth_validate(const kiq_oauth_t *o, const char *token, size_t len, int64_t now_ms, kiq_oauth_token_t *out);

#endif
