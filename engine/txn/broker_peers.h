/* Connections from this broker to the others, by broker id, found through
 * the metadata cache and kept between requests: what the transaction
 * coordinator's marker thread and a leader's transaction verifier use.
 *
 * A set is owned by ONE thread, which calls everything here except
 * kiq_broker_peers_shutdown; its mutex only guards the connections
 * against that call. */
#ifndef KIQ_TXN_BROKER_PEERS_H
#define KIQ_TXN_BROKER_PEERS_H

#include <stdint.h>

#include "controller/metadata_cache.h"
#include "net/client.h"

typedef struct kiq_broker_peers kiq_broker_peers_t;

/* metadata (outlives the set) says where the brokers are; node_id names
 * this broker in the client id (kafkaiq-broker-<id>), which is how a
 * receiver tells a broker's requests from a client's. NULL: out of memory. */
kiq_broker_peers_t *kiq_broker_peers_new(kiq_metadata_cache_t *metadata, int32_t node_id);
void kiq_broker_peers_free(kiq_broker_peers_t *p);
/* Any thread: every blocked or later request fails promptly. */
void kiq_broker_peers_shutdown(kiq_broker_peers_t *p);
/* A live connection to broker id (the kept one, or a new one); NULL with
 * the reason. A failed request closes it: the next call connects again. */
kiq_client_conn_t *kiq_broker_peers_conn(kiq_broker_peers_t *p, int32_t id);

#endif
