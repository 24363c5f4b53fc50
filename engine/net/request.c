#include "net/request.h"
#include "security/sasl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "net/memory_pool.h"
#include "net/processor.h"
#include "proto/writer.h"

kiq_request_t *kiq_request_reuse(kiq_request_t *r, struct kiq_processor *p, uint64_t conn_id, uint8_t *frame,
                                 size_t len)
{
    kiq_arena_t arena = r->arena;
    memset(r, 0, sizeof *r);
    r->arena = arena;
    r->processor = p;
    r->conn_id = conn_id;
    r->frame = frame;
    r->frame_len = len;
    r->frame_mem = frame;
    r->frame_cap = len;
    return r;
}

kiq_request_t *kiq_request_new(struct kiq_processor *p, uint64_t conn_id, uint8_t *frame,
                               size_t len)
{
    kiq_request_t *r = malloc(sizeof *r);
    if (!r) return NULL;
    kiq_arena_init(&r->arena);
    return kiq_request_reuse(r, p, conn_id, frame, len);
}

typedef struct kiq_owned {
    void (*fn)(void *);
    void *arg;
    struct kiq_owned *next;
} kiq_owned_t;

void kiq_request_defer(kiq_request_t *r, void (*fn)(void *), void *arg)
{
    kiq_owned_t *o = kiq_arena_alloc(&r->arena, sizeof *o);
    o->fn = fn;
    o->arg = arg;
    o->next = r->owned;
    r->owned = o;
}

void kiq_request_own(kiq_request_t *r, void *buf) { kiq_request_defer(r, free, buf); }

void kiq_request_clear(kiq_request_t *r)
{
    for (kiq_owned_t *o = r->owned; o; o = o->next) o->fn(o->arg);
    r->owned = NULL;
    kiq_arena_clear(&r->arena);
    free(r->frame_mem);
    r->frame_mem = NULL;
    if (r->pool) kiq_memory_pool_release(r->pool, r->pooled);
    r->pool = NULL;
    if (!r->response_in_arena) free(r->response);
    if (!r->parts_in_arena) free(r->response_parts);
    r->response = NULL;
    r->response_parts = NULL;
    kiq_sasl_session_unref(r->sasl);
    r->sasl = NULL;
}

void kiq_request_free(kiq_request_t *r)
{
    if (!r) return;
    kiq_request_clear(r);
    kiq_arena_reset(&r->arena);
    free(r);
}

static double us(int64_t from, int64_t to) { return from && to ? (double)(to - from) / 1e3 : 0; }

void kiq_request_log_timing(const kiq_request_t *r)
{
    const kiq_request_times_t *t = &r->t;
    KIQ_DEBUG("request %s v%d corr=%d client=" KIQ_STR_FMT " from %s: total %.0fus "
              "(queue %.0f, local %.0f, remote %.0f, response-queue %.0f, send %.0f)",
              r->codec ? r->codec->name : "?", r->header.api_version, r->header.correlation_id,
              KIQ_STR_ARG(r->header.client_id), r->peer, us(t->received, t->sent),
              us(t->enqueued, t->dequeued), us(t->dequeued, t->handled),
              us(t->handled, t->completed), us(t->response_queued, t->response_dequeued),
              us(t->response_dequeued, t->sent));
}

kiq_str_t kiq_request_str(kiq_request_t *r, const char *s)
{
    if (!s) return KIQ_STR_NULL;
    size_t n = strlen(s);
    return (kiq_str_t){kiq_arena_strndup(&r->arena, s, n), (int32_t)n};
}

kiq_str_t kiq_request_error_message(kiq_request_t *r) { return kiq_request_str(r, kiq_error_get()); }

/* close_after may already be set: an interceptor's drop = "after". */
/* The before_respond hook, once: a response (NULL: none goes out, as for
 * an acks=0 produce, which is throttled all the same). */
static void before_respond(kiq_request_t *r, void *response)
{
    void (*fn)(void *, kiq_request_t *, void *) = r->before_respond;
    if (!fn) return;
    r->before_respond = NULL;
    fn(r->before_respond_ctx, r, response);
}

void kiq_request_finish(kiq_request_t *r, bool close_connection)
{
    if (!close_connection && !r->close_after) before_respond(r, NULL);
    r->t.completed = kiq_clock_mono_ns();
    r->close_after = r->close_after || close_connection;
    kiq_processor_complete(r);
}

static void tally_error(void *ctx, int16_t code)
{
    kiq_request_errors_t *e = ctx;
    for (int i = 0; i < e->n; i++)
        if (e->code[i] == code) {
            e->count[i]++;
            return;
        }
    if (e->n == KIQ_REQUEST_ERROR_KINDS) {
        e->more++;
        return;
    }
    e->code[e->n] = code;
    e->count[e->n++] = 1;
}

/* A raw SASL token's answer: the server's token with its size, or no
 * answer and a closed connection when the exchange failed. */
static void respond_raw(kiq_request_t *r)
{
    if (r->answer_then_close) {
        kiq_request_finish(r, true);
        return;
    }
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i32(&w, r->sasl_raw_answer.len);
    kiq_wr_raw(&w, r->sasl_raw_answer.p, (size_t)r->sasl_raw_answer.len);
    if (w.err) {
        kiq_wr_free(&w);
        kiq_request_finish(r, true);
        return;
    }
    r->response = kiq_wr_steal(&w, &r->response_len);
    kiq_request_finish(r, false);
}

/* A response's first room in the arena: most answers fit (a produce's,
 * a fetch's from files); and its file parts (one per log slice of a
 * partition, KIQ_LOG_MAX_SLICES at most, usually one). */
enum { RESPONSE_ROOM = 1024, RESPONSE_PARTS = 8 };

void kiq_request_respond(kiq_request_t *r, const void *response)
{
    before_respond(r, (void *)response);
    if (r->close_after) {
        /* the handler ran; the interceptor wants the answer lost */
        kiq_request_finish(r, true);
        return;
    }
    if (r->sasl_raw) {
        respond_raw(r);
        return;
    }
    int16_t v = r->header.api_version;
    /* ApiVersions answers an unsupported version as v0 (PROTOCOL.md) */
    if (r->header.api_key == KIQ_API_API_VERSIONS && (v < r->codec->min_version || v > r->codec->max_version)) v = 0;
    /* encoded in the arena, sized once: a handler's hint (a copied fetch's
     * records), else room for a small response; one that outgrows it
     * moves to the heap */
    size_t room = r->response_size_hint ? r->response_size_hint : RESPONSE_ROOM;
    kiq_wr_t w;
    kiq_wr_init_lent(&w, kiq_arena_alloc_raw(&r->arena, room), room,
                     kiq_arena_alloc_raw(&r->arena, RESPONSE_PARTS * sizeof(kiq_file_part_t)), RESPONSE_PARTS);
    kiq_wr_i32(&w, 0);
    kiq_response_header_encode(&w, r->header.api_key, v, r->header.correlation_id);
    r->codec->response_encode(&w, v, response);
    r->codec->response_errors(response, v, tally_error, &r->errors);
    if (w.err) {
        KIQ_ERROR("%s v%d: cannot encode the response (out of memory); closing", r->codec->name, v);
        kiq_wr_free(&w);
        kiq_request_finish(r, true);
        return;
    }
    uint64_t size = kiq_wr_size(&w) - 4;
    if (size > INT32_MAX) {
        KIQ_ERROR("%s v%d: a %llu-byte response cannot be framed; closing", r->codec->name, v,
                  (unsigned long long)size);
        kiq_wr_free(&w);
        kiq_request_finish(r, true);
        return;
    }
    kiq_wr_patch_i32(&w, 0, (int32_t)size);
    r->parts_in_arena = kiq_wr_parts_lent(&w);
    r->response_parts = kiq_wr_steal_parts(&w, &r->response_nparts);
    if (!r->response_nparts) r->response_parts = NULL; /* the lent room, unused */
    r->response_in_arena = kiq_wr_lent(&w);
    r->response = kiq_wr_steal(&w, &r->response_len);
    kiq_request_finish(r, r->answer_then_close);
}
