/* Every request frame captured from real clients (../shared/corpus) must
 * decode with the generated codec, use up the whole frame, and re-encode to
 * exactly the bytes the client sent. */
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

/* Decodes one frame and checks the round trip. */
static void check_frame(const char *rel, int want_key, int want_version, size_t want_bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", corpus_dir(), rel);
    size_t len = 0;
    uint8_t *frame = slurp(path, &len);
    if (!frame) fail_msg("cannot read %s", path);
    assert_int_equal(len, want_bytes);

    kiq_rd_t r;
    kiq_rd_init(&r, frame, len);
    int16_t key = kiq_rd_i16(&r);
    int16_t version = kiq_rd_i16(&r);
    kiq_rd_i32(&r);
    kiq_rd_string(&r, false, true);
    assert_null(r.err);
    assert_int_equal(key, want_key);
    assert_int_equal(version, want_version);

    const kiq_api_codec_t *api = kiq_api_codec(key);
    if (!api) fail_msg("%s: no codec for api key %d", rel, key);
    if (version < api->min_version || version > api->max_version)
        fail_msg("%s: %s v%d outside %d-%d", rel, api->name, version, api->min_version,
                 api->max_version);
    if (version >= api->flexible_min) skip_tags(&r);
    assert_null(r.err);

    const uint8_t *body = r.p;
    size_t body_len = kiq_rd_left(&r);
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    void *msg = kiq_arena_alloc(&arena, api->request_size);
    int rc = api->request_decode(&r, version, &arena, msg);
    if (rc != 0 || r.err)
        fail_msg("%s: %s v%d decode failed at %zu: %s", rel, api->name, version,
                 kiq_rd_offset(&r), r.err ? r.err : "(no reader error)");
    if (kiq_rd_left(&r) != 0)
        fail_msg("%s: %s v%d left %zu bytes undecoded", rel, api->name, version,
                 kiq_rd_left(&r));

    kiq_wr_t w;
    kiq_wr_init(&w);
    rc = api->request_encode(&w, version, msg);
    assert_int_equal(rc, 0);
    assert_false(w.err);
    if (w.len != body_len || (body_len && memcmp(w.buf, body, body_len) != 0)) {
        size_t at = 0;
        while (at < w.len && at < body_len && w.buf[at] == body[at]) at++;
        fail_msg("%s: %s v%d re-encoded %zu bytes, client sent %zu; first difference at %zu",
                 rel, api->name, version, w.len, body_len, at);
    }
    kiq_wr_free(&w);
    kiq_arena_reset(&arena);
    free(frame);
}

static void test_corpus_round_trip(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/index.tsv", corpus_dir());
    FILE *idx = fopen(path, "r");
    if (!idx) fail_msg("cannot open %s (set KIQ_CORPUS_DIR)", path);
    char line[1024];
    int frames = 0;
    while (fgets(line, sizeof line, idx)) {
        char rel[512];
        int key, version;
        size_t bytes;
        if (sscanf(line, "%511s %d %d %zu", rel, &key, &version, &bytes) != 4) continue;
        check_frame(rel, key, version, bytes);
        frames++;
    }
    fclose(idx);
    assert_int_equal(frames, CORPUS_FRAMES);
}

/* A body cut short anywhere must fail to decode cleanly, never read past
 * the end: every prefix of every corpus frame. */
static void test_corpus_truncated(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/index.tsv", corpus_dir());
    FILE *idx = fopen(path, "r");
    if (!idx) fail_msg("cannot open %s (set KIQ_CORPUS_DIR)", path);
    char line[1024];
    int checked = 0;
    while (fgets(line, sizeof line, idx)) {
        char rel[512];
        int key, version;
        size_t bytes;
        if (sscanf(line, "%511s %d %d %zu", rel, &key, &version, &bytes) != 4) continue;
        snprintf(path, sizeof path, "%s/%s", corpus_dir(), rel);
        size_t len = 0;
        uint8_t *frame = slurp(path, &len);
        if (!frame) fail_msg("cannot read %s", path);
        const kiq_api_codec_t *api = kiq_api_codec(key);
        assert_non_null(api);

        kiq_rd_t r;
        kiq_rd_init(&r, frame, len);
        kiq_rd_i16(&r);
        kiq_rd_i16(&r);
        kiq_rd_i32(&r);
        kiq_rd_string(&r, false, true);
        if (version >= api->flexible_min) skip_tags(&r);
        assert_null(r.err);
        size_t hdr = kiq_rd_offset(&r);

        for (size_t cut = hdr; cut < len; cut++) {
            /* A copy of exactly `cut` bytes, so any overread is an error
             * under sanitizers rather than a silent read of the rest. */
            uint8_t *part = malloc(cut - hdr + 1);
            assert_non_null(part);
            memcpy(part, frame + hdr, cut - hdr);
            kiq_rd_t pr;
            kiq_rd_init(&pr, part, cut - hdr);
            kiq_arena_t arena;
            kiq_arena_init(&arena);
            void *msg = kiq_arena_alloc(&arena, api->request_size);
            int rc = api->request_decode(&pr, (int16_t)version, &arena, msg);
            if (rc == 0 && !pr.err)
                fail_msg("%s: decode of %zu of %zu body bytes succeeded", rel, cut - hdr,
                         len - hdr);
            kiq_arena_reset(&arena);
            free(part);
        }
        free(frame);
        checked++;
    }
    fclose(idx);
    assert_int_equal(checked, CORPUS_FRAMES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_round_trip),
        cmocka_unit_test(test_corpus_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
