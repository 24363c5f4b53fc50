/* Where the controller keeps cluster metadata durably: an ordered,
 * append-only sequence of metadata records (metadata_record.h) that it
 * replays into its image (metadata_image.h) on start. One interface, so
 * that the embedded metadata log (metadata_log.h) and a store on a
 * coordination service (ZooKeeper) are two implementations of it.
 *
 * Every record gets an offset: its position in the sequence, from 0 up,
 * never reused. An implementation promises:
 *   - append: the records are durable (fsynced, or acknowledged by the
 *     coordination service) before it returns 0, all of them or none
 *     (a crash mid-append loses the whole append, never half of it);
 *   - replay: every durable record, in offset order, exactly once per call.
 * After a failed append the records may or may not come back at the next
 * replay, like any write whose fsync failed: the controller must not apply
 * them and treats the failure as fatal (Kafka's controller exits).
 *
 * Thread safety: a store belongs to the controller thread; nothing here
 * may be called from two threads at once. */
#ifndef KIQ_CONTROLLER_METADATA_STORE_H
#define KIQ_CONTROLLER_METADATA_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "controller/metadata_record.h"

/* Called by replay for each record in order; the record's arrays and
 * strings live only during the call. Returns 0 to go on; anything else
 * stops the replay, which then returns it. */
typedef int (*kiq_metadata_replay_fn)(void *ctx, int64_t offset, const kiq_metadata_record_t *r);

/* An implementation: its functions on its own state `impl`. */
typedef struct kiq_metadata_store_ops {
    const char *name; /* for messages, e.g. "metadata log" */
    /* records[0..n), n > 0; *last_offset gets the offset of the last. */
    int (*append)(void *impl, const kiq_metadata_record_t *records, size_t n, int64_t *last_offset);
    int (*replay)(void *impl, kiq_metadata_replay_fn cb, void *ctx);
    /* Releases impl; pending appends are already durable. */
    void (*close)(void *impl);
} kiq_metadata_store_ops_t;

/* A store: the implementation's functions and its opaque state. Heap
 * object made by an implementation's constructor (kiq_metadata_log_new). */
typedef struct kiq_metadata_store {
    const kiq_metadata_store_ops_t *ops;
    void *impl;
} kiq_metadata_store_t;

/* Appends records[0..n) atomically and durably (see above). n == 0 does
 * nothing and leaves *last_offset alone. last_offset may be NULL. 0, or -1
 * with the reason. */
int kiq_metadata_store_append(kiq_metadata_store_t *s, const kiq_metadata_record_t *records, size_t n,
                              int64_t *last_offset);
/* Hands every record to cb in order. Returns 0 when all were replayed, cb's
 * non-zero result when it stopped the replay, or -1 with the reason when
 * the store cannot be read or holds a malformed record (the controller
 * must not start on a partial image). Records of a type or version this
 * build does not know are skipped with a warning. */
int kiq_metadata_store_replay(kiq_metadata_store_t *s, kiq_metadata_replay_fn cb, void *ctx);
/* Closes the implementation and frees s. NULL is fine. */
void kiq_metadata_store_free(kiq_metadata_store_t *s);

#endif
