/* KIP-890 part 1 on a leader whose transactions are coordinated elsewhere
 * (Kafka's AddPartitionsToTxnManager): before a transaction's first records
 * go into a partition led here, the transaction's coordinator is asked,
 * with AddPartitionsToTxn v4 verify_only, whether the partition is in the
 * producer's ongoing transaction. A late or stray produce then cannot
 * start a transaction nobody will end. Under transactions v2 (a produce
 * v12) the same request without verify_only has the partition added.
 *
 * A question is keyed by the log's verification guard
 * (kiq_partition_log_txn_guard) with the producer, epoch and partition;
 * the verifier's one thread sends the questions queued, one request per
 * coordinator, stores each answer for a while (every request waiting on
 * it reads it) and notifies the partition's waiters
 * (kiq_topics_notify_append) when it is in.
 *
 * Threads: kiq_txn_verifier_ask from any thread; the mutex guards the
 * questions; the connections are the thread's. */
#ifndef KIQ_TXN_TXN_VERIFIER_H
#define KIQ_TXN_TXN_VERIFIER_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/metadata_cache.h"
#include "proto/types.h"
#include "log/topics.h"
#include "metrics/registry.h"

/* Questions waiting or answered at once; past it, more are refused as
 * retriable, so a flood of producers cannot grow the table. */
#define KIQ_TXN_VERIFIER_MAX_QUESTIONS 4096

typedef struct kiq_txn_verifier kiq_txn_verifier_t;

struct kiq_peer_security;

/* topics (to notify waiters), metadata (where coordinators are) and
 * security (how to reach them; NULL: plaintext) outlive the verifier;
 * node_id names this broker to the others. NULL: out of memory. */
kiq_txn_verifier_t *kiq_txn_verifier_new(kiq_topics_t *topics, kiq_metadata_cache_t *metadata,
                                         const struct kiq_peer_security *security, int32_t node_id,
                                         kiq_metrics_t *metrics);
int kiq_txn_verifier_start(kiq_txn_verifier_t *v);
/* Any thread: questions not yet answered are answered
 * COORDINATOR_NOT_AVAILABLE, and the thread is joined. */
void kiq_txn_verifier_stop(kiq_txn_verifier_t *v);
void kiq_txn_verifier_free(kiq_txn_verifier_t *v);

/* Any thread: whether partition `partition` of topic is in transactional
 * id's ongoing transaction of producer_id at producer_epoch, asked under
 * guard; add (transactions v2): the coordinator adds it instead. 1 with the coordinator's error code in *err when the answer is in
 * (NONE, INVALID_TXN_STATE, PRODUCER_FENCED, ..., COORDINATOR_NOT_AVAILABLE
 * when it could not be asked, the reason in the error slot); 0 when it is
 * not yet: the partition's waiters are notified when it is. */
int kiq_txn_verifier_ask(kiq_txn_verifier_t *v, kiq_str_t id, int64_t producer_id, int16_t producer_epoch,
                         const char *topic, int32_t partition, bool add, uint64_t guard, int16_t *err);

#endif
