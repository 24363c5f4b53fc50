#include "core/observer.h"

#include "core/clock.h"
#include "core/error.h"

const char *const kiq_point_names[KIQ__POINTS] = {
    "received", "enqueued",         "dequeued",     "handled",         "validated", "appended",        "flushed",
    "follower_fetched", "follower_leo", "hw_advanced", "response_queued", "sent",      "records_fetched",
    "answered", "txn_marker", "isr_shrunk", "isr_expanded", "share_acquired", "share_acknowledged",
    "share_lock_expired", "authorization_denied",
};

kiq_event_t kiq_event(enum kiq_point point, int32_t broker)
{
    return (kiq_event_t){
        .point = point,
        .t_ns = kiq_clock_mono_ns(),
        .broker = broker,
        .partition = -1,
        .first_offset = -1,
        .last_offset = -1,
        .before = -1,
        .after = -1,
        .peer = -1,
        .thread = -1,
        .position = -1,
        .bytes = -1,
        .records = -1,
        .extra = -1,
        .producer_id = -1,
    };
}

int kiq_observers_add(kiq_observers_t *o, const kiq_observer_t *observer)
{
    if (o->n >= KIQ_MAX_OBSERVERS) return kiq_error_set("at most %d observers", KIQ_MAX_OBSERVERS);
    o->list[o->n++] = *observer;
    o->wanted |= observer->points;
    return 0;
}

void kiq_observers_emit(const kiq_observers_t *o, const kiq_event_t *e)
{
    for (int i = 0; i < o->n; i++)
        if (o->list[i].points >> e->point & 1u) o->list[i].on_event(o->list[i].ctx, e);
}
