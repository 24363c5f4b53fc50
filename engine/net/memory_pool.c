/* The request memory pool; see memory_pool.h. */
#include "net/memory_pool.h"

#include <stdatomic.h>
#include <stdlib.h>

struct kiq_memory_pool {
    int64_t capacity;
    int64_t large_capacity; /* what reservations that are not small may fill */
    _Atomic int64_t used;
    _Atomic uint64_t refused;
    atomic_bool starved; /* a reservation failed since waiters were last woken */
    struct {
        void (*fn)(void *ctx);
        void *ctx;
    } waiters[KIQ_MEMORY_POOL_MAX_WAITERS];
    int nwaiters;
};

kiq_memory_pool_t *kiq_memory_pool_new(int64_t capacity)
{
    kiq_memory_pool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->capacity = capacity;
    p->large_capacity = capacity - capacity / KIQ_MEMORY_POOL_RESERVE_SHARE;
    return p;
}

void kiq_memory_pool_free(kiq_memory_pool_t *p) { free(p); }

int kiq_memory_pool_on_release(kiq_memory_pool_t *p, void (*fn)(void *ctx), void *ctx)
{
    if (p->nwaiters == KIQ_MEMORY_POOL_MAX_WAITERS) return -1;
    p->waiters[p->nwaiters].fn = fn;
    p->waiters[p->nwaiters++].ctx = ctx;
    return 0;
}

bool kiq_memory_pool_reserve(kiq_memory_pool_t *p, size_t n, bool small)
{
    if (p->capacity < 0) {
        atomic_fetch_add_explicit(&p->used, (int64_t)n, memory_order_relaxed);
        return true;
    }
    int64_t bound = small ? p->capacity : p->large_capacity;
    int64_t cur = atomic_load_explicit(&p->used, memory_order_relaxed);
    do {
        /* an empty pool takes any one reservation, as Kafka's non-strict
         * pool does: a request larger than all but the reserve (a pool
         * set little above socket.request.max.bytes) is never stuck */
        if (cur + (int64_t)n > bound && cur > 0) {
            atomic_fetch_add_explicit(&p->refused, 1, memory_order_relaxed);
            atomic_store(&p->starved, true);
            return false;
        }
    } while (!atomic_compare_exchange_weak_explicit(&p->used, &cur, cur + (int64_t)n, memory_order_relaxed,
                                                    memory_order_relaxed));
    return true;
}

void kiq_memory_pool_take(kiq_memory_pool_t *p, size_t n)
{
    atomic_fetch_add_explicit(&p->used, (int64_t)n, memory_order_relaxed);
}

void kiq_memory_pool_release(kiq_memory_pool_t *p, size_t n)
{
    if (!n) return;
    atomic_fetch_sub_explicit(&p->used, (int64_t)n, memory_order_relaxed);
    if (atomic_load_explicit(&p->starved, memory_order_relaxed) && atomic_exchange(&p->starved, false))
        for (int i = 0; i < p->nwaiters; i++) p->waiters[i].fn(p->waiters[i].ctx);
}

void kiq_memory_pool_stats(kiq_memory_pool_t *p, kiq_memory_pool_stats_t *out)
{
    out->capacity = p->capacity;
    out->used = atomic_load_explicit(&p->used, memory_order_relaxed);
    out->refused = atomic_load_explicit(&p->refused, memory_order_relaxed);
}
