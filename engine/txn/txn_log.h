/* __transaction_state, in Kafka's formats so Kafka's tools read it: which
 * partition holds a transactional id, the record of a transactional id's
 * metadata (key version 0: the id; value version 1, flexible: producer,
 * epoch, timeout, state, partitions, times, and tagged the previous and
 * next producer ids and the client's transaction version) or its
 * tombstone, and loading
 * a partition back into metadata. Owned by the calling thread. */
#ifndef KIQ_TXN_TXN_LOG_H
#define KIQ_TXN_TXN_LOG_H

#include <stdint.h>

#include "log/log_names.h"
#include "log/partition_log.h"
#include "proto/messages.h"
#include "record/keyed_records.h"
#include "txn/txn_metadata.h"

/* t's metadata as it is now, added to rs (kiq_keyed_records_build makes
 * the batch); 0, or -1 with the reason. */
int kiq_txn_records_add(kiq_keyed_records_t *rs, const kiq_txn_t *t);
/* The id is gone (expired); 0 or -1. */
int kiq_txn_records_add_tombstone(kiq_keyed_records_t *rs, const char *id);

/* What loading finds, in log order: id's metadata (v), or its deletion
 * (v NULL). The views live only during the call. */
typedef struct kiq_txn_loader {
    void *ctx;
    void (*txn)(void *ctx, kiq_str_t id, const kiq_transaction_log_value_t *v);
} kiq_txn_loader_t;

/* Reads the log from its start to its end; records of unknown versions or
 * malformed ones are skipped with a warning. The number applied, or -1. */
int kiq_txn_log_load(kiq_partition_log_t *log, const kiq_txn_loader_t *ld);

/* A loaded value as metadata: t (uninitialised) gets id and v's fields.
 * 0 or -1 (memory; an unknown state is taken as Dead). */
int kiq_txn_from_value(kiq_txn_t *t, kiq_str_t id, const kiq_transaction_log_value_t *v);

#endif
