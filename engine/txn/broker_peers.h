/* Lines from this broker to the others, by broker id (net/peer_channel.h,
 * owned), found through the metadata cache and kept between requests: what
 * the transaction coordinator's marker loop and a leader's transaction
 * verifier use, each its own set.
 *
 * An owned set (queued false: kiq_peer_channel_open lines) is used by ONE
 * thread, which calls everything here except kiq_broker_peers_shutdown; a
 * queued set (kiq_peer_channel_new lines, each with its worker) by any
 * thread: its mutex guards the list. */
#ifndef KIQ_TXN_BROKER_PEERS_H
#define KIQ_TXN_BROKER_PEERS_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/metadata_cache.h"
#include "metrics/registry.h"
#include "net/peer_channel.h"

typedef struct kiq_broker_peers kiq_broker_peers_t;

/* metadata (outlives the set) says where the brokers are; security (NULL:
 * plaintext; outlives the set) how to reach their client listeners; node_id names
 * this broker in the client id (kafkaiq-broker-<id>), which is how a
 * receiver tells a broker's requests from a client's; purpose names the
 * lines ("txn-markers-2"); their figures go to metrics (NULL: nowhere).
 * NULL: out of memory. */
kiq_broker_peers_t *kiq_broker_peers_new(kiq_metadata_cache_t *metadata, const struct kiq_peer_security *security,
                                         int32_t node_id, const char *purpose, bool queued, kiq_metrics_t *metrics);
void kiq_broker_peers_free(kiq_broker_peers_t *p);
/* Any thread: every blocked or later request fails promptly. */
void kiq_broker_peers_shutdown(kiq_broker_peers_t *p);
/* The line to broker id, pointed where the metadata says it is now; NULL
 * with the reason when it is not known live or the set is shutting down. */
kiq_peer_channel_t *kiq_broker_peers_line(kiq_broker_peers_t *p, int32_t id);

#endif
