/* A transactional id's state as Kafka's transaction coordinator keeps it
 * (TransactionMetadata): its producer id and epoch, timeout, state and the
 * partitions of the ongoing transaction; and the coordinator's rules, as
 * pure checks. Each check answers a request against the current state
 * with a Kafka error code and, when it may go ahead, what changes; the
 * coordinator applies the change to a copy, writes the copy to
 * __transaction_state, and only then makes it current and answers. The
 * rules of the original protocol (transaction version 0/1, what librdkafka
 * speaks) hold for every transaction; one ended with EndTxn v5
 * (transactions v2, KIP-890 part 2) also has its epoch bumped at the end,
 * and a retry of that end is told by the epoch before the bump.
 *
 * Thread safety: a kiq_txn_t is the coordinator's, under its lock; the
 * functions here touch nothing else. */
#ifndef KIQ_TXN_TXN_METADATA_H
#define KIQ_TXN_TXN_METADATA_H

#include <stdbool.h>
#include <stdint.h>

/* The states, numbered as TransactionLogValue.transaction_status. */
typedef enum kiq_txn_state {
    KIQ_TXN_EMPTY = 0,
    KIQ_TXN_ONGOING = 1,
    KIQ_TXN_PREPARE_COMMIT = 2,
    KIQ_TXN_PREPARE_ABORT = 3,
    KIQ_TXN_COMPLETE_COMMIT = 4,
    KIQ_TXN_COMPLETE_ABORT = 5,
    KIQ_TXN_DEAD = 6,
    KIQ_TXN_PREPARE_EPOCH_FENCE = 7,
    KIQ__TXN_STATES
} kiq_txn_state_t;

/* Kafka's names (DescribeTransactions, ListTransactions). */
extern const char *const kiq_txn_state_names[KIQ__TXN_STATES];

/* PrepareCommit or PrepareAbort: the markers are being written. */
bool kiq_txn_preparing(kiq_txn_state_t s);

/* An epoch this high is the last: the next InitProducerId takes a new
 * producer id at epoch 0 (Kafka's Short.MaxValue - 1). */
#define KIQ_TXN_LAST_EPOCH 32766

typedef struct kiq_txn_partition {
    char *topic; /* malloc'd */
    int32_t partition;
} kiq_txn_partition_t;

typedef struct kiq_txn {
    char *id; /* the transactional id, malloc'd */
    int64_t producer_id;
    int64_t previous_producer_id; /* before the last rotation to a new id; -1 */
    int16_t producer_epoch;
    /* the epoch before the last bump of the same producer id, in memory
     * only (Kafka's lastProducerEpoch): a retried InitProducerId naming it
     * gets the current epoch again, not PRODUCER_FENCED; -1 */
    int16_t last_epoch;
    int32_t timeout_ms;
    kiq_txn_state_t state;
    kiq_txn_partition_t *partitions; /* of the ongoing (or ending) transaction */
    int npartitions, cap;
    int64_t start_ms;   /* when the transaction began; -1 between transactions */
    int64_t updated_ms; /* the last change */
    /* the transaction version its producer speaks: 2 when the transaction
     * was begun by a produce or TxnOffsetCommit adding its partition, or
     * ended with EndTxn v5; 0 for AddPartitionsToTxn/AddOffsetsToTxn */
    int16_t client_version;
    /* a v2 end at the last epoch: the producer id it goes on with at epoch
     * 0 once the markers are written; -1 */
    int64_t next_producer_id;
    /* the last end was an abort forced by a fence (a new producer, a
     * timeout): the epoch before it ended nothing, so a v2 end naming that
     * epoch is the fenced producer's, not a retry (Kafka clears
     * lastProducerEpoch there); in memory only */
    bool fenced;
} kiq_txn_t;

/* A new id's metadata: no producer yet (-1), Empty. 0 or -1 (memory). */
int kiq_txn_init(kiq_txn_t *t, const char *id, int64_t now_ms);
void kiq_txn_free(kiq_txn_t *t);
/* dst (uninitialised) becomes a deep copy of src; 0 or -1 (memory). */
int kiq_txn_copy(kiq_txn_t *dst, const kiq_txn_t *src);
bool kiq_txn_has_partition(const kiq_txn_t *t, const char *topic, int32_t partition);
/* Adds the partition unless it is there; 0 or -1 (memory). */
int kiq_txn_add_partition(kiq_txn_t *t, const char *topic, int32_t partition);

/* What an InitProducerId does once allowed. */
typedef enum kiq_txn_init_action {
    KIQ_TXN_INIT_BUMP,         /* the next epoch (or a new producer id at epoch 0); Empty */
    KIQ_TXN_INIT_FENCE_ABORT,  /* an ongoing transaction: bump the epoch, abort it; the client retries */
    KIQ_TXN_INIT_CURRENT,      /* a retry of the last bump (its answer was lost): the current id and epoch */
} kiq_txn_init_action_t;

/* InitProducerId for transactional id t with timeout_ms and, for a
 * producer that had one (v3+), its producer id and epoch (-1, -1: none).
 * NONE with *action, or INVALID_TRANSACTION_TIMEOUT (not in
 * (0, max_timeout_ms]), PRODUCER_FENCED (an id or epoch not the current
 * ones), CONCURRENT_TRANSACTIONS (a transaction is being completed). */
int16_t kiq_txn_check_init(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch, int32_t timeout_ms,
                           int32_t max_timeout_ms, kiq_txn_init_action_t *action);
/* Applies a bump to t: the next epoch, or new_producer_id (taken by the
 * caller when kiq_txn_needs_new_id) at epoch 0; state Empty, no
 * partitions, the timeout. by_producer: the producer asked with its own id
 * and epoch (KIP-360), so a retry of that request is recognised (not for
 * a new instance, whose bump fences the old one). */
bool kiq_txn_needs_new_id(const kiq_txn_t *t);
void kiq_txn_bump(kiq_txn_t *t, int64_t new_producer_id, int32_t timeout_ms, int64_t now_ms, bool by_producer);

/* AddPartitionsToTxn / AddOffsetsToTxn by producer_id at producer_epoch
 * (t NULL: an unknown transactional id). NONE (*all_there: nothing to
 * write), INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
 * CONCURRENT_TRANSACTIONS. The caller then adds the partitions, sets
 * Ongoing and, when it was not, the start time. */
int16_t kiq_txn_check_add(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch, int npartitions,
                          const char *const *topics, const int32_t *partitions, bool *all_there);
void kiq_txn_begin_if_needed(kiq_txn_t *t, int64_t now_ms);

/* What an EndTxn does once allowed. */
typedef enum kiq_txn_end_action {
    KIQ_TXN_END_PREPARE, /* Ongoing: PrepareCommit or PrepareAbort, then the markers */
    KIQ_TXN_END_DONE,    /* a retry of the last transaction's end: answer NONE */
} kiq_txn_end_action_t;

/* EndTxn (commit or abort): NONE with *action, INVALID_PRODUCER_ID_MAPPING,
 * PRODUCER_FENCED, CONCURRENT_TRANSACTIONS (the same end under way, or a
 * fence), INVALID_TXN_STATE (nothing to end, or the other end). v2: the
 * transactions v2 rules (EndTxn v5): a retry comes at the epoch before the
 * end's bump, and an abort with no transaction under way is one (it bumps
 * the epoch). */
int16_t kiq_txn_check_end(const kiq_txn_t *t, int64_t producer_id, int16_t producer_epoch, bool commit, bool v2,
                          kiq_txn_end_action_t *action);
/* Ongoing (or, v2, idle) → PrepareCommit/PrepareAbort. v2: the epoch is
 * bumped (the markers carry the new one, fencing the producer's older
 * requests); at the last epoch new_producer_id (taken by the caller when
 * kiq_txn_end_needs_new_id) is the one to go on with. */
void kiq_txn_prepare_end(kiq_txn_t *t, bool commit, bool v2, int64_t new_producer_id, int64_t now_ms);
bool kiq_txn_end_needs_new_id(const kiq_txn_t *t);
/* The producer id and epoch a v2 end answers (and its retries): the next
 * producer id at epoch 0 when the epoch ran out, else the current ones. */
void kiq_txn_end_answer(const kiq_txn_t *t, int64_t *producer_id, int16_t *producer_epoch);
/* An ongoing transaction whose producer is replaced or whose time ran
 * out: the next epoch (two for a v2 transaction; the old producer's
 * requests are fenced from now on) and PrepareAbort. */
void kiq_txn_fence(kiq_txn_t *t, int64_t now_ms);
/* Prepare* → Complete*: the markers are written; no partitions, start -1;
 * a v2 end at the last epoch moves to its next producer id at epoch 0. */
void kiq_txn_complete(kiq_txn_t *t, int64_t now_ms);
void kiq_txn_set_state(kiq_txn_t *t, kiq_txn_state_t state, int64_t now_ms);

/* Whether an Ongoing transaction has run past its timeout at now_ms. */
bool kiq_txn_timed_out(const kiq_txn_t *t, int64_t now_ms);

#endif
