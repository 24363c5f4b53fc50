/* Every request frame captured from real clients (../shared/corpus) must
 * decode with the generated codec and re-encode to exactly the bytes the
 * client sent. The top-level corpus uses up every frame; librdkafka 2.15's
 * (rdkafka-2.15/, its own index) may leave bytes after the last field,
 * which Kafka ignores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/arena.h"
#include "proto/messages.h"
#include "proto/reader.h"
#include "proto/writer.h"

#define CORPUS_FRAMES 116
#define RDKAFKA_2_15_FRAMES 24

static const char *corpus_dir(void)
{
    const char *d = getenv("KIQ_CORPUS_DIR");
    return d && *d ? d : "../shared/corpus";
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (got == 0) break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Skips a tagged-field section, as the request header v2 carries one. */
static void skip_tags(kiq_rd_t *r)
{
    uint32_t count = kiq_rd_uvarint(r);
    for (uint32_t i = 0; i < count && !r->err; i++) {
        kiq_rd_uvarint(r);
        kiq_rd_raw(r, kiq_rd_uvarint(r));
    }
}

/* One frame of a corpus folder, as its index.tsv lists it. */
typedef struct corpus_frame {
    const char *rel;
    int key, version;
    size_t bytes;
} corpus_frame_t;

/* Calls fn for every frame listed in DIR/index.tsv (DIR relative to the
 * corpus); returns how many there were. */
static int for_each_frame(const char *dir, void (*fn)(const char *path, const corpus_frame_t *f))
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/index.tsv", corpus_dir(), dir);
    FILE *idx = fopen(path, "r");
    if (!idx) fail_msg("cannot open %s (set KIQ_CORPUS_DIR)", path);
    char line[1024];
    int frames = 0;
    while (fgets(line, sizeof line, idx)) {
        char rel[512];
        corpus_frame_t f = {rel, 0, 0, 0};
        if (sscanf(line, "%511s %d %d %zu", rel, &f.key, &f.version, &f.bytes) != 4) continue;
        snprintf(path, sizeof path, "%s/%s/%s", corpus_dir(), dir, rel);
        fn(path, &f);
        frames++;
    }
    fclose(idx);
    return frames;
}

/* Reads the frame's request header; returns the codec, with r left at the
 * body. */
static const kiq_api_codec_t *read_header(kiq_rd_t *r, const corpus_frame_t *f)
{
    int16_t key = kiq_rd_i16(r);
    int16_t version = kiq_rd_i16(r);
    kiq_rd_i32(r);
    kiq_rd_string(r, false, true);
    assert_null(r->err);
    assert_int_equal(key, f->key);
    assert_int_equal(version, f->version);
    const kiq_api_codec_t *api = kiq_api_codec(key);
    if (!api) fail_msg("%s: no codec for api key %d", f->rel, key);
    if (version < api->min_version || version > api->max_version)
        fail_msg("%s: %s v%d outside %d-%d", f->rel, api->name, version, api->min_version, api->max_version);
    if (version >= api->flexible_min) skip_tags(r);
    assert_null(r->err);
    return api;
}

/* Decodes one frame's body: returns how many body bytes the fields took
 * (Apache Kafka ignores what follows, and so does the broker). */
static size_t decode_body(const char *path, const corpus_frame_t *f, uint8_t **frame_out, size_t *hdr_out)
{
    size_t len = 0;
    uint8_t *frame = slurp(path, &len);
    if (!frame) fail_msg("cannot read %s", path);
    assert_int_equal(len, f->bytes);
    kiq_rd_t r;
    kiq_rd_init(&r, frame, len);
    const kiq_api_codec_t *api = read_header(&r, f);
    size_t hdr = kiq_rd_offset(&r);
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    void *msg = kiq_arena_alloc(&arena, api->request_size);
    int rc = api->request_decode(&r, (int16_t)f->version, &arena, msg);
    if (rc != 0 || r.err)
        fail_msg("%s: %s v%d decode failed at %zu: %s", f->rel, api->name, f->version, kiq_rd_offset(&r),
                 r.err ? r.err : "(no reader error)");
    size_t used = kiq_rd_offset(&r) - hdr;

    kiq_wr_t w;
    kiq_wr_init(&w);
    rc = api->request_encode(&w, (int16_t)f->version, msg);
    assert_int_equal(rc, 0);
    assert_false(w.err);
    const uint8_t *body = frame + hdr;
    if (w.len != used || (used && memcmp(w.buf, body, used) != 0)) {
        size_t at = 0;
        while (at < w.len && at < used && w.buf[at] == body[at]) at++;
        fail_msg("%s: %s v%d re-encoded %zu bytes, the decoder took %zu; first difference at %zu", f->rel,
                 api->name, f->version, w.len, used, at);
    }
    kiq_wr_free(&w);
    kiq_arena_reset(&arena);
    *frame_out = frame;
    *hdr_out = hdr;
    return used;
}

static int trailing_frames;

/* The top-level corpus: every field is used and nothing is left. */
static void check_whole(const char *path, const corpus_frame_t *f)
{
    uint8_t *frame;
    size_t hdr;
    size_t used = decode_body(path, f, &frame, &hdr);
    if (hdr + used != f->bytes)
        fail_msg("%s: left %zu bytes undecoded", f->rel, f->bytes - hdr - used);
    free(frame);
}

/* librdkafka 2.15: bytes after the last field are allowed (they are
 * ignored); the fields before them round-trip exactly. */
static void check_up_to_trailing(const char *path, const corpus_frame_t *f)
{
    uint8_t *frame;
    size_t hdr;
    size_t used = decode_body(path, f, &frame, &hdr);
    if (hdr + used != f->bytes) trailing_frames++;
    free(frame);
}

static void test_corpus_round_trip(void **state)
{
    (void)state;
    assert_int_equal(for_each_frame(".", check_whole), CORPUS_FRAMES);
}

static void test_rdkafka_2_15_round_trip(void **state)
{
    (void)state;
    trailing_frames = 0;
    assert_int_equal(for_each_frame("rdkafka-2.15", check_up_to_trailing), RDKAFKA_2_15_FRAMES);
    /* Metadata-v12-2.bin, the all-topics request, is the one with stray bytes */
    assert_int_equal(trailing_frames, 1);
}

/* A body cut short anywhere before the end of its fields must fail to
 * decode cleanly, never read past the end. */
static void check_truncated(const char *path, const corpus_frame_t *f)
{
    uint8_t *frame;
    size_t hdr;
    size_t used = decode_body(path, f, &frame, &hdr);
    const kiq_api_codec_t *api = kiq_api_codec((int16_t)f->key);
    for (size_t cut = 0; cut < used; cut++) {
        /* A copy of exactly `cut` bytes, so any overread is an error under
         * sanitizers rather than a silent read of the rest. */
        uint8_t *part = malloc(cut + 1);
        assert_non_null(part);
        memcpy(part, frame + hdr, cut);
        kiq_rd_t pr;
        kiq_rd_init(&pr, part, cut);
        kiq_arena_t arena;
        kiq_arena_init(&arena);
        void *msg = kiq_arena_alloc(&arena, api->request_size);
        int rc = api->request_decode(&pr, (int16_t)f->version, &arena, msg);
        if (rc == 0 && !pr.err) fail_msg("%s: decode of %zu of %zu body bytes succeeded", f->rel, cut, used);
        kiq_arena_reset(&arena);
        free(part);
    }
    free(frame);
}

static void test_corpus_truncated(void **state)
{
    (void)state;
    assert_int_equal(for_each_frame(".", check_truncated), CORPUS_FRAMES);
    assert_int_equal(for_each_frame("rdkafka-2.15", check_truncated), RDKAFKA_2_15_FRAMES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_round_trip),
        cmocka_unit_test(test_rdkafka_2_15_round_trip),
        cmocka_unit_test(test_corpus_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
