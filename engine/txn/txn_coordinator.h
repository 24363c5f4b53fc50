/* The transaction coordinator (Kafka's TransactionCoordinator and
 * TransactionStateManager in one): each transactional id's producer id,
 * epoch and transaction, kept in the compacted internal topic
 * __transaction_state in Kafka's record formats and reloaded with the
 * partitions this broker leads (all of them when it is alone).
 *
 * Threads: request handlers call in from I/O threads; the replica manager
 * (cluster mode) tells it which partitions it leads. One mutex guards
 * every id; the only I/O under it is the append to the local log, which
 * keeps the log and the state in the same order. Its marker thread (from
 * start to stop) completes ending transactions: it writes their markers
 * (txn_markers.h) without the lock, then Complete*; and it aborts
 * transactions past their timeout. In cluster mode its verifier's thread
 * asks other coordinators about produces led here (txn_verifier.h). */
#ifndef KIQ_TXN_TXN_COORDINATOR_H
#define KIQ_TXN_TXN_COORDINATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/arena.h"
#include "log/topics.h"
#include "proto/messages.h"
#include "txn/txn_markers.h"
#include "txn/txn_metadata.h"

typedef struct kiq_txn_coordinator kiq_txn_coordinator_t;

/* What the coordinator works with, from the broker that owns it; all of it
 * outlives the coordinator. */
typedef struct kiq_txn_context {
    const kiq_config_t *config; /* its settings, and __transaction_state's */
    kiq_topics_t *topics;       /* where __transaction_state lives */
    bool cluster;               /* ids come with the partitions led here */
    /* A producer id nobody else was given; 0, or -1 with the reason. */
    int (*next_producer_id)(void *ctx, int64_t *id);
    /* How many partitions topic has as this broker knows it; -1: none such. */
    int32_t (*partitions_of)(void *ctx, const char *topic, size_t len);
    void *ctx;
    /* Where the markers go (topics, metadata, node id, the group
     * coordinator's hook). */
    kiq_txn_markers_context_t markers;
} kiq_txn_context_t;

/* The context is copied. NULL when out of memory. */
kiq_txn_coordinator_t *kiq_txn_coordinator_new(const kiq_txn_context_t *ctx);
/* Standalone: loads every partition of __transaction_state that exists.
 * Starts the marker thread. */
int kiq_txn_coordinator_start(kiq_txn_coordinator_t *tc);
/* Later calls answer NOT_COORDINATOR; the marker thread is joined. */
void kiq_txn_coordinator_stop(kiq_txn_coordinator_t *tc);
void kiq_txn_coordinator_free(kiq_txn_coordinator_t *tc);

/* Standalone: creates __transaction_state if it is not there yet (compact,
 * transaction.state.log.* settings), as FindCoordinator does in Kafka.
 * Kafka error code; in cluster mode the controller creates it. */
int kiq_txn_coordinator_ensure_topic(kiq_txn_coordinator_t *tc);
/* The partition of __transaction_state that holds id. */
int32_t kiq_txn_coordinator_partition_of(const kiq_txn_coordinator_t *tc, kiq_str_t id);

/* Cluster mode, any thread: this broker leads (led) partition `partition`
 * of __transaction_state, whose ids it then coordinates, loaded from the
 * log; or no longer does. Repeating a call changes nothing. */
void kiq_txn_coordinator_partition_led(kiq_txn_coordinator_t *tc, int32_t partition, bool led);

/* InitProducerId with a transactional id (req->transactional_id set):
 * fills out (producer id and epoch, or an error with -1/-1). *partition
 * and *need get the __transaction_state partition written and the high
 * watermark that covers the write (-1: nothing written), which the answer
 * waits for. version decides PRODUCER_FENCED (v4+) or
 * INVALID_PRODUCER_EPOCH. */
void kiq_txn_init_producer_id(kiq_txn_coordinator_t *tc, int16_t version, const kiq_init_producer_id_request_t *req,
                              kiq_init_producer_id_response_t *out, int32_t *partition, int64_t *need);

/* AddPartitionsToTxn v0-3: the partitions join the producer's transaction
 * (it becomes Ongoing). Each gets an error code in out (allocated in a);
 * an unknown partition fails the request (UNKNOWN_TOPIC_OR_PARTITION for
 * it, OPERATION_NOT_ATTEMPTED for the others), as Kafka does. *partition
 * and *need as for InitProducerId. */
void kiq_txn_add_partitions(kiq_txn_coordinator_t *tc, int16_t version, const kiq_add_partitions_to_txn_request_t *req,
                            kiq_add_partitions_to_txn_response_t *out, kiq_arena_t *a, int32_t *partition,
                            int64_t *need);
/* AddPartitionsToTxn v4+ for one transaction of the request (tr): with
 * verify_only, whether each partition is in its ongoing transaction (NONE,
 * INVALID_TXN_STATE when not, or the producer checks' errors), nothing
 * written; otherwise (a leader's add for a produce v12) the partitions are
 * added as by v0-3, to a transaction of version 2 (*partition and *need
 * then as for InitProducerId). Each partition's error code goes to
 * out (allocated in a). */
void kiq_txn_add_partitions_v4(kiq_txn_coordinator_t *tc, const kiq_add_partitions_to_txn_request_transactions_t *tr,
                               kiq_add_partitions_to_txn_response_results_by_transaction_t *out, kiq_arena_t *a,
                               int32_t *partition, int64_t *need);
/* Whether partition `partition` of topic is in transactional id's ongoing
 * transaction of producer_id at producer_epoch: NONE, INVALID_TXN_STATE,
 * PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, or NOT_COORDINATOR when
 * this broker does not coordinate the id (a produce's leader then cannot
 * tell). Any thread. */
int16_t kiq_txn_verify(kiq_txn_coordinator_t *tc, kiq_str_t id, int64_t producer_id, int16_t producer_epoch,
                       const char *topic, int32_t partition);

/* KIP-890 part 1, a leader's question before a transaction's first
 * records in a partition led here, under the log's verification guard
 * (kiq_partition_log_txn_guard): is the partition in the transaction? 1
 * with the answer in *err when it is known (kiq_txn_verify's when this
 * broker coordinates id; in cluster mode the coordinator's once it came
 * back, txn_verifier.h); 0 when the question went to the coordinator: the
 * partition's waiters are notified when the answer is in, and the same
 * call then returns it. add (transactions v2: a produce v12 or a
 * TxnOffsetCommit v5): the partition is added to the transaction instead,
 * which it begins when none is under way; in cluster mode the answer is in
 * once the id's __transaction_state partition (kiq_txn_coordinator_
 * partition_of) is replicated, whose waiters are notified then. Any
 * thread. */
int kiq_txn_check_partition(kiq_txn_coordinator_t *tc, kiq_str_t id, int64_t producer_id, int16_t producer_epoch,
                            const char *topic, int32_t partition, bool add, uint64_t guard, int16_t *err);

/* AddOffsetsToTxn: the group's __consumer_offsets partition joins the
 * transaction; the error code. */
int16_t kiq_txn_add_offsets(kiq_txn_coordinator_t *tc, int16_t version, const kiq_add_offsets_to_txn_request_t *req,
                            int32_t *partition, int64_t *need);

/* EndTxn: an Ongoing transaction becomes PrepareCommit or PrepareAbort
 * (written, answered once replicated: *partition and *need as for
 * InitProducerId), then the marker thread has its markers written and
 * completes it; a retry of the last end answers NONE. The error code:
 * INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
 * before v2), CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE,
 * NOT_COORDINATOR. v5+ (transactions v2) bumps the epoch at every end and
 * puts the producer id and epoch to go on with in out. */
int16_t kiq_txn_end(kiq_txn_coordinator_t *tc, int16_t version, const kiq_end_txn_request_t *req, int32_t *partition,
                    int64_t *need, kiq_end_txn_response_t *out);

/* Where this coordinator's markers go: what a leader uses to append the
 * markers another coordinator sends (WriteTxnMarkers). */
const kiq_txn_markers_context_t *kiq_txn_coordinator_markers(const kiq_txn_coordinator_t *tc);

/* ListTransactions: calls cb for every transactional id coordinated here
 * (Dead ones aside), under the coordinator's lock (cb must not call in). */
void kiq_txn_coordinator_foreach(kiq_txn_coordinator_t *tc, void (*cb)(const kiq_txn_t *t, void *ctx), void *ctx);

/* A copy of id's metadata into *out (kiq_txn_free it) and NONE;
 * NOT_COORDINATOR when another broker coordinates it,
 * TRANSACTIONAL_ID_NOT_FOUND when it is unknown (or dead). */
int16_t kiq_txn_coordinator_describe(kiq_txn_coordinator_t *tc, kiq_str_t id, kiq_txn_t *out);

#endif
