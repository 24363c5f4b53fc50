/* The broker's newest ISR changes (server/recent_events.h): only ISR
 * shrinks and expands are kept, each with what the leader knew, numbered
 * from 1; a reader asks for those after the last it saw, and once the ring
 * has wrapped the oldest are gone and the rest come in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/recent_events.h"

static void emit(kiq_observer_t *o, enum kiq_point point, int32_t peer, int flags)
{
    kiq_event_t e = kiq_event(point, 1);
    e.topic = "orders";
    e.partition = 3;
    e.peer = peer;
    e.records = 2;
    e.first_offset = 40;
    e.after = 100;
    e.flags = flags;
    if (o->points & (1u << point)) o->on_event(o->ctx, &e);
}

static void test_keeps_isr_changes_with_their_figures(void **state)
{
    (void)state;
    kiq_recent_events_t *r = kiq_recent_events_new();
    assert_non_null(r);
    kiq_observer_t o = kiq_recent_events_observer(r);
    assert_int_equal(kiq_recent_events_newest(r), 0);
    emit(&o, KIQ_POINT_APPENDED, -1, 0);
    emit(&o, KIQ_POINT_ISR_SHRUNK, 2, KIQ_EVENT_LAGGED);
    emit(&o, KIQ_POINT_ISR_EXPANDED, 2, 0);
    kiq_recent_event_t got[KIQ_RECENT_EVENTS];
    assert_int_equal(kiq_recent_events_newest(r), 2);
    assert_int_equal(kiq_recent_events_since(r, 0, got, KIQ_RECENT_EVENTS), 2);
    assert_int_equal(got[0].seq, 1);
    assert_int_equal(got[0].point, KIQ_POINT_ISR_SHRUNK);
    assert_string_equal(got[0].topic, "orders");
    assert_int_equal(got[0].partition, 3);
    assert_int_equal(got[0].peer, 2);
    assert_int_equal(got[0].isr_size, 2);
    assert_int_equal(got[0].follower_leo, 40);
    assert_int_equal(got[0].leader_leo, 100);
    assert_true(got[0].lagged);
    assert_true(got[0].wall_ms > 0);
    assert_int_equal(got[1].point, KIQ_POINT_ISR_EXPANDED);
    assert_false(got[1].lagged);
    /* after the last seen: only what came since */
    assert_int_equal(kiq_recent_events_since(r, 1, got, KIQ_RECENT_EVENTS), 1);
    assert_int_equal(got[0].seq, 2);
    assert_int_equal(kiq_recent_events_since(r, 2, got, KIQ_RECENT_EVENTS), 0);
    kiq_recent_events_free(r);
}

static void test_the_oldest_go_when_the_ring_wraps(void **state)
{
    (void)state;
    kiq_recent_events_t *r = kiq_recent_events_new();
    assert_non_null(r);
    kiq_observer_t o = kiq_recent_events_observer(r);
    for (int i = 0; i < KIQ_RECENT_EVENTS + 10; i++) emit(&o, KIQ_POINT_ISR_SHRUNK, i, 0);
    kiq_recent_event_t got[KIQ_RECENT_EVENTS];
    assert_int_equal(kiq_recent_events_since(r, 0, got, KIQ_RECENT_EVENTS), KIQ_RECENT_EVENTS);
    for (int i = 0; i < KIQ_RECENT_EVENTS; i++) {
        assert_int_equal(got[i].seq, 11 + i);
        assert_int_equal(got[i].peer, 10 + i);
    }
    /* at most max, from the oldest asked for */
    assert_int_equal(kiq_recent_events_since(r, 20, got, 5), 5);
    assert_int_equal(got[0].seq, 21);
    assert_int_equal(got[4].seq, 25);
    kiq_recent_events_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keeps_isr_changes_with_their_figures),
        cmocka_unit_test(test_the_oldest_go_when_the_ring_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
