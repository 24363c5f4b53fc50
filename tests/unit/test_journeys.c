/* The journey recorder on its own, fed events as the pipeline emits them:
 * a partition's event becomes a stage of exactly the kept journeys whose
 * offsets it concerns (the high watermark of the batches it passed, a
 * follower's LEO, a consumer's fetch of the ones it covers, the answer of
 * the batch it names, a transaction's marker), once each, and of no other
 * partition's; a stage's wall time is its monotonic time moved by the
 * wall clock's lead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/clock.h"
#include "journey/journey.h"

static kiq_journeys_t *rec;
static kiq_observer_t obs;

static int setup(void **state)
{
    (void)state;
    rec = kiq_journeys_new(1, 64);
    if (!rec) return -1;
    obs = kiq_journeys_observer(rec);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kiq_journeys_free(rec);
    return 0;
}

static void emit(const kiq_event_t *e) { obs.on_event(obs.ctx, e); }

/* A follower's append of first..last (no request: the journey begins there). */
static void appended(int32_t partition, int64_t first, int64_t last, int64_t producer)
{
    kiq_event_t e = kiq_event(KIQ_POINT_APPENDED, 1);
    e.topic = "t";
    e.partition = partition;
    e.first_offset = first;
    e.last_offset = last;
    e.before = first;
    e.after = last + 1;
    e.flags = KIQ_EVENT_FOLLOWER;
    e.file = "/data/t-0/00000000000000000000.log";
    e.producer_id = producer;
    emit(&e);
}

static kiq_event_t at(enum kiq_point point, int32_t partition)
{
    kiq_event_t e = kiq_event(point, 1);
    e.topic = "t";
    e.partition = partition;
    return e;
}

/* How many stages at point the journey of the batch holding offset has. */
static int stages(int32_t partition, int64_t offset, enum kiq_point point)
{
    kiq_journey_t *jr = malloc(sizeof *jr);
    assert_non_null(jr);
    assert_true(kiq_journeys_find(rec, "t", partition, offset, jr));
    int n = 0;
    for (int i = 0; i < jr->nstages; i++) n += jr->stages[i].point == point;
    free(jr);
    return n;
}

static void test_partition_events_reach_the_batches_they_concern(void **state)
{
    (void)state;
    appended(0, 0, 4, -1);
    appended(0, 5, 9, -1);
    appended(0, 10, 14, -1);
    appended(1, 0, 4, -1);

    /* the high watermark 0 -> 10 commits 0..4 and 5..9, not 10..14 */
    kiq_event_t hw = at(KIQ_POINT_HW_ADVANCED, 0);
    hw.before = 0;
    hw.after = 10;
    emit(&hw);
    emit(&hw); /* once each */
    assert_int_equal(stages(0, 0, KIQ_POINT_HW_ADVANCED), 1);
    assert_int_equal(stages(0, 7, KIQ_POINT_HW_ADVANCED), 1);
    assert_int_equal(stages(0, 12, KIQ_POINT_HW_ADVANCED), 0);
    assert_int_equal(stages(1, 0, KIQ_POINT_HW_ADVANCED), 0);

    /* follower 2's LEO 0 -> 5 passed 0..4 only */
    kiq_event_t leo = at(KIQ_POINT_FOLLOWER_LEO, 0);
    leo.peer = 2;
    leo.before = 0;
    leo.after = 5;
    emit(&leo);
    assert_int_equal(stages(0, 4, KIQ_POINT_FOLLOWER_LEO), 1);
    assert_int_equal(stages(0, 5, KIQ_POINT_FOLLOWER_LEO), 0);

    /* a consumer's fetch from 6 with the high watermark at 12 reads 5..9 and 10..14 */
    kiq_event_t fetched = at(KIQ_POINT_RECORDS_FETCHED, 0);
    fetched.first_offset = 6;
    fetched.last_offset = 12;
    emit(&fetched);
    assert_int_equal(stages(0, 0, KIQ_POINT_RECORDS_FETCHED), 0);
    assert_int_equal(stages(0, 5, KIQ_POINT_RECORDS_FETCHED), 1);
    assert_int_equal(stages(0, 10, KIQ_POINT_RECORDS_FETCHED), 1);

    /* an answer names its batch by base offset; a failed one (-1) names none */
    kiq_event_t answer = at(KIQ_POINT_ANSWERED, 0);
    answer.first_offset = 5;
    emit(&answer);
    answer.first_offset = -1;
    emit(&answer);
    assert_int_equal(stages(0, 0, KIQ_POINT_ANSWERED), 0);
    assert_int_equal(stages(0, 9, KIQ_POINT_ANSWERED), 1);
    assert_int_equal(stages(0, 14, KIQ_POINT_ANSWERED), 0);
    assert_int_equal(stages(1, 0, KIQ_POINT_ANSWERED), 0);
}

static void test_a_marker_ends_its_producers_batches(void **state)
{
    (void)state;
    appended(0, 0, 0, 7);
    appended(0, 1, 1, 8);
    appended(0, 2, 2, 7);
    appended(0, 3, 3, 7);
    /* producer 7's COMMIT at 3 for the transaction begun at 0: batches 0 and 2 */
    kiq_event_t marker = at(KIQ_POINT_TXN_MARKER, 0);
    marker.producer_id = 7;
    marker.before = 0;
    marker.after = 3;
    marker.extra = 1;
    emit(&marker);
    assert_int_equal(stages(0, 0, KIQ_POINT_TXN_MARKER), 1);
    assert_int_equal(stages(0, 1, KIQ_POINT_TXN_MARKER), 0);
    assert_int_equal(stages(0, 2, KIQ_POINT_TXN_MARKER), 1);
    assert_int_equal(stages(0, 3, KIQ_POINT_TXN_MARKER), 0); /* the marker itself is not before it */
    /* none when the transaction's start is unknown */
    appended(0, 4, 4, 9);
    marker.producer_id = 9;
    marker.before = -1;
    marker.after = 5;
    emit(&marker);
    assert_int_equal(stages(0, 4, KIQ_POINT_TXN_MARKER), 0);
}

static void test_wall_time_is_the_monotonic_time_moved(void **state)
{
    (void)state;
    appended(0, 0, 0, -1);
    kiq_event_t hw = at(KIQ_POINT_HW_ADVANCED, 0);
    hw.before = 0;
    hw.after = 1;
    hw.t_ns += 20000000; /* 20 ms on: past the time a thread keeps the lead it read */
    emit(&hw);
    kiq_journey_t *jr = malloc(sizeof *jr);
    assert_non_null(jr);
    assert_true(kiq_journeys_find(rec, "t", 0, 0, jr));
    assert_int_equal(jr->nstages, 2);
    struct timespec real;
    clock_gettime(CLOCK_REALTIME, &real);
    int64_t lead = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec - kiq_clock_system_mono_ns();
    for (int i = 0; i < 2; i++) {
        int64_t moved = jr->stages[i].wall_ns - jr->stages[i].t_ns;
        assert_true(llabs(moved - lead) < 1000000); /* within a millisecond of the clocks' lead now */
    }
    free(jr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_partition_events_reach_the_batches_they_concern, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_marker_ends_its_producers_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wall_time_is_the_monotonic_time_moved, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
