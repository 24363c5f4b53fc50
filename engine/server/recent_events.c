/* server/recent_events.h: a ring of the newest KIQ_RECENT_EVENTS. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "server/recent_events.h"

struct kiq_recent_events {
    pthread_mutex_t mu; /* guards ring and next */
    kiq_recent_event_t ring[KIQ_RECENT_EVENTS];
    uint64_t next; /* the next event's seq; slot (seq - 1) % KIQ_RECENT_EVENTS */
};

kiq_recent_events_t *kiq_recent_events_new(void)
{
    kiq_recent_events_t *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->next = 1;
    return r;
}

void kiq_recent_events_free(kiq_recent_events_t *r)
{
    if (!r) return;
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static void keep(void *ctx, const kiq_event_t *e)
{
    kiq_recent_events_t *r = ctx;
    kiq_recent_event_t k = {
        .wall_ms = kiq_clock_wall_ms(),
        .point = e->point,
        .partition = e->partition,
        .peer = e->peer,
        .isr_size = (int32_t)e->records,
        .follower_leo = e->first_offset,
        .leader_leo = e->after,
        .lagged = e->flags & KIQ_EVENT_LAGGED,
    };
    snprintf(k.topic, sizeof k.topic, "%s", e->topic ? e->topic : "");
    pthread_mutex_lock(&r->mu);
    k.seq = r->next++;
    r->ring[(k.seq - 1) % KIQ_RECENT_EVENTS] = k;
    pthread_mutex_unlock(&r->mu);
}

kiq_observer_t kiq_recent_events_observer(kiq_recent_events_t *r)
{
    return (kiq_observer_t){keep, r, (1u << KIQ_POINT_ISR_SHRUNK) | (1u << KIQ_POINT_ISR_EXPANDED)};
}

uint64_t kiq_recent_events_newest(kiq_recent_events_t *r)
{
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->next - 1;
    pthread_mutex_unlock(&r->mu);
    return n;
}

int kiq_recent_events_since(kiq_recent_events_t *r, uint64_t after, kiq_recent_event_t *out, int max)
{
    pthread_mutex_lock(&r->mu);
    uint64_t oldest = r->next > KIQ_RECENT_EVENTS ? r->next - KIQ_RECENT_EVENTS : 1;
    uint64_t from = after + 1 > oldest ? after + 1 : oldest;
    int n = 0;
    for (uint64_t s = from; s < r->next && n < max; s++) out[n++] = r->ring[(s - 1) % KIQ_RECENT_EVENTS];
    pthread_mutex_unlock(&r->mu);
    return n;
}
