#include "server/request_stats.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

const char *const kiq_request_stage_names[KIQ_STAGE__COUNT] = {
    "queue", "local", "remote", "response_queue", "send", "total",
};

static int64_t span(int64_t from, int64_t to) { return from && to && to > from ? to - from : 0; }

/* The api's slot of a lazily made table of n elements of size each; NULL
 * when out of memory (what it would count goes uncounted). */
static void *lazy_table(_Atomic(void *) *slot, size_t n, size_t size)
{
    void *t = atomic_load_explicit(slot, memory_order_acquire);
    if (t) return t;
    void *fresh = calloc(n, size);
    if (!fresh) return NULL;
    if (atomic_compare_exchange_strong(slot, &t, fresh)) return fresh;
    free(fresh); /* another processor made it first: t is theirs */
    return t;
}

static void record_errors(kiq_request_stats_t *s, int16_t key, const kiq_request_errors_t *e)
{
    if (!e->n) return;
    atomic_uint_fast64_t *counts =
        lazy_table((_Atomic(void *) *)&s->errors[key], KIQ_STATS_MAX_ERROR, sizeof(atomic_uint_fast64_t));
    if (!counts) return;
    for (int i = 0; i < e->n; i++) {
        int at = e->code[i] >= -1 && e->code[i] < KIQ_STATS_MAX_ERROR - 1 ? e->code[i] + 1 : 0;
        atomic_fetch_add_explicit(&counts[at], e->count[i], memory_order_relaxed);
    }
}

void kiq_request_stats_record(kiq_request_stats_t *s, const kiq_request_t *r)
{
    int16_t key = r->header.api_key;
    if (key < 0 || key >= KIQ_STATS_MAX_API || !r->codec) return;
    const kiq_request_times_t *t = &r->t;
    int64_t stage[KIQ_STAGE__COUNT] = {
        span(t->enqueued, t->dequeued),          span(t->dequeued, t->handled),
        span(t->handled, t->completed),          span(t->response_queued, t->response_dequeued),
        span(t->response_dequeued, t->sent),     span(t->received, t->sent),
    };
    atomic_fetch_add_explicit(&s->count[key], 1, memory_order_relaxed);
    if (r->header.api_version >= 0 && r->header.api_version < KIQ_STATS_MAX_VERSION)
        atomic_fetch_add_explicit(&s->by_version[key][r->header.api_version], 1, memory_order_relaxed);
    for (int i = 0; i < KIQ_STAGE__COUNT; i++)
        atomic_fetch_add_explicit(&s->ns[key][i], stage[i], memory_order_relaxed);
    record_errors(s, key, &r->errors);
    kiq_histogram_t *h = lazy_table((_Atomic(void *) *)&s->times[key], KIQ_STAGE__COUNT, sizeof *h);
    if (!h) return; /* percentiles go without this one */
    int64_t now = kiq_clock_mono_ms();
    for (int i = 0; i < KIQ_STAGE__COUNT; i++) kiq_histogram_record_ns(&h[i], stage[i], now);
}

uint64_t kiq_request_stats_version(kiq_request_stats_t *s, int16_t api_key, int16_t version)
{
    if (api_key < 0 || api_key >= KIQ_STATS_MAX_API || version < 0 || version >= KIQ_STATS_MAX_VERSION) return 0;
    return atomic_load_explicit(&s->by_version[api_key][version], memory_order_relaxed);
}

uint64_t kiq_request_stats_errors(kiq_request_stats_t *s, int16_t api_key, int code)
{
    if (api_key < 0 || api_key >= KIQ_STATS_MAX_API || code < -1 || code >= KIQ_STATS_MAX_ERROR - 1) return 0;
    atomic_uint_fast64_t *counts = atomic_load_explicit(&s->errors[api_key], memory_order_acquire);
    return counts ? atomic_load_explicit(&counts[code + 1], memory_order_relaxed) : 0;
}

kiq_histogram_t *kiq_request_stats_times(kiq_request_stats_t *s, int16_t api_key, enum kiq_request_stage stage)
{
    if (api_key < 0 || api_key >= KIQ_STATS_MAX_API) return NULL;
    kiq_histogram_t *h = atomic_load_explicit(&s->times[api_key], memory_order_acquire);
    return h ? &h[stage] : NULL;
}

void kiq_request_stats_clear(kiq_request_stats_t *s)
{
    for (int i = 0; i < KIQ_STATS_MAX_API; i++) {
        free(atomic_load(&s->times[i]));
        free((void *)atomic_load(&s->errors[i]));
    }
    memset(s, 0, sizeof *s);
}

void kiq_request_stats_trailing(kiq_request_stats_t *s, int16_t api_key, size_t n)
{
    if (api_key < 0 || api_key >= KIQ_STATS_MAX_API) return;
    atomic_fetch_add_explicit(&s->trailing_requests[api_key], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->trailing_bytes[api_key], n, memory_order_relaxed);
}

uint64_t kiq_request_stats_get(kiq_request_stats_t *s, int16_t api_key,
                               int64_t ns[KIQ_STAGE__COUNT])
{
    if (api_key < 0 || api_key >= KIQ_STATS_MAX_API) return 0;
    for (int i = 0; i < KIQ_STAGE__COUNT; i++)
        ns[i] = atomic_load_explicit(&s->ns[api_key][i], memory_order_relaxed);
    return atomic_load_explicit(&s->count[api_key], memory_order_relaxed);
}

uint64_t kiq_request_stats_get_trailing(kiq_request_stats_t *s, int16_t api_key, uint64_t *bytes)
{
    *bytes = 0;
    if (api_key < 0 || api_key >= KIQ_STATS_MAX_API) return 0;
    *bytes = atomic_load_explicit(&s->trailing_bytes[api_key], memory_order_relaxed);
    return atomic_load_explicit(&s->trailing_requests[api_key], memory_order_relaxed);
}
