#include "net/request.h"

#include <stdlib.h>

#include "core/say.h"

kiq_request_t *kiq_request_new(struct kiq_processor *p, uint64_t conn_id, uint8_t *frame,
                               size_t len)
{
    kiq_request_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->processor = p;
    r->conn_id = conn_id;
    r->frame = frame;
    r->frame_len = len;
    kiq_arena_init(&r->arena);
    return r;
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

void kiq_request_free(kiq_request_t *r)
{
    if (!r) return;
    for (kiq_owned_t *o = r->owned; o; o = o->next) o->fn(o->arg);
    kiq_arena_reset(&r->arena);
    free(r->frame);
    free(r->response);
    free(r->response_parts);
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
