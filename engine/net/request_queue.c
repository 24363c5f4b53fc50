#include "net/request_queue.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/error.h"

enum { MAX_SPACE_WATCHERS = 64 };

struct kiq_request_queue {
    pthread_mutex_t lock; /* guards everything below but wake */
    /* Blocked pops wait on this semaphore rather than a condition variable:
     * a condition variable's wait takes the lock back marked contended, so
     * its unlock is one more futex call per request. A push posts once per
     * pop it counted idle, after the unlock. */
    sem_t wake;
    size_t idle; /* pops about to wait or waiting on wake, not yet posted */
    kiq_request_t **ring;
    size_t capacity, head, count;
    size_t muted; /* requests refused for want of room and not in yet: their connections wait muted */
    bool closed;
    struct { kiq_queue_space_fn fn; void *ctx; } watchers[MAX_SPACE_WATCHERS];
    int nwatchers;
    const kiq_observers_t *observers; /* set before use */
    int32_t broker;
};

kiq_request_queue_t *kiq_request_queue_new(size_t capacity)
{
    kiq_request_queue_t *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->ring = calloc(capacity, sizeof *q->ring);
    if (!q->ring) {
        free(q);
        return NULL;
    }
    q->capacity = capacity;
    pthread_mutex_init(&q->lock, NULL);
    if (sem_init(&q->wake, 0, 0) != 0) {
        pthread_mutex_destroy(&q->lock);
        free(q->ring);
        free(q);
        return NULL;
    }
    return q;
}

void kiq_request_queue_free(kiq_request_queue_t *q)
{
    if (!q) return;
    for (size_t i = 0; i < q->count; i++)
        kiq_request_free(q->ring[(q->head + i) % q->capacity]);
    pthread_mutex_destroy(&q->lock);
    sem_destroy(&q->wake);
    free(q->ring);
    free(q);
}

int kiq_request_queue_on_space(kiq_request_queue_t *q, kiq_queue_space_fn fn, void *ctx)
{
    if (q->nwatchers == MAX_SPACE_WATCHERS) return kiq_error_set("too many queue watchers");
    q->watchers[q->nwatchers].fn = fn;
    q->watchers[q->nwatchers].ctx = ctx;
    q->nwatchers++;
    return 0;
}

bool kiq_request_queue_try_push(kiq_request_queue_t *q, kiq_request_t *r)
{
    pthread_mutex_lock(&q->lock);
    bool ok = !q->closed && q->count < q->capacity;
    bool post = false;
    if (ok) {
        r->t.enqueued = kiq_clock_mono_ns();
        q->ring[(q->head + q->count) % q->capacity] = r;
        q->count++;
        if (r->refused) q->muted--;
        /* under the lock: a popper may take r the moment it is released */
        if (kiq_observers_want(q->observers, KIQ_POINT_ENQUEUED)) {
            kiq_event_t e = kiq_event(KIQ_POINT_ENQUEUED, q->broker);
            e.request = r;
            e.before = (int64_t)q->count - 1;
            e.after = (int64_t)q->capacity;
            e.extra = (int32_t)q->muted;
            if (r->refused) e.flags |= KIQ_EVENT_MUTED;
            kiq_observers_emit(q->observers, &e);
        }
        if (q->idle > 0) {
            q->idle--;
            post = true;
        }
    } else if (!q->closed && !r->refused) {
        r->refused = true;
        q->muted++;
    }
    pthread_mutex_unlock(&q->lock);
    /* after the unlock: an I/O thread woken under it would only block on
     * the lock again (a second futex round trip per request) */
    if (post) sem_post(&q->wake);
    return ok;
}

void kiq_request_queue_forget(kiq_request_queue_t *q, const kiq_request_t *r)
{
    if (!r->refused) return;
    pthread_mutex_lock(&q->lock);
    q->muted--;
    pthread_mutex_unlock(&q->lock);
}

void kiq_request_queue_set_observers(kiq_request_queue_t *q, const kiq_observers_t *observers, int32_t broker)
{
    q->observers = observers;
    q->broker = broker;
}

kiq_request_t *kiq_request_queue_pop(kiq_request_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    while (q->count == 0 && !q->closed) {
        q->idle++;
        pthread_mutex_unlock(&q->lock);
        /* a post may come before the wait: the semaphore keeps it; a
         * request another pop took first sends this one round again */
        while (sem_wait(&q->wake) != 0) continue; /* EINTR */
        pthread_mutex_lock(&q->lock);
    }
    kiq_request_t *r = NULL;
    bool was_full = q->count == q->capacity;
    if (q->count > 0) {
        r = q->ring[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        r->t.dequeued = kiq_clock_mono_ns();
    }
    pthread_mutex_unlock(&q->lock);
    if (r && was_full)
        for (int i = 0; i < q->nwatchers; i++) q->watchers[i].fn(q->watchers[i].ctx);
    return r;
}

void kiq_request_queue_close(kiq_request_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    size_t waiting = q->idle;
    q->idle = 0;
    pthread_mutex_unlock(&q->lock);
    for (size_t i = 0; i < waiting; i++) sem_post(&q->wake);
}

size_t kiq_request_queue_depth(kiq_request_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->count;
    pthread_mutex_unlock(&q->lock);
    return n;
}

size_t kiq_request_queue_muted(kiq_request_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    size_t n = q->muted;
    pthread_mutex_unlock(&q->lock);
    return n;
}
