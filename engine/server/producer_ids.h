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

#include <stdint.h>

#define KIQ_PRODUCER_IDS_FILE ".producer-ids"
#define KIQ_PRODUCER_IDS_BLOCK 1000

typedef struct kiq_producer_ids kiq_producer_ids_t;

/* Reads `<dir>/.producer-ids` (absent: ids start at 0). block_size ids are
 * reserved at a time (> 0). NULL with the reason when the file is
 * unreadable or malformed: ids could repeat otherwise. */
kiq_producer_ids_t *kiq_producer_ids_new(const char *dir, int64_t block_size);
/* Blocks from elsewhere: reserve gives the first id of a new block and its
 * length (0, or -1 with the reason; nothing is handed out then). Called
 * under the allocator's lock, from the thread asking for an id. */
typedef struct kiq_producer_id_source {
    int (*reserve)(void *ctx, int64_t *start, int64_t *len);
    void *ctx;
} kiq_producer_id_source_t;
kiq_producer_ids_t *kiq_producer_ids_new_from(const kiq_producer_id_source_t *source);
void kiq_producer_ids_free(kiq_producer_ids_t *p);
/* The next id into *id. Reserving a new block writes the file (temp file,
 * fsync, rename, directory fsync) first; -1 with the reason when that
 * fails (nothing is handed out). */
int kiq_producer_ids_next(kiq_producer_ids_t *p, int64_t *id);

#endif
