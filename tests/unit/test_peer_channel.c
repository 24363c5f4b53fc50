/* The kept line to another broker (net/peer_channel.h): calls to a real
 * broker started in this process are answered in order on the channel's
 * thread; a peer that is not there, or takes connections and never
 * answers, ends each call with its reason by about its deadline; stopping
 * ends what is queued, and a call submitted after that fails at once.
 * Waits are bounded polls on what the callbacks recorded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/say.h"
#include "include/kafkaiq.h"
#include "net/peer_channel.h"
#include "proto/messages.h"
#include "support/log_fixture.h"

#define WAIT_MS 10000

/* One call and what its callback saw. */
typedef struct test_call {
    kiq_peer_call_t call;
    kiq_arena_t arena;
    kiq_api_versions_request_t req;
    kiq_api_versions_response_t resp;
    atomic_int rc;    /* 1 until answered, then the callback's rc */
    int64_t done_ns;
    int order;
} test_call_t;

static atomic_int done_seq;

static void done(kiq_peer_call_t *call, int rc)
{
    test_call_t *t = (test_call_t *)call;
    t->done_ns = kiq_clock_mono_ns();
    t->order = atomic_fetch_add(&done_seq, 1);
    atomic_store(&t->rc, rc);
}

static void call_init(test_call_t *t, int deadline_ms)
{
    memset(t, 0, sizeof *t);
    kiq_arena_init(&t->arena);
    kiq_api_versions_request_init(&t->req);
    t->call = (kiq_peer_call_t){.api_key = KIQ_API_API_VERSIONS, .version = -1, .request = &t->req,
                                .arena = &t->arena, .response = &t->resp, .done = done};
    t->call.deadline_ns = kiq_clock_mono_ns() + (int64_t)deadline_ms * 1000000;
    atomic_store(&t->rc, 1);
}

static bool answered(test_call_t *t) { return atomic_load(&t->rc) != 1; }

static void wait_answered(test_call_t *t)
{
    int64_t until = kiq_clock_mono_ns() + (int64_t)WAIT_MS * 1000000;
    while (!answered(t) && kiq_clock_mono_ns() < until) usleep(2000);
    assert_true(answered(t));
}

static void call_free(test_call_t *t) { kiq_arena_reset(&t->arena); }

static void test_answers_in_order_from_a_real_broker(void **state)
{
    char dir[64];
    assert_int_equal(kiq_test_temp_dir(dir, sizeof dir, "peer"), 0);
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "listeners", "PLAINTEXT://127.0.0.1:0"), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", dir), 0);
    kiq_broker_t *b = kiq_broker_new(c);
    kiq_config_free(c);
    assert_non_null(b);
    assert_int_equal(kiq_broker_start(b), 0);

    kiq_peer_channel_t *ch = kiq_peer_channel_new("to-test", "127.0.0.1", kiq_broker_port(b), "peer-test");
    assert_non_null(ch);
    test_call_t calls[5];
    for (int i = 0; i < 5; i++) {
        call_init(&calls[i], 5000);
        kiq_peer_channel_submit(ch, &calls[i].call);
    }
    for (int i = 0; i < 5; i++) wait_answered(&calls[i]);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(atomic_load(&calls[i].rc), 0);
        assert_int_equal(calls[i].resp.error_code, 0);
        assert_true(calls[i].resp.api_keys_n > 10);
        assert_true(calls[i].call.sent_version >= 3);
        if (i) assert_true(calls[i].order > calls[i - 1].order);
        call_free(&calls[i]);
    }
    kiq_peer_channel_stats_t st;
    kiq_peer_channel_stats(ch, &st);
    assert_int_equal(st.sent, 5);
    assert_int_equal(st.answered, 5);
    assert_int_equal(st.connects, 1); /* one kept connection */
    assert_int_equal(st.queued, 0);
    kiq_peer_channel_free(ch);
    kiq_broker_stop(b);
    kiq_broker_free(b);
    kiq_test_remove_tree(dir);
}

/* A port nothing listens on: bound, then closed. */
static int dead_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void test_a_peer_not_there_fails_each_call_by_its_deadline(void **state)
{
    kiq_peer_channel_t *ch = kiq_peer_channel_new("to-nobody", "127.0.0.1", dead_port(), "peer-test");
    assert_non_null(ch);
    test_call_t a, b;
    call_init(&a, 300);
    call_init(&b, 600);
    int64_t t0 = kiq_clock_mono_ns();
    kiq_peer_channel_submit(ch, &a.call);
    kiq_peer_channel_submit(ch, &b.call);
    wait_answered(&a);
    wait_answered(&b);
    assert_int_equal(atomic_load(&a.rc), -1);
    assert_int_equal(atomic_load(&b.rc), -1);
    assert_non_null(strstr(a.call.error, "127.0.0.1"));
    /* retried until the deadline, not given up at the first refusal */
    assert_true(b.done_ns - t0 >= 550 * 1000000LL);
    kiq_peer_channel_stats_t st;
    kiq_peer_channel_stats(ch, &st);
    assert_true(st.connect_failures >= 2);
    assert_int_equal(st.expired, 2);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.sent, 0);
    call_free(&a);
    call_free(&b);
    kiq_peer_channel_free(ch);
}

static void test_a_silent_peer_holds_the_head_and_stop_ends_the_rest(void **state)
{
    /* listens but never accepts: connecting works, nothing is answered */
    int port;
    int fd = kiq_test_listen_any(&port);

    kiq_peer_channel_t *ch = kiq_peer_channel_new("to-silent", "127.0.0.1", port, "peer-test");
    assert_non_null(ch);
    test_call_t head, queued;
    call_init(&head, 60000);
    call_init(&queued, 60000);
    kiq_peer_channel_submit(ch, &head.call);
    kiq_peer_channel_submit(ch, &queued.call);
    usleep(100 * 1000);
    assert_false(answered(&head));
    assert_false(answered(&queued));
    int64_t t0 = kiq_clock_mono_ns();
    kiq_peer_channel_stop(ch);
    /* stop answers both at once, not at their minute-long deadlines */
    assert_true(answered(&head));
    assert_true(answered(&queued));
    assert_true(kiq_clock_mono_ns() - t0 < 5000 * 1000000LL);
    assert_int_equal(atomic_load(&queued.rc), -1);
    assert_non_null(strstr(queued.call.error, "shutting down"));
    assert_int_equal(atomic_load(&head.rc), -1);

    test_call_t late;
    call_init(&late, 60000);
    kiq_peer_channel_submit(ch, &late.call);
    assert_true(answered(&late)); /* at once, on this thread */
    assert_int_equal(atomic_load(&late.rc), -1);
    call_free(&head);
    call_free(&queued);
    call_free(&late);
    kiq_peer_channel_free(ch);
    close(fd);
}

int main(void)
{
    kiq_say_set_level(KIQ_SAY_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers_in_order_from_a_real_broker),
        cmocka_unit_test(test_a_peer_not_there_fails_each_call_by_its_deadline),
        cmocka_unit_test(test_a_silent_peer_holds_the_head_and_stop_ends_the_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
