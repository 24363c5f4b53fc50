/* How this broker connects to the others (Kafka's inter-broker client
 * settings): TLS as the inter-broker listener's protocol says, with the
 * broker's own trust and key stores, and the SASL mechanism and user it
 * signs in with (sasl.mechanism.inter.broker.protocol, the username and
 * password of <mechanism>.sasl.jaas.config or sasl.jaas.config). Built
 * with the broker, read-only after; every thread that connects reads it. */
#ifndef KIQ_SECURITY_PEER_SECURITY_H
#define KIQ_SECURITY_PEER_SECURITY_H

#include "config/config.h"
#include "config/listeners.h"
#include "security/tls.h"

typedef struct kiq_peer_security {
    kiq_tls_t *tls;       /* client side; NULL: plaintext */
    char mechanism[32];   /* empty: no SASL */
    char user[256];
    char password[256];
    char principal[272];  /* "User:<user>" with SASL, else empty */
} kiq_peer_security_t;

/* For peers whose listener speaks protocol, signing in with the mechanism
 * config mechanism_id names (sasl.mechanism.inter.broker.protocol or
 * sasl.mechanism.controller.protocol); NULL with the reason (a TLS setup
 * that does not load, a mechanism not spoken, no user for it). */
kiq_peer_security_t *kiq_peer_security_new(const kiq_config_t *c, enum kiq_security_protocol protocol,
                                           enum kiq_config_id mechanism_id);
void kiq_peer_security_free(kiq_peer_security_t *s);

#endif
