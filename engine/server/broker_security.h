/* The client listener's security: its protocol, TLS context and SASL
 * setup, built with the broker (see broker.h for their owners). */
#ifndef KIQ_SERVER_BROKER_SECURITY_H
#define KIQ_SERVER_BROKER_SECURITY_H

#include "server/broker.h"

/* Once the listeners, roles and quorum are known: b->protocol, b->tls and
 * b->sasl from config. -1 with the reason for a TLS or SASL setup that
 * does not load, a control plane that is not PLAINTEXT, or TLS or SASL on
 * a node of a cluster of more than itself (brokers reach each other in
 * plaintext on the client listener). */
int kiq_broker_security_setup(kiq_broker_t *b, const kiq_config_t *config, const kiq_listener_t *data,
                              const kiq_listener_t *control);

#endif
