/* queued.max.request.bytes (Kafka's MemoryPool): the bytes of requests
 * being read (connection input buffers) and queued (frames, until their
 * request is freed), shared by a listener's processors. A processor that
 * cannot reserve what its next read needs leaves that connection unread
 * until bytes come back; giving bytes back wakes the processors that went
 * without. The last KIQ_MEMORY_POOL_RESERVE_SHARE of the capacity is kept
 * for small reservations, so small requests (a new client's first ones)
 * are read while large ones wait for room. Any thread (atomics; the
 * waiters' list is set before start). */
#ifndef KIQ_NET_MEMORY_POOL_H
#define KIQ_NET_MEMORY_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KIQ_MEMORY_POOL_MAX_WAITERS 64
#define KIQ_MEMORY_POOL_RESERVE_SHARE 8 /* an eighth */

typedef struct kiq_memory_pool kiq_memory_pool_t;

/* capacity < 0: no bound (only counted). NULL: out of memory. */
kiq_memory_pool_t *kiq_memory_pool_new(int64_t capacity);
void kiq_memory_pool_free(kiq_memory_pool_t *p);
/* Before any thread uses the pool: fn(ctx) is called (from whichever
 * thread gives bytes back) when a reservation failed since the last call.
 * 0, or -1 past KIQ_MEMORY_POOL_MAX_WAITERS. */
int kiq_memory_pool_on_release(kiq_memory_pool_t *p, void (*fn)(void *ctx), void *ctx);
/* n more bytes, if they fit: within the whole capacity when small, else
 * within all but its reserve, or whatever n is when nothing is held;
 * false (counted) when they do not. */
bool kiq_memory_pool_reserve(kiq_memory_pool_t *p, size_t n, bool small);
/* n more bytes whether they fit or not: bytes already read, which must be
 * framed for the pool to drain at all. */
void kiq_memory_pool_take(kiq_memory_pool_t *p, size_t n);
void kiq_memory_pool_release(kiq_memory_pool_t *p, size_t n);

typedef struct kiq_memory_pool_stats {
    int64_t capacity; /* -1: no bound */
    int64_t used;
    uint64_t refused; /* reservations that did not fit */
} kiq_memory_pool_stats_t;
void kiq_memory_pool_stats(kiq_memory_pool_t *p, kiq_memory_pool_stats_t *out);

#endif
