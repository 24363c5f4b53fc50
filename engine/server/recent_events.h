/* A broker's newest ISR changes, kept for the live page's "As it happens"
 * (GET /api/events), so a tab opened now still sees what happened before
 * it: an observer (core/observer.h) of ISR_SHRUNK and ISR_EXPANDED keeping
 * the last KIQ_RECENT_EVENTS in a ring. Any thread: the ring has its own
 * lock, held only to copy an event in or out. */
#ifndef KIQ_SERVER_RECENT_EVENTS_H
#define KIQ_SERVER_RECENT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/observer.h"

#define KIQ_RECENT_EVENTS 64
#define KIQ_RECENT_TOPIC 250 /* a topic name's longest, and its NUL */

typedef struct kiq_recent_event {
    uint64_t seq;    /* 1, 2, ... on this broker */
    int64_t wall_ms; /* when it was kept */
    enum kiq_point point;
    char topic[KIQ_RECENT_TOPIC];
    int32_t partition, peer, isr_size;
    int64_t follower_leo, leader_leo; /* follower_leo -1: it had fetched nothing */
    bool lagged;                      /* ISR_SHRUNK: it lagged (else the controller removed it) */
} kiq_recent_event_t;

typedef struct kiq_recent_events kiq_recent_events_t;

kiq_recent_events_t *kiq_recent_events_new(void);
void kiq_recent_events_free(kiq_recent_events_t *r);
/* The observer keeping r's events (r outlives it). */
kiq_observer_t kiq_recent_events_observer(kiq_recent_events_t *r);
/* The kept events with seq > after, oldest first, at most max into out:
 * how many. */
int kiq_recent_events_since(kiq_recent_events_t *r, uint64_t after, kiq_recent_event_t *out, int max);
/* The newest event's seq, 0 when none yet: below what a reader saw, the
 * broker was made anew (a restart) and numbers from 1 again. */
uint64_t kiq_recent_events_newest(kiq_recent_events_t *r);

#endif
