/* libFuzzer target: a request frame (header and body, as the processor
 * frames it and as tests/corpus holds them) through the header decoder
 * and the generated decoder of its API and version. What decodes must
 * encode, and decoding that encoding must give the same bytes again: the
 * codecs agree on every message they accept. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "proto/header.h"
#include "proto/messages.h"
#include "proto/reader.h"
#include "proto/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kiq_rd_t rd;
    kiq_rd_init(&rd, data, size);
    kiq_request_header_t h;
    if (kiq_request_header_decode(&rd, &h) != 0) return 0;
    const kiq_api_codec_t *c = kiq_api_codec(h.api_key);
    if (!c || h.api_version < c->min_version || h.api_version > c->max_version) return 0;
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->request_size);
    c->request_init(m);
    if (c->request_decode(&rd, h.api_version, &a, m) == 0) {
        kiq_wr_t w1, w2;
        kiq_wr_init(&w1);
        kiq_wr_init(&w2);
        if (c->request_encode(&w1, h.api_version, m) == 0 && !w1.err) {
            void *again = kiq_arena_alloc(&a, c->request_size);
            c->request_init(again);
            kiq_rd_t r2;
            kiq_rd_init(&r2, w1.buf, w1.len);
            if (c->request_decode(&r2, h.api_version, &a, again) != 0 || kiq_rd_left(&r2)) abort();
            if (c->request_encode(&w2, h.api_version, again) != 0 || w2.len != w1.len ||
                (w1.len && memcmp(w1.buf, w2.buf, w1.len) != 0))
                abort();
#ifdef KIQ_FUZZ_PLANTED
            /* a test build's planted bug: the suite checks the fuzzer finds it */
            if (h.api_key == 0 && h.client_id.len == 4 && memcmp(h.client_id.p, "b00m", 4) == 0) {
                volatile uint8_t *p = malloc(4);
                p[4] = 1;
                free((void *)p);
            }
#endif
        }
        kiq_wr_free(&w1);
        kiq_wr_free(&w2);
    }
    kiq_arena_reset(&a);
    return 0;
}
