/* Requests one broker of the cluster sends another (transaction markers, a
 * share group's coordinator asking the partition leaders) name their sender
 * in the client id, "kafkaiq-broker-<id>", as the peer lines set it; where
 * brokers sign in to each other with SASL, also by the principal, the
 * inter-broker user's; with an authorizer that principal must also hold
 * ClusterAction. */
#ifndef KIQ_API_PEER_BROKER_H
#define KIQ_API_PEER_BROKER_H

#include <stdint.h>

#include "api/api.h"

/* The id of the live broker of this cluster r names as its sender; -1 for
 * anything else (a client, a standalone broker). */
int32_t kiq_api_peer_broker(kiq_broker_t *b, const kiq_request_t *r);

#endif
