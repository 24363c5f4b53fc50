/* libFuzzer target: a RecordBatch as a producer sends it, through the
 * validator Produce runs (framing, CRC, size, decompression with every
 * codec, the record walk) and the record iterator the log's readers use.
 * The CRC is recomputed over the input first, so mutations reach the
 * codecs and the record parser instead of dying at the checksum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record/batch.h"
#include "record/crc32c.h"
#include "proto/writer.h"

static int count(const kiq_record_t *r, void *ctx)
{
    (void)r;
    ++*(int *)ctx;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    if (size > KIQ_BATCH_POS_ATTRIBUTES)
        kiq_put_be32(p + KIQ_BATCH_POS_CRC,
                     kiq_crc32c(0, p + KIQ_BATCH_POS_ATTRIBUTES, size - KIQ_BATCH_POS_ATTRIBUTES));
    kiq_batch_header_t h;
    kiq_batch_summary_t sum;
    kiq_batch_validate(p, size, 1 << 20, 4 << 20, &h, &sum);
    int n = 0;
    kiq_batch_foreach_record(p, size, 4 << 20, count, &n);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, size, true);
    const uint8_t *b;
    size_t blen;
    while (kiq_batch_iter_next(&it, &b, &blen, &h) == 1) kiq_batch_check(b, blen, NULL);
    free(p);
    return 0;
}
