/* The aborted transactions of one partition, as Kafka keeps them: each
 * segment's `<base>.txnindex` lists the transactions whose abort marker is
 * in that segment, an entry of 34 bytes (version 0, producer id, first
 * offset, last offset = the marker's, the last stable offset once it
 * ended: Kafka's AbortedTxn). A read_committed fetch gets those that
 * overlap what it reads, so the consumer can drop their records.
 *
 * Owned by a partition log and guarded by its mutex: nothing here locks.
 * Entries are kept in memory too, ordered by marker offset. */
#ifndef KIQ_LOG_TXN_INDEX_H
#define KIQ_LOG_TXN_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

/* The size of an entry in a .txnindex file. */
#define KIQ_TXN_INDEX_ENTRY 34

/* One aborted transaction; a value. */
typedef struct kiq_aborted {
    int64_t producer_id;
    int64_t first_offset; /* its first batch in this partition */
    int64_t last_offset;  /* its abort marker */
    int64_t last_stable_offset;
    int64_t segment_base; /* whose .txnindex holds it */
} kiq_aborted_t;

typedef struct kiq_txn_index kiq_txn_index_t;

/* For the partition directory dir; NULL when out of memory. */
kiq_txn_index_t *kiq_txn_index_new(const char *dir);
void kiq_txn_index_free(kiq_txn_index_t *x);
/* Reads the .txnindex of each segment (bases ascending); a torn last entry
 * is cut off, a malformed file logged and skipped (the markers are still
 * in the log). 0, or -1 when out of memory. */
int kiq_txn_index_load(kiq_txn_index_t *x, const int64_t *bases, size_t n);
/* Records an aborted transaction whose marker is in segment segment_base
 * (appended to its file); one whose marker offset is not past the last
 * known is known already (a replay after a crash) and skipped. 0 or -1. */
int kiq_txn_index_add(kiq_txn_index_t *x, const kiq_aborted_t *e);
/* A truncation at offset: the entries whose marker is at or past it are
 * forgotten and the files rewritten (segments removed whole take their
 * file with them). 0 or -1. */
int kiq_txn_index_truncate(kiq_txn_index_t *x, int64_t offset);
/* Retention moved the log start: entries whose marker is below it go. */
void kiq_txn_index_drop_below(kiq_txn_index_t *x, int64_t start_offset);
/* The entries a read of [from, upper) must know of (marker at or past
 * from, first offset below upper), oldest first, into an array in arena;
 * how many (0: *out NULL). */
size_t kiq_txn_index_collect(const kiq_txn_index_t *x, int64_t from, int64_t upper, kiq_arena_t *arena,
                             kiq_aborted_t **out);
size_t kiq_txn_index_count(const kiq_txn_index_t *x);

#endif
