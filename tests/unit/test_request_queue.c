/* The bounded request queue: capacity holds, order is FIFO, a pop from a
 * full queue calls the space watchers, close wakes blocked consumers,
 * refused requests count as muted until pushed or forgotten. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "net/request_queue.h"

static int space_calls;
static void on_space(void *ctx) { (*(int *)ctx)++; }

static kiq_request_t *req(int id)
{
    kiq_request_t *r = kiq_request_new(NULL, (uint64_t)id, NULL, 0);
    assert_non_null(r);
    return r;
}

static void test_bounded_fifo_and_space(void **state)
{
    (void)state;
    kiq_request_queue_t *q = kiq_request_queue_new(3);
    space_calls = 0;
    kiq_request_queue_on_space(q, on_space, &space_calls);
    kiq_request_t *rs[4];
    for (int i = 0; i < 4; i++) rs[i] = req(i);
    assert_true(kiq_request_queue_try_push(q, rs[0]));
    assert_true(kiq_request_queue_try_push(q, rs[1]));
    assert_true(kiq_request_queue_try_push(q, rs[2]));
    assert_false(kiq_request_queue_try_push(q, rs[3]));
    assert_int_equal(kiq_request_queue_depth(q), 3);
    assert_true(rs[0]->t.enqueued > 0);

    kiq_request_t *r = kiq_request_queue_pop(q);
    assert_ptr_equal(r, rs[0]);
    assert_true(r->t.dequeued >= r->t.enqueued);
    assert_int_equal(space_calls, 1); /* popped from a full queue */
    kiq_request_free(r);
    assert_true(kiq_request_queue_try_push(q, rs[3]));
    for (int i = 1; i < 4; i++) {
        r = kiq_request_queue_pop(q);
        assert_ptr_equal(r, rs[i]);
        kiq_request_free(r);
    }
    assert_int_equal(space_calls, 2);
    kiq_request_queue_free(q);
}

static void test_refused_requests_count_as_muted(void **state)
{
    (void)state;
    kiq_request_queue_t *q = kiq_request_queue_new(1);
    kiq_request_t *a = req(1), *b = req(2), *c = req(3);
    assert_true(kiq_request_queue_try_push(q, a));
    assert_false(kiq_request_queue_try_push(q, b));
    assert_false(kiq_request_queue_try_push(q, b)); /* a retry counts once */
    assert_false(kiq_request_queue_try_push(q, c));
    assert_true(b->refused && c->refused && !a->refused);
    assert_int_equal(kiq_request_queue_muted(q), 2);
    kiq_request_free(kiq_request_queue_pop(q));
    assert_true(kiq_request_queue_try_push(q, b));
    assert_int_equal(kiq_request_queue_muted(q), 1);
    kiq_request_queue_forget(q, c); /* its connection closed */
    kiq_request_free(c);
    assert_int_equal(kiq_request_queue_muted(q), 0);
    kiq_request_queue_free(q);
}

static void *consumer(void *arg)
{
    return kiq_request_queue_pop(arg);
}

static void test_close_wakes_consumers(void **state)
{
    (void)state;
    kiq_request_queue_t *q = kiq_request_queue_new(2);
    pthread_t t;
    pthread_create(&t, NULL, consumer, q);
    kiq_request_queue_close(q);
    void *got = (void *)1;
    pthread_join(t, &got);
    assert_null(got);
    /* closed: pushes are refused, the caller keeps the request */
    kiq_request_t *r = req(9);
    assert_false(kiq_request_queue_try_push(q, r));
    kiq_request_free(r);
    kiq_request_queue_free(q);
}

static void test_drain_after_close(void **state)
{
    (void)state;
    kiq_request_queue_t *q = kiq_request_queue_new(2);
    kiq_request_t *r = req(1);
    assert_true(kiq_request_queue_try_push(q, r));
    kiq_request_queue_close(q);
    assert_ptr_equal(kiq_request_queue_pop(q), r);
    assert_null(kiq_request_queue_pop(q));
    kiq_request_free(r);
    kiq_request_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_fifo_and_space),
        cmocka_unit_test(test_close_wakes_consumers),
        cmocka_unit_test(test_drain_after_close),
        cmocka_unit_test(test_refused_requests_count_as_muted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
