/* Writes the fuzz targets' generated seeds into DIR: every API's sample
 * request at every version it has (DIR/request), a batch of each codec
 * (DIR/batch) and every data message's sample at every version
 * (DIR/data). The captured client frames in tests/corpus come on top
 * (make fuzz passes both). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/arena.h"
#include "proto/header.h"
#include "proto/messages.h"
#include "proto/writer.h"
#include "record/batch.h"
#include "record/compression.h"

static int save(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        fprintf(stderr, "fuzz_seeds: cannot write %s\n", path);
        if (f) fclose(f);
        return -1;
    }
    return fclose(f);
}

/* What goes before a sample's encoding: a request's header, a data
 * message's selector. */
typedef void (*prefix_fn)(kiq_wr_t *w, size_t index, int16_t key, int16_t version, int16_t min_version);

static void request_header(kiq_wr_t *w, size_t index, int16_t key, int16_t v, int16_t min_version)
{
    kiq_request_header_t h = {key, v, 1, KIQ_STR("fuzz"), {0}, (int8_t)kiq_request_header_version(key, v)};
    kiq_request_header_encode(w, &h);
}

/* the data target's selector: message index, then the version's offset */
static void data_selector(kiq_wr_t *w, size_t index, int16_t key, int16_t v, int16_t min_version)
{
    int16_t dv = (int16_t)(v - min_version);
    uint8_t sel[3] = {(uint8_t)index, (uint8_t)(dv >> 8), (uint8_t)dv};
    kiq_wr_raw(w, sel, sizeof sel);
}

/* One message's sample at each of its versions, saved as NAME-vN. */
static int samples(const char *dir, const char *name, size_t index, int16_t key, int16_t min, int16_t max,
                   size_t size, void (*init)(void *), kiq_sample_fn sample, kiq_encode_fn encode, prefix_fn prefix)
{
    for (int16_t v = min; sample && v <= max; v++) {
        kiq_arena_t a;
        kiq_arena_init(&a);
        void *m = kiq_arena_alloc(&a, size);
        init(m);
        sample(m, v, &a, 7);
        kiq_wr_t w;
        kiq_wr_init(&w);
        prefix(&w, index, key, v, min);
        encode(&w, v, m);
        char file[96];
        snprintf(file, sizeof file, "%s-v%d", name, v);
        int rc = w.err ? 0 : save(dir, file, w.buf, w.len);
        kiq_wr_free(&w);
        kiq_arena_reset(&a);
        if (rc) return -1;
    }
    return 0;
}

static int requests(const char *dir)
{
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        const kiq_api_codec_t *c = &kiq_api_codecs[i];
        if (samples(dir, c->name, i, c->key, c->min_version, c->max_version, c->request_size, c->request_init,
                    kiq_api_request_sample(c->key), c->request_encode, request_header) != 0)
            return -1;
    }
    return 0;
}

static int batches(const char *dir)
{
    static const int codecs[] = {KIQ_CODEC_NONE, KIQ_CODEC_GZIP, KIQ_CODEC_SNAPPY, KIQ_CODEC_LZ4, KIQ_CODEC_ZSTD};
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
        kiq_batch_builder_t b;
        kiq_batch_builder_init(&b, codecs[i], 1700000000000);
        kiq_batch_builder_add(&b, "key", 3, "value", 5, NULL, 0, 1700000000000);
        kiq_batch_builder_add(&b, NULL, -1, "second value", 12, NULL, 0, 1700000000001);
        kiq_wr_t w;
        kiq_wr_init(&w);
        int rc = kiq_batch_builder_finish(&b, &w);
        kiq_batch_builder_free(&b);
        char name[32];
        snprintf(name, sizeof name, "batch-%s", kiq_codec_name(codecs[i]));
        if (rc == 0) rc = save(dir, name, w.buf, w.len);
        kiq_wr_free(&w);
        if (rc) return -1;
    }
    return 0;
}

static int datas(const char *dir)
{
    for (size_t i = 0; i < kiq_data_codec_count; i++) {
        const kiq_data_codec_t *c = &kiq_data_codecs[i];
        if (samples(dir, c->name, i, 0, c->min_version, c->max_version, c->size, c->init, kiq_data_sample(c->name),
                    c->encode, data_selector) != 0)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    const char *sub[] = {"request", "batch", "data"};
    int (*fill[])(const char *) = {requests, batches, datas};
    for (int i = 0; i < 3; i++) {
        char d[512];
        snprintf(d, sizeof d, "%s/%s", argv[1], sub[i]);
        mkdir(argv[1], 0755);
        mkdir(d, 0755);
        if (fill[i](d) != 0) return 1;
    }
    return 0;
}
