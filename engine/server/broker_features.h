/* The feature levels a broker answers ApiVersions with (KIP-584). A
 * cluster broker answers what the controller last pushed (UpdateMetadata,
 * controller/metadata_cache.h), so every broker that caught up answers the
 * same levels and epoch. A standalone broker is its own controller: it
 * starts at the bootstrap levels, decides UpdateFeatures by the same rules
 * and keeps what it finalized in its first log directory
 * (.broker-configs/features.properties), its epoch counting the updates.
 *
 * Any thread: the broker's features_mu guards the standalone levels. */
#ifndef KIQ_SERVER_BROKER_FEATURES_H
#define KIQ_SERVER_BROKER_FEATURES_H

#include "controller/features.h"
#include "include/kafkaiq.h"
#include "proto/messages.h"

/* Standalone, at start: the saved levels (none saved: the bootstrap
 * ones). 0, or -1 with the reason (an unreadable or malformed file). */
int kiq_broker_features_load(kiq_broker_t *b);
/* The finalized levels and their epoch this broker answers with now. */
void kiq_broker_features(kiq_broker_t *b, kiq_features_t *out);
/* Standalone UpdateFeatures (v0's allow_downgrade already an upgrade
 * type): checked as the controller checks it, all or nothing, saved
 * before it is answered (not when validate_only). 0 or a Kafka error
 * code, the reason in the error slot. */
int kiq_broker_features_update(kiq_broker_t *b, const kiq_update_features_request_t *req);

#endif
