/* The bounded request queue between processors and I/O threads
 * (queued.max.requests). Many producers, many consumers; one mutex guards
 * it. Processors never block on it: a failed push mutes the connection and
 * the processor is woken through its space callback when a pop makes room. */
#ifndef KIQ_NET_REQUEST_QUEUE_H
#define KIQ_NET_REQUEST_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/observer.h"
#include "net/request.h"

typedef struct kiq_request_queue kiq_request_queue_t;
typedef void (*kiq_queue_space_fn)(void *ctx);

kiq_request_queue_t *kiq_request_queue_new(size_t capacity);
void kiq_request_queue_free(kiq_request_queue_t *q);
/* Called (from the popping thread) after a pop from a full queue. Register
 * before any thread uses the queue. */
int kiq_request_queue_on_space(kiq_request_queue_t *q, kiq_queue_space_fn fn, void *ctx);
/* Where ENQUEUED is announced (under the queue's lock, with the requests
 * ahead and the bound), as broker `broker`. Before any thread uses the
 * queue; NULL: nowhere. */
void kiq_request_queue_set_observers(kiq_request_queue_t *q, const kiq_observers_t *observers, int32_t broker);
/* Any thread. false when full (or closed): the caller keeps the request,
 * which counts as muted (marked refused) until a push takes it or the
 * caller drops it with kiq_request_queue_forget. */
bool kiq_request_queue_try_push(kiq_request_queue_t *q, kiq_request_t *r);
/* Any thread: a refused request r is dropped (its connection closed). */
void kiq_request_queue_forget(kiq_request_queue_t *q, const kiq_request_t *r);
/* Any thread. Blocks; NULL once the queue is closed and drained. */
kiq_request_t *kiq_request_queue_pop(kiq_request_queue_t *q);
/* Wakes every blocked pop; later pops drain what is left then return NULL. */
void kiq_request_queue_close(kiq_request_queue_t *q);
size_t kiq_request_queue_depth(kiq_request_queue_t *q);
/* Any thread: requests refused for want of room now, their connections muted. */
size_t kiq_request_queue_muted(kiq_request_queue_t *q);

#endif
