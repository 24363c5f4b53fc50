/* Producer ids (server/producer_ids.h): from the file, continuing after a
 * restart; from a source (the controller), asked for ahead of need and
 * never waited for: none in hand is a retriable failure that asks, a
 * tenth of a block left asks for the next, one request at a time, a
 * failed request asked again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/say.h"
#include "server/producer_ids.h"
#include "support/log_fixture.h"

static void test_file_blocks_continue_after_a_restart(void **state)
{
    char dir[64];
    assert_int_equal(kiq_test_temp_dir(dir, sizeof dir, "pids"), 0);
    kiq_producer_ids_t *p = kiq_producer_ids_new(dir, 10);
    assert_non_null(p);
    int64_t id = -1;
    for (int i = 0; i < 12; i++) {
        assert_int_equal(kiq_producer_ids_next(p, &id), 0);
        assert_int_equal(id, i);
    }
    kiq_producer_ids_free(p);
    p = kiq_producer_ids_new(dir, 10);
    assert_non_null(p);
    assert_int_equal(kiq_producer_ids_next(p, &id), 0);
    assert_int_equal(id, 20); /* past every id the last run reserved */
    kiq_producer_ids_free(p);
    kiq_test_remove_tree(dir);
}

/* A source that answers only when the test says. */
typedef struct source {
    int requests, arrivals;
    bool answer_at_once;
    int64_t next_start;
} source_t;

static void request(void *ctx, kiq_producer_ids_t *p)
{
    source_t *s = ctx;
    s->requests++;
    if (s->answer_at_once) {
        kiq_producer_ids_given(p, 0, s->next_start, 100);
        s->next_start += 100;
    }
}

static void arrived(void *ctx) { ((source_t *)ctx)->arrivals++; }

static void test_a_source_is_asked_ahead_and_never_waited_for(void **state)
{
    source_t s = {0, 0, false, 1000};
    kiq_producer_id_source_t src = {request, arrived, &s};
    kiq_producer_ids_t *p = kiq_producer_ids_new_from(&src);
    assert_non_null(p);
    int64_t id = -1;
    /* nothing in hand: a failure that asks */
    assert_int_equal(kiq_producer_ids_next(p, &id), -1);
    assert_non_null(strstr(kiq_error_get(), "on their way"));
    assert_int_equal(s.requests, 1);
    /* asked already: not again */
    assert_int_equal(kiq_producer_ids_next(p, &id), -1);
    kiq_producer_ids_prefetch(p);
    assert_false(kiq_producer_ids_ready(p));
    assert_int_equal(s.requests, 1);
    kiq_producer_ids_given(p, 0, 1000, 100);
    assert_int_equal(s.arrivals, 1); /* whoever waits for ids hears of it */
    assert_true(kiq_producer_ids_ready(p));
    s.next_start = 1100;
    for (int i = 0; i < 89; i++) {
        assert_int_equal(kiq_producer_ids_next(p, &id), 0);
        assert_int_equal(id, 1000 + i);
    }
    assert_int_equal(s.requests, 1);
    /* the 90th id leaves a tenth: the next block is asked for */
    assert_int_equal(kiq_producer_ids_next(p, &id), 0);
    assert_int_equal(s.requests, 2);
    kiq_producer_ids_given(p, 0, 5000, 100);
    for (int i = 90; i < 100; i++) {
        assert_int_equal(kiq_producer_ids_next(p, &id), 0);
        assert_int_equal(id, 1000 + i);
    }
    assert_int_equal(kiq_producer_ids_next(p, &id), 0);
    assert_int_equal(id, 5000); /* the spare block, without a wait */
    kiq_producer_ids_free(p);
}

static void test_a_failed_request_is_asked_again(void **state)
{
    source_t s = {0, 0, false, 0};
    kiq_producer_id_source_t src = {request, arrived, &s};
    kiq_producer_ids_t *p = kiq_producer_ids_new_from(&src);
    int64_t id;
    kiq_producer_ids_prefetch(p);
    assert_int_equal(s.requests, 1);
    kiq_error_set("the controller is away");
    kiq_producer_ids_given(p, -1, 0, 0);
    assert_int_equal(s.arrivals, 0);
    assert_int_equal(kiq_producer_ids_next(p, &id), -1);
    assert_int_equal(s.requests, 2);
    /* a source that answers at once (the controller is here): the id comes
     * in the same call */
    s.answer_at_once = true;
    kiq_producer_ids_given(p, -1, 0, 0);
    assert_int_equal(kiq_producer_ids_next(p, &id), 0);
    assert_int_equal(s.requests, 3);
    assert_int_equal(id, 0);
    kiq_producer_ids_free(p);
}

int main(void)
{
    kiq_say_set_level(KIQ_SAY_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_blocks_continue_after_a_restart),
        cmocka_unit_test(test_a_source_is_asked_ahead_and_never_waited_for),
        cmocka_unit_test(test_a_failed_request_is_asked_again),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
