/* The listeners' security (the client and control-plane listeners'
 * protocols, TLS contexts and SASL setups) and the clients this node
 * reaches the others' listeners with, built with the broker (see broker.h
 * for their owners). */
#ifndef KIQ_SERVER_BROKER_SECURITY_H
#define KIQ_SERVER_BROKER_SECURITY_H

#include "server/broker.h"

/* Once the listeners, roles and quorum are known: b->protocol, b->tls and
 * b->sasl from config, and in a cluster b->peer_security, how this broker
 * reaches the others' client listeners (the inter-broker listener).
 * The control-plane listener's likewise: b->control_tls, b->control_sasl
 * and b->controller_security. -1 with the reason for a TLS or SASL setup
 * that does not load, or an inter-broker listener or protocol other than
 * the client listener's. */
int kiq_broker_security_setup(kiq_broker_t *b, const kiq_config_t *config, const kiq_listener_t *data,
                              const kiq_listener_t *control);

#endif
