/* Requests waiting for the controller and then the metadata here; see
 * topic_orders.h. */
#include "api/topic_orders.h"

#include "core/clock.h"

/* The parked answer; in the request's arena. */
typedef struct metadata_wait {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    uint64_t key;
    kiq_api_topic_orders_t *t;
} metadata_wait_t;

kiq_api_topic_orders_t *kiq_api_topic_orders_new(kiq_broker_t *b, kiq_request_t *r, void *resp, int32_t n,
                                                 int wait_ms)
{
    kiq_api_topic_orders_t *t = kiq_arena_calloc(&r->arena, 1, sizeof *t);
    t->b = b;
    t->r = r;
    t->resp = resp;
    t->n = n;
    t->order_of = kiq_arena_alloc(&r->arena, sizeof *t->order_of * (size_t)(n ? n : 1));
    for (int32_t i = 0; i < n; i++) t->order_of[i] = -1;
    t->orders = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *t->orders);
    t->deadline_ns = kiq_clock_mono_ns() + (int64_t)wait_ms * 1000000;
    return t;
}

kiq_topic_order_t *kiq_api_topic_orders_add(kiq_api_topic_orders_t *t, int32_t i)
{
    t->order_of[i] = t->norders;
    return &t->orders[t->norders++];
}

const kiq_topic_order_t *kiq_api_topic_orders_of(const kiq_api_topic_orders_t *t, int32_t i)
{
    return t->order_of[i] >= 0 ? &t->orders[t->order_of[i]] : NULL;
}

static bool all_shown(const kiq_api_topic_orders_t *t)
{
    for (int i = 0; i < t->norders; i++)
        if (!t->orders[i].error && !t->shown(t->b->metadata, &t->orders[i])) return false;
    return true;
}

static void answer(kiq_api_topic_orders_t *t)
{
    t->fill(t);
    kiq_request_respond(t->r, t->resp);
}

static bool try_complete(kiq_delayed_op_t *op, bool expired)
{
    metadata_wait_t *m = (metadata_wait_t *)op;
    if (!expired && !all_shown(m->t)) return false;
    answer(m->t);
    return true;
}

void kiq_api_topic_orders_decided(void *ctx)
{
    kiq_api_topic_orders_t *t = ctx;
    if (!t->wait || all_shown(t) || kiq_clock_mono_ns() >= t->deadline_ns) {
        answer(t);
        return;
    }
    metadata_wait_t *m = kiq_arena_alloc(&t->r->arena, sizeof *m);
    m->key = kiq_purgatory_metadata_key();
    m->op.kind = KIQ_DELAYED_REQUEST;
    m->op.deadline_ns = t->deadline_ns;
    m->op.try_complete = try_complete;
    m->op.keys = &m->key;
    m->op.nkeys = 1;
    m->t = t;
    kiq_purgatory_park(t->b->purgatory, &m->op);
}

bool kiq_api_topic_led_here(kiq_metadata_cache_t *mc, const kiq_topic_order_t *o)
{
    kiq_cached_partition_t p;
    int32_t n = kiq_metadata_cache_partition_count(mc, o->name.p, (size_t)o->name.len);
    for (int32_t i = 0; i < n; i++)
        if (!kiq_metadata_cache_partition(mc, o->name.p, (size_t)o->name.len, i, &p) || p.leader < 0) return false;
    return n > 0;
}
