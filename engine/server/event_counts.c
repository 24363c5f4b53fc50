#include "server/event_counts.h"

static void count(void *ctx, const kiq_event_t *e)
{
    kiq_event_counts_t *c = ctx;
    atomic_fetch_add_explicit(&c->n[e->point], 1, memory_order_relaxed);
}

kiq_observer_t kiq_event_counts_observer(kiq_event_counts_t *c)
{
    for (int i = 0; i < KIQ__POINTS; i++) atomic_init(&c->n[i], 0);
    return (kiq_observer_t){count, c, (1u << KIQ__POINTS) - 1};
}

uint64_t kiq_event_counts_get(kiq_event_counts_t *c, enum kiq_point point)
{
    return atomic_load_explicit(&c->n[point], memory_order_relaxed);
}
