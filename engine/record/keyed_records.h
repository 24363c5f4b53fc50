/* Records of a coordinator's compacted topic (__consumer_offsets,
 * __transaction_state) gathered for one append: each a key and a value
 * (NULL: a tombstone) already written with their versions, in one
 * uncompressed batch stamped with one time. Owned by the calling thread. */
#ifndef KIQ_RECORD_KEYED_RECORDS_H
#define KIQ_RECORD_KEYED_RECORDS_H

#include "proto/writer.h"
#include "record/batch.h"

typedef struct kiq_keyed_records {
    kiq_batch_builder_t bb;
    int64_t now_ms;
    int count; /* records added */
} kiq_keyed_records_t;

void kiq_keyed_records_init(kiq_keyed_records_t *rs, int64_t now_ms);
void kiq_keyed_records_free(kiq_keyed_records_t *rs);
/* Adds the record and frees both writers (value may be NULL); 0, or -1
 * with the reason (a writer ran out of memory). */
int kiq_keyed_records_add(kiq_keyed_records_t *rs, kiq_wr_t *key, kiq_wr_t *value);
/* One batch of everything added, into *w (kiq_wr_free it); 0, or -1 with
 * *w freed. */
int kiq_keyed_records_build(kiq_keyed_records_t *rs, kiq_wr_t *w);

#endif
