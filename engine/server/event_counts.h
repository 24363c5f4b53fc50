/* How many times each observer point fired on a broker since it was made:
 * the simplest observer (core/observer.h), always registered, read by Lua
 * (b:event_counts()) and tests. Counters are relaxed atomics: any thread
 * bumps and reads them. */
#ifndef KIQ_SERVER_EVENT_COUNTS_H
#define KIQ_SERVER_EVENT_COUNTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/observer.h"

typedef struct kiq_event_counts {
    atomic_uint_fast64_t n[KIQ__POINTS];
} kiq_event_counts_t;

/* An observer of every point counting into c (which outlives it). */
kiq_observer_t kiq_event_counts_observer(kiq_event_counts_t *c);
uint64_t kiq_event_counts_get(kiq_event_counts_t *c, enum kiq_point point);

#endif
