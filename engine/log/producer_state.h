/* Idempotent producers as a partition leader sees them: per producer id,
 * its epoch and the metadata of the last KIQ_PRODUCER_BATCHES_KEPT batches
 * it appended, so a retried batch is recognised (and answered with its
 * original offsets) and a gap in its sequence numbers is refused.
 *
 * The table is owned by a partition log and guarded by that log's mutex:
 * none of the functions below lock. Snapshot files live in the partition
 * directory as `<20-digit offset>.snapshot` (the state of every batch below
 * that offset); the format is this project's own (versioned, CRC-32C), not
 * Kafka's. */
#ifndef KIQ_LOG_PRODUCER_STATE_H
#define KIQ_LOG_PRODUCER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/segment.h"
#include "record/batch.h"

/* Kafka keeps five: max.in.flight.requests.per.connection may be up to 5
 * with idempotence, so up to five batches can be retried at once. */
#define KIQ_PRODUCER_BATCHES_KEPT 5
#define KIQ_SNAPSHOT_SUFFIX ".snapshot"
/* Snapshot files kept per partition (the newest ones). */
#define KIQ_SNAPSHOTS_KEPT 2

/* One appended batch of a producer. A value. */
typedef struct kiq_producer_batch {
    int32_t first_seq, last_seq;
    int64_t first_offset, last_offset;
    int64_t timestamp; /* the batch's max timestamp */
} kiq_producer_batch_t;

/* A producer id's state; a value (copied in and out of the table). */
typedef struct kiq_producer_entry {
    int64_t producer_id;
    int16_t epoch;
    int nbatches; /* batches[0] is the oldest */
    kiq_producer_batch_t batches[KIQ_PRODUCER_BATCHES_KEPT];
    /* The offset of its ongoing transaction's first batch here: what holds
     * the last stable offset back until the transaction's marker; -1. */
    int64_t txn_first_offset;
    /* The coordinator epoch of its last marker (-1: none): a marker from
     * an older coordinator is refused. */
    int32_t coordinator_epoch;
} kiq_producer_entry_t;

typedef struct kiq_producer_state kiq_producer_state_t;

kiq_producer_state_t *kiq_producer_state_new(void);
void kiq_producer_state_free(kiq_producer_state_t *s);
/* Forgets every producer. */
void kiq_producer_state_clear(kiq_producer_state_t *s);
size_t kiq_producer_state_count(const kiq_producer_state_t *s);
/* The entry of producer_id, or NULL; valid until the next change. */
const kiq_producer_entry_t *kiq_producer_state_get(const kiq_producer_state_t *s, int64_t producer_id);
/* Inserts or replaces the entry of e->producer_id. 0 or -1 (out of memory). */
int kiq_producer_state_put(kiq_producer_state_t *s, const kiq_producer_entry_t *e);
/* KIP-890 verification guards: a leader takes one before it asks a
 * transaction's coordinator whether this partition is in the producer's
 * transaction, and appends its first transactional records only while the
 * guard still holds. The producer's marker ends it (so an answer that
 * arrives after the transaction ended cannot start it again), as does the
 * transaction's first append. At most KIQ_PRODUCER_GUARDS_MAX stand; a
 * new one past that ends the oldest. Kafka's VerificationGuard. */
#define KIQ_PRODUCER_GUARDS_MAX 256
/* The standing guard of producer_id, or a new one; never 0. A new one
 * outlives the producer's markers up to spared_epoch (-1: none): under
 * transactions v2 every end bumps the epoch, so the marker at the epoch of
 * a produce that starts the next transaction is the last one's, which the
 * coordinator may still be writing while it is asked. */
uint64_t kiq_producer_state_guard(kiq_producer_state_t *s, int64_t producer_id, int16_t spared_epoch);
/* The producer's marker at marker_epoch was appended: its guard ends
 * unless it spares that epoch. */
void kiq_producer_state_guard_marker(kiq_producer_state_t *s, int64_t producer_id, int16_t marker_epoch);
bool kiq_producer_state_guard_holds(const kiq_producer_state_t *s, int64_t producer_id, uint64_t guard);
/* Ends producer_id's guard if it is `guard` (0: whichever it is). */
void kiq_producer_state_guard_end(kiq_producer_state_t *s, int64_t producer_id, uint64_t guard);

/* Batches refused before their sequence was looked at (not the leader
 * yet, too few in-sync replicas, ...) with a retriable error: a later
 * batch of the same producer that arrives while the refused one is still
 * missing gets that error too, not OUT_OF_ORDER_SEQUENCE_NUMBER. A
 * producer pipelines up to five batches, and librdkafka before 2.3 takes
 * that OUT_OF_ORDER_SEQUENCE_NUMBER as fatal when it had counted the
 * refused batch as possibly written (after a disconnect or a timeout):
 * both answered retriable, it sends them again in order. Remembered
 * KIQ_PRODUCER_REFUSAL_MS, the newest KIQ_PRODUCER_REFUSALS of them. */
#define KIQ_PRODUCER_REFUSALS 16
#define KIQ_PRODUCER_REFUSAL_MS 10000
void kiq_producer_state_note_refusal(kiq_producer_state_t *s, const kiq_batch_header_t *h, int16_t err,
                                     int64_t now_ns);
/* The error a batch of producer_id at epoch starting at first_seq was
 * refused with here within KIQ_PRODUCER_REFUSAL_MS of now_ns, or 0. */
int16_t kiq_producer_state_refused(const kiq_producer_state_t *s, int64_t producer_id, int16_t epoch,
                                   int32_t first_seq, int64_t now_ns);
/* The sequence the entry's next batch must start at. */
int32_t kiq_producer_entry_next_seq(const kiq_producer_entry_t *e);

/* Forgets the producers with no open transaction whose last batch is older
 * than before_ts (producer.id.expiration.ms); how many went. Entries that
 * only ever wrote markers have no batch time and stay. */
size_t kiq_producer_state_expire(kiq_producer_state_t *s, int64_t before_ts);
/* Calls cb for each entry, in no particular order. */
void kiq_producer_state_foreach(const kiq_producer_state_t *s, void (*cb)(const kiq_producer_entry_t *e, void *ctx),
                                void *ctx);

/* The batch's last sequence number: base + last offset delta, wrapping
 * past INT32_MAX to 0 as producers do. */
int32_t kiq_producer_last_seq(const kiq_batch_header_t *h);

/* Checks a batch of h->producer_id against its entry e (NULL: unknown
 * producer) by Kafka's rules: a batch equal to one of the cached ones is a
 * duplicate (*duplicate set, *original gets the cached batch, 0 returned);
 * otherwise 0 when it may be appended, or the Kafka error code with the
 * reason in the error slot: INVALID_PRODUCER_EPOCH (older epoch),
 * OUT_OF_ORDER_SEQUENCE_NUMBER (not the next sequence, or a new epoch not
 * starting at 0). An unknown producer may start at any sequence. */
int kiq_producer_entry_check(const kiq_producer_entry_t *e, const kiq_batch_header_t *h, bool *duplicate,
                             kiq_producer_batch_t *original);
/* Records an appended batch (h->base_offset assigned) in e, which
 * initialise_entry made or which holds h->producer_id: a newer epoch
 * starts the entry over; the oldest batch goes past the limit. A batch of
 * an older epoch is ignored (only replays of odd logs meet one). A
 * transactional batch starts a transaction when none is ongoing; a
 * control batch (a marker) ends it and is not kept as a batch (markers
 * carry no sequence numbers). */
void kiq_producer_entry_update(kiq_producer_entry_t *e, const kiq_batch_header_t *h);
/* An empty entry for producer_id at epoch. */
void kiq_producer_entry_init(kiq_producer_entry_t *e, int64_t producer_id, int16_t epoch);

/* Replays a batch read back from the log into the table (no checks, as
 * Kafka does on load). Batches without a producer id are skipped.
 * *txn_first (may be NULL) gets, for a marker, the first offset of the
 * transaction it ended (-1: none was ongoing), else -1. 0 or -1. */
int kiq_producer_state_replay(kiq_producer_state_t *s, const kiq_batch_header_t *h, int64_t *txn_first);

/* Told of each transaction marker a scan replays: its header, the first
 * offset of the transaction it ended (-1: none) and whether it aborted. */
typedef struct kiq_marker_watch {
    void (*marker)(void *ctx, const kiq_batch_header_t *h, int64_t txn_first, bool abort);
    void *ctx;
} kiq_marker_watch_t;

/* Replays the headers of the segment's batches whose last offset is >=
 * from_offset (61 bytes read per batch; nothing decompressed, but for
 * control batches, read whole to tell commit from abort, which watch (may
 * be NULL) is told). 0 or -1. */
int kiq_producer_state_scan_segment(kiq_producer_state_t *s, kiq_segment_t *seg, int64_t from_offset,
                                    const kiq_marker_watch_t *watch);

/* Writes the table as `<dir>/<offset>.snapshot` (temp file, fsync, rename,
 * directory fsync), then removes all but the KIQ_SNAPSHOTS_KEPT newest
 * snapshots. 0 or -1. */
int kiq_producer_state_write_snapshot(const kiq_producer_state_t *s, const char *dir, int64_t offset);
/* Clears the table and loads the newest sound snapshot in dir whose offset
 * is <= max_offset; a corrupt or partial one is logged, removed, and the
 * next older one tried. *offset_out gets the snapshot's offset, or -1 when
 * none was loaded (the table is then empty). 0, or -1 when dir cannot be
 * read. */
int kiq_producer_state_load_snapshot(kiq_producer_state_t *s, const char *dir, int64_t max_offset,
                                     int64_t *offset_out);
/* Removes the snapshots whose offset is > offset (a truncation made them
 * describe batches no longer in the log) and leftover temp files. 0 or -1. */
int kiq_producer_state_delete_snapshots_above(const char *dir, int64_t offset);
/* The offsets of the snapshot files in dir, ascending, into a malloc'd
 * *out. Returns how many, or -1. */
int kiq_producer_state_list_snapshots(const char *dir, int64_t **out);

#endif
