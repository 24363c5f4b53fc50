/* Every request frame real clients sent to KafkaIQ (tests/corpus, captured
 * by scripts/capture_corpus.sh) must decode with the generated codec and
 * re-encode to exactly the bytes the client sent. The one exception is
 * librdkafka 2.1+'s all-topics Metadata request: three stray bytes after its
 * fields, which Kafka ignores (tests/corpus/README.md). */
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
#include "support/corpus.h"

/* what librdkafka 2.1+ leaves after an all-topics Metadata request */
#define STRAY_BYTES 3

/* The APIs the capture's workload has its clients send: a refresh that
 * loses one (a client or a step that stopped working) fails here. */
static const int workload_apis[] = {
    KIQ_API_PRODUCE,          KIQ_API_FETCH,           KIQ_API_LIST_OFFSETS,
    KIQ_API_METADATA,         KIQ_API_OFFSET_COMMIT,   KIQ_API_OFFSET_FETCH,
    KIQ_API_FIND_COORDINATOR, KIQ_API_JOIN_GROUP,      KIQ_API_HEARTBEAT,
    KIQ_API_LEAVE_GROUP,      KIQ_API_SYNC_GROUP,      KIQ_API_DESCRIBE_GROUPS,
    KIQ_API_LIST_GROUPS,      KIQ_API_API_VERSIONS,    KIQ_API_CREATE_TOPICS,
    KIQ_API_DELETE_TOPICS,    KIQ_API_INIT_PRODUCER_ID, KIQ_API_ADD_PARTITIONS_TO_TXN,
    KIQ_API_ADD_OFFSETS_TO_TXN, KIQ_API_END_TXN,       KIQ_API_TXN_OFFSET_COMMIT,
    KIQ_API_DESCRIBE_CONFIGS, KIQ_API_ALTER_CONFIGS,   KIQ_API_CREATE_PARTITIONS,
    KIQ_API_INCREMENTAL_ALTER_CONFIGS, KIQ_API_CONSUMER_GROUP_DESCRIBE,
    KIQ_API_GET_TELEMETRY_SUBSCRIPTIONS,
};

/* Skips a tagged-field section, as the request header v2 carries one. */
static void skip_tags(kiq_rd_t *r)
{
    uint32_t count = kiq_rd_uvarint(r);
    for (uint32_t i = 0; i < count && !r->err; i++) {
        kiq_rd_uvarint(r);
        kiq_rd_raw(r, kiq_rd_uvarint(r));
    }
}

/* Reads the frame's request header, which must match the index; returns
 * the codec, with r left at the body. */
static const kiq_api_codec_t *read_header(kiq_rd_t *r, const kiq_test_frame_t *f)
{
    int16_t key = kiq_rd_i16(r);
    int16_t version = kiq_rd_i16(r);
    int32_t correlation_id = kiq_rd_i32(r);
    kiq_rd_string(r, false, true);
    assert_null(r->err);
    assert_int_equal(key, f->key);
    assert_int_equal(version, f->version);
    assert_int_equal(correlation_id, f->correlation_id);
    const kiq_api_codec_t *api = kiq_api_codec(key);
    if (!api) fail_msg("%s: no codec for api key %d", f->file, key);
    if (version < api->min_version || version > api->max_version)
        fail_msg("%s: %s v%d outside %d-%d", f->file, api->name, version, api->min_version, api->max_version);
    if (version >= api->flexible_min) skip_tags(r);
    assert_null(r->err);
    return api;
}

/* One decoded frame: the body starts at hdr, the fields took used bytes
 * of it (Apache Kafka ignores what follows, and so does the broker). */
typedef struct decoded {
    uint8_t *frame;
    size_t hdr, used;
    kiq_arena_t arena;
    void *msg;
} decoded_t;

/* Decodes one frame's body and checks that encoding the message again
 * gives the bytes the decoder took. */
static void decode(const kiq_test_frame_t *f, decoded_t *d)
{
    d->frame = kiq_test_corpus_read(f);
    kiq_rd_t r;
    kiq_rd_init(&r, d->frame, f->bytes);
    const kiq_api_codec_t *api = read_header(&r, f);
    d->hdr = kiq_rd_offset(&r);
    kiq_arena_init(&d->arena);
    d->msg = kiq_arena_alloc(&d->arena, api->request_size);
    int rc = api->request_decode(&r, (int16_t)f->version, &d->arena, d->msg);
    if (rc != 0 || r.err)
        fail_msg("%s: %s v%d decode failed at %zu: %s", f->file, api->name, f->version, kiq_rd_offset(&r),
                 r.err ? r.err : "(no reader error)");
    d->used = kiq_rd_offset(&r) - d->hdr;

    kiq_wr_t w;
    kiq_wr_init(&w);
    rc = api->request_encode(&w, (int16_t)f->version, d->msg);
    assert_int_equal(rc, 0);
    assert_false(w.err);
    const uint8_t *body = d->frame + d->hdr;
    if (w.len != d->used || (d->used && memcmp(w.buf, body, d->used) != 0)) {
        size_t at = 0;
        while (at < w.len && at < d->used && w.buf[at] == body[at]) at++;
        fail_msg("%s: %s v%d re-encoded %zu bytes, the decoder took %zu; first difference at %zu", f->file,
                 api->name, f->version, w.len, d->used, at);
    }
    kiq_wr_free(&w);
}

static void decoded_free(decoded_t *d)
{
    kiq_arena_reset(&d->arena);
    free(d->frame);
}

/* librdkafka 2.1 or later, by the index's client column. */
static bool librdkafka_2_1_plus(const char *client)
{
    int major, minor;
    if (sscanf(client, "librdkafka-%d.%d", &major, &minor) != 2) return false;
    return major > 2 || (major == 2 && minor >= 1);
}

/* The only frames with bytes after their fields: librdkafka 2.1+'s
 * all-topics Metadata (null topics, a flexible version), three of them. */
static void check_whole(const kiq_test_frame_t *f, void *ctx)
{
    int *stray_frames = ctx;
    decoded_t d;
    decode(f, &d);
    size_t left = f->bytes - d.hdr - d.used;
    if (left) {
        const kiq_metadata_request_t *md = d.msg;
        bool quirk = f->key == KIQ_API_METADATA && f->version >= kiq_api_codec(KIQ_API_METADATA)->flexible_min &&
                     md->topics_n < 0 && librdkafka_2_1_plus(f->client);
        if (!quirk || left != STRAY_BYTES) fail_msg("%s (%s): left %zu bytes undecoded", f->file, f->client, left);
        (*stray_frames)++;
    }
    decoded_free(&d);
}

static void test_corpus_round_trip(void **state)
{
    (void)state;
    int stray_frames = 0;
    int frames = kiq_test_corpus_each(check_whole, &stray_frames);
    /* the index lists every frame the corpus holds, and there are frames */
    assert_int_equal(frames, kiq_test_corpus_files());
    assert_true(frames > 0);
    /* librdkafka's quirk stays covered (tests/lua/broker_spec.lua sends one) */
    assert_true(stray_frames > 0);
}

static void mark_api(const kiq_test_frame_t *f, void *ctx)
{
    bool *seen = ctx;
    if (f->key >= 0 && f->key < 128) seen[f->key] = true;
}

static void test_corpus_covers_the_workload(void **state)
{
    (void)state;
    bool seen[128] = {false};
    kiq_test_corpus_each(mark_api, seen);
    for (size_t i = 0; i < sizeof workload_apis / sizeof workload_apis[0]; i++)
        if (!seen[workload_apis[i]])
            fail_msg("no %s request in the corpus", kiq_api_codec((int16_t)workload_apis[i])->name);
}

/* A body cut short anywhere before the end of its fields must fail to
 * decode cleanly, never read past the end. */
static void check_truncated(const kiq_test_frame_t *f, void *ctx)
{
    (void)ctx;
    decoded_t d;
    decode(f, &d);
    const kiq_api_codec_t *api = kiq_api_codec((int16_t)f->key);
    for (size_t cut = 0; cut < d.used; cut++) {
        /* A copy of exactly `cut` bytes, so any overread is an error under
         * sanitizers rather than a silent read of the rest. */
        uint8_t *part = malloc(cut + 1);
        assert_non_null(part);
        memcpy(part, d.frame + d.hdr, cut);
        kiq_rd_t pr;
        kiq_rd_init(&pr, part, cut);
        kiq_arena_t arena;
        kiq_arena_init(&arena);
        void *msg = kiq_arena_alloc(&arena, api->request_size);
        int rc = api->request_decode(&pr, (int16_t)f->version, &arena, msg);
        if (rc == 0 && !pr.err) fail_msg("%s: decode of %zu of %zu body bytes succeeded", f->file, cut, d.used);
        kiq_arena_reset(&arena);
        free(part);
    }
    decoded_free(&d);
}

static void test_corpus_truncated(void **state)
{
    (void)state;
    assert_true(kiq_test_corpus_each(check_truncated, NULL) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_round_trip),
        cmocka_unit_test(test_corpus_covers_the_workload),
        cmocka_unit_test(test_corpus_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
