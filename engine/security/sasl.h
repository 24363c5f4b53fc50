/* SASL on the SASL_PLAINTEXT and SASL_SSL listeners, as Kafka serves it
 * (KIP-43, KIP-152): SaslHandshake picks a mechanism of
 * sasl.enabled.mechanisms, SaslAuthenticate carries its tokens; until
 * that succeeds only ApiVersions and the two SASL requests are taken.
 * PLAIN's users come from plain.sasl.jaas.config in Kafka's JAAS form;
 * SCRAM's credentials from a lookup the broker installs; OAUTHBEARER's
 * tokens are validated by sasl_oauth.c. A session lasts what
 * connections.max.reauth.ms and the credential's expiry allow (KIP-368):
 * past it only a re-authentication (a new handshake and token on the same
 * connection, the same principal) is taken.
 *
 * kiq_sasl_t: one listener's setup, built on the thread building the
 * broker, read-only once its processors run. kiq_sasl_session_t: one
 * connection's exchange, reference-counted (its connection and the
 * request it has out hold one each, so a connection closed under a
 * handler leaves the handler a live session); its exchange state is the
 * handler thread's while the connection's one request is with it, the
 * processor reads only `authenticated`. */
#ifndef KIQ_SECURITY_SASL_H
#define KIQ_SECURITY_SASL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "security/sasl_scram.h"

typedef struct kiq_sasl kiq_sasl_t;

/* What a listener counts (Kafka's socket-server-metrics names them). */
enum kiq_sasl_count { KIQ_SASL_AUTH_OK, KIQ_SASL_AUTH_FAILED, KIQ_SASL_REAUTH_OK, KIQ_SASL_REAUTH_FAILED,
                      KIQ_SASL_COUNTS };
typedef struct kiq_sasl_session kiq_sasl_session_t;

/* From sasl.enabled.mechanisms and plain.sasl.jaas.config; NULL with
 * the reason (an unknown or unserved mechanism, PLAIN without users, a
 * JAAS text that does not parse). */
kiq_sasl_t *kiq_sasl_new(const kiq_config_t *c);
void kiq_sasl_free(kiq_sasl_t *s);
/* Before the listener starts: where SCRAM credentials are looked up
 * (lookup is called on handler threads). */
void kiq_sasl_set_scram_lookup(kiq_sasl_t *s, kiq_scram_lookup_fn lookup, void *ctx);
/* SCRAM by delegation token (tokenauth=true): the credential of token_id
 * for m, its owner (Type:name) and its expiry (wall clock ms); 0, or -1
 * when there is no such token. Called on handler threads. */
typedef int (*kiq_sasl_token_lookup_fn)(void *ctx, enum kiq_scram_mech m, const char *token_id,
                                        kiq_scram_credential_t *out, char *owner, size_t cap, int64_t *expiry_ms);
void kiq_sasl_set_token_lookup(kiq_sasl_t *s, kiq_sasl_token_lookup_fn lookup, void *ctx);
/* The enabled mechanisms' names, in configured order: their count. */
int kiq_sasl_mechanisms(const kiq_sasl_t *s, const char **names, int max);

/* Authentications and re-authentications so far, by outcome. Any thread. */
uint64_t kiq_sasl_count(const kiq_sasl_t *s, enum kiq_sasl_count which);

/* Parses a login module's JAAS text (one module, a control flag, then
 * key=value options, ';' at the end): each option through fn (values
 * unquoted); -1 with the reason when it does not parse or fn fails. */
int kiq_sasl_jaas_options(const char *jaas, int (*fn)(void *ctx, const char *key, const char *value), void *ctx);
/* Parses Kafka's PlainLoginModule JAAS text: each user_NAME="password"
 * through fn; -1 with the reason when it does not parse. */
int kiq_sasl_jaas_users(const char *jaas, int (*fn)(void *ctx, const char *user, const char *password), void *ctx);

kiq_sasl_session_t *kiq_sasl_session_new(const kiq_sasl_t *s);
kiq_sasl_session_t *kiq_sasl_session_ref(kiq_sasl_session_t *ss);
void kiq_sasl_session_unref(kiq_sasl_session_t *ss);
bool kiq_sasl_authenticated(const kiq_sasl_session_t *ss);
/* Whether a request of api_key may come at now_ms (mono clock): SaslHandshake
 * and SaslAuthenticate always; ApiVersions before authentication; any
 * other once authenticated and until the session's lifetime is over. */
bool kiq_sasl_allows(const kiq_sasl_session_t *ss, int16_t api_key, int64_t now_ms);
/* "User:name" once authenticated, else NULL. */
const char *kiq_sasl_principal(const kiq_sasl_session_t *ss);
/* Authenticated by a delegation token (its owner the principal). */
bool kiq_sasl_token_authenticated(const kiq_sasl_session_t *ss);

/* SaslHandshake: 0, or UNSUPPORTED_SASL_MECHANISM (not enabled) or
 * ILLEGAL_SASL_STATE (a second handshake before authenticating). One
 * after authentication begins a re-authentication. */
int kiq_sasl_handshake(kiq_sasl_session_t *ss, const char *mechanism, size_t len);
/* After a SaslHandshake v0 (clients before KIP-152): the tokens come as
 * frames of their own, without Kafka headers, until authenticated. Set by
 * the handler, read by the processor between requests. */
void kiq_sasl_set_raw_tokens(kiq_sasl_session_t *ss);
/* Whether the connection's next frame is such a token. */
bool kiq_sasl_raw_token_next(const kiq_sasl_session_t *ss);
/* SaslAuthenticate: one token in; 0 with the answer (malloc'd, possibly
 * empty) in *out, or ILLEGAL_SASL_STATE / SASL_AUTHENTICATION_FAILED with
 * Kafka's message in the error slot. Any failure ends the session. */
int kiq_sasl_authenticate(kiq_sasl_session_t *ss, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);
/* The lifetime (ms) the last authentication granted, 0 for none. */
int64_t kiq_sasl_session_lifetime_ms(const kiq_sasl_session_t *ss);

#endif
