/* Producer ids for InitProducerId, unique across restarts of the broker:
 * handed out from blocks whose end is written to a small file (in the
 * first log directory) before any id of the block is given, so a restart
 * continues after the last block ever reserved; in a cluster, from blocks
 * the controller gives (AllocateProducerIds), unique across brokers. Ids
 * left in a block at shutdown are never used (Kafka's allocator does the
 * same).
 *
 * Thread safety: its own mutex; kiq_producer_ids_next is callable from
 * any thread. */
#ifndef KIQ_SERVER_PRODUCER_IDS_H
#define KIQ_SERVER_PRODUCER_IDS_H

#include <stdbool.h>
#include <stdint.h>

#define KIQ_PRODUCER_IDS_FILE ".producer-ids"
#define KIQ_PRODUCER_IDS_BLOCK 1000

typedef struct kiq_producer_ids kiq_producer_ids_t;

/* Reads `<dir>/.producer-ids` (absent: ids start at 0). block_size ids are
 * reserved at a time (> 0). NULL with the reason when the file is
 * unreadable or malformed: ids could repeat otherwise. */
kiq_producer_ids_t *kiq_producer_ids_new(const char *dir, int64_t block_size);
/* Blocks from elsewhere (the controller), asked for ahead of need as
 * Kafka's RPCProducerIdManager does: once a tenth of the block is left,
 * request(ctx, p) is called (never under the allocator's lock, at most one
 * request at a time) and the source answers with kiq_producer_ids_given,
 * from any thread, perhaps before request returns. */
typedef struct kiq_producer_id_source {
    void (*request)(void *ctx, kiq_producer_ids_t *p);
    /* a block came (any thread, after kiq_producer_ids_given); may be NULL */
    void (*arrived)(void *ctx);
    void *ctx;
} kiq_producer_id_source_t;
kiq_producer_ids_t *kiq_producer_ids_new_from(const kiq_producer_id_source_t *source);
/* Asks the source for a block unless one is in hand or on its way. */
void kiq_producer_ids_prefetch(kiq_producer_ids_t *p);
/* Whether kiq_producer_ids_next would give an id now (it may still fail
 * writing the file); asks the source for a block when it would not. */
bool kiq_producer_ids_ready(kiq_producer_ids_t *p);
/* The source's answer: rc 0 and the block [start, start + len), or rc -1
 * with the reason in the error slot. */
void kiq_producer_ids_given(kiq_producer_ids_t *p, int rc, int64_t start, int64_t len);
void kiq_producer_ids_free(kiq_producer_ids_t *p);
/* The next id into *id. Reserving a new block writes the file (temp file,
 * fsync, rename, directory fsync) first; -1 with the reason when that
 * fails (nothing is handed out). From a source, -1 while the next block
 * is still on its way: a retriable answer for the client, never a wait. */
int kiq_producer_ids_next(kiq_producer_ids_t *p, int64_t *id);

#endif
