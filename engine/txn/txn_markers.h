/* Transaction markers, from the coordinator to the partitions of a
 * transaction (Kafka's TransactionMarkerChannelManager) and, on the
 * leader's side, into the log (what WriteTxnMarkers does): a partition
 * led here gets the marker appended directly; one led elsewhere gets it
 * with WriteTxnMarkers to its leader. A marker counts as written once the
 * partition's high watermark covers it, so a leader change cannot lose it
 * after the coordinator moved on to Complete*. */
#ifndef KIQ_TXN_TXN_MARKERS_H
#define KIQ_TXN_TXN_MARKERS_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/metadata_cache.h"
#include "log/partition_log.h"
#include "log/topics.h"
#include "metrics/registry.h"
#include "txn/txn_metadata.h"

/* What the markers work with; all of it outlives them. */
typedef struct kiq_txn_markers_context {
    kiq_topics_t *topics;
    kiq_metadata_cache_t *metadata; /* cluster mode: where the leaders are; NULL alone */
    int32_t node_id;
    kiq_metrics_t *metrics; /* the broker's: the lines to the leaders report there */
    const struct kiq_peer_security *security; /* how to reach them; NULL: plaintext */
    /* A marker reached a partition of __consumer_offsets led here: the
     * group coordinator applies (commit) or drops the offsets the producer
     * committed in its transaction. Any thread. */
    void (*offsets_marker)(void *ctx, int32_t partition, int64_t producer_id, bool commit);
    void *ctx;
} kiq_txn_markers_context_t;

/* Any thread: appends m to partition `partition` of topic when this broker
 * leads it; *need gets the high watermark that covers it. The Kafka error
 * code: NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
 * KAFKA_STORAGE_ERROR, INVALID_PRODUCER_EPOCH,
 * TRANSACTION_COORDINATOR_FENCED (the reason in the error slot). */
int16_t kiq_txn_marker_append(const kiq_txn_markers_context_t *c, const kiq_txn_marker_t *m, kiq_str_t topic,
                              int32_t partition, int64_t *need);

/* The coordinator's marker sender; owned by its one thread (connections
 * to the other brokers are kept between calls). */
typedef struct kiq_txn_markers kiq_txn_markers_t;

kiq_txn_markers_t *kiq_txn_markers_new(const kiq_txn_markers_context_t *c);
void kiq_txn_markers_free(kiq_txn_markers_t *mk);
/* Any thread: makes a blocked kiq_txn_markers_deliver return soon. */
void kiq_txn_markers_shutdown(kiq_txn_markers_t *mk);
/* Writes m to each of the n partitions not yet done[i] and waits (at most
 * timeout_ms in all) for each to be replicated; done[i] is set for each
 * that is (or that no longer exists, or refused it as fenced: there is
 * nothing more to do there). Returns how many are left. */
int kiq_txn_markers_deliver(kiq_txn_markers_t *mk, const kiq_txn_marker_t *m, const kiq_txn_partition_t *ps, int n,
                            bool *done, int timeout_ms);

#endif
