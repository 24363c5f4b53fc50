/* libFuzzer target: the records the broker keeps in its own logs, the
 * metadata log's records and __consumer_offsets' and __transaction_state's
 * keys and values (the data messages), as read back at startup. Byte 0
 * picks the message, bytes 1-2 the version; the rest is decoded, and what
 * decodes must encode and decode to the same bytes again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "proto/messages.h"
#include "proto/reader.h"
#include "proto/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || kiq_data_codec_count == 0) return 0;
    const kiq_data_codec_t *c = &kiq_data_codecs[data[0] % kiq_data_codec_count];
    int16_t v = (int16_t)(c->min_version + ((data[1] << 8 | data[2]) % (c->max_version - c->min_version + 1)));
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->size);
    c->init(m);
    kiq_rd_t rd;
    kiq_rd_init(&rd, data + 3, size - 3);
    if (c->decode(&rd, v, &a, m) == 0) {
        kiq_wr_t w1, w2;
        kiq_wr_init(&w1);
        kiq_wr_init(&w2);
        if (c->encode(&w1, v, m) == 0 && !w1.err) {
            void *again = kiq_arena_alloc(&a, c->size);
            c->init(again);
            kiq_rd_t r2;
            kiq_rd_init(&r2, w1.buf, w1.len);
            if (c->decode(&r2, v, &a, again) != 0 || kiq_rd_left(&r2)) abort();
            if (c->encode(&w2, v, again) != 0 || w2.len != w1.len || (w1.len && memcmp(w1.buf, w2.buf, w1.len) != 0))
                abort();
        }
        kiq_wr_free(&w1);
        kiq_wr_free(&w2);
    }
    kiq_arena_reset(&a);
    return 0;
}
