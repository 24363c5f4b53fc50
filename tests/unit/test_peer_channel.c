/* The kept line to another broker (net/peer_channel.h): calls to a real
 * broker started in this process are answered in order on the channel's
 * thread; a peer that is not there, or takes connections and never
 * answers, ends each call with its reason by about its deadline; stopping
 * ends what is queued, and a call submitted after that fails at once. An
 * owned channel answers on the caller's thread, follows its peer to a new
 * address and is cut short from another thread; every channel's figures
 * reach the metrics registry it was given. Waits are bounded polls on
 * what the callbacks recorded. */
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
#include "core/error.h"
#include "core/say.h"
#include "include/kafkaiq.h"
#include "metrics/registry.h"
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

static kiq_peer_channel_config_t line_to(const char *name, int port, kiq_metrics_t *metrics)
{
    return (kiq_peer_channel_config_t){.name = name, .peer = "test", .host = "127.0.0.1", .port = port,
                                       .client_id = "peer-test", .backoff_min_ms = 100, .backoff_max_ms = 1000,
                                       .metrics = metrics};
}

static kiq_broker_t *start_broker(char *dir, size_t dirlen)
{
    assert_int_equal(kiq_test_temp_dir(dir, dirlen, "peer"), 0);
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "listeners", "PLAINTEXT://127.0.0.1:0"), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", dir), 0);
    kiq_broker_t *b = kiq_broker_new(c);
    kiq_config_free(c);
    assert_non_null(b);
    assert_int_equal(kiq_broker_start(b), 0);
    return b;
}

static void stop_broker(kiq_broker_t *b, const char *dir)
{
    kiq_broker_stop(b);
    kiq_broker_free(b);
    kiq_test_remove_tree(dir);
}

static void test_answers_in_order_from_a_real_broker(void **state)
{
    char dir[64];
    kiq_broker_t *b = start_broker(dir, sizeof dir);
    kiq_peer_channel_config_t cfg = line_to("to-test", kiq_broker_port(b), NULL);
    kiq_peer_channel_t *ch = kiq_peer_channel_new(&cfg);
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
    stop_broker(b, dir);
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
    kiq_peer_channel_config_t cfg = line_to("to-nobody", dead_port(), NULL);
    kiq_peer_channel_t *ch = kiq_peer_channel_new(&cfg);
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

    kiq_peer_channel_config_t cfg = line_to("to-silent", port, NULL);
    kiq_peer_channel_t *ch = kiq_peer_channel_new(&cfg);
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

/* What a registry reader saw: the samples of one family, by label value. */
typedef struct seen {
    const char *family, *label, *value;
    double sum;
    int families, samples;
} seen_t;

static void seen_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    seen_t *s = ctx;
    (void)type;
    (void)help;
    if (strcmp(name, s->family) == 0) s->families++;
}

static void seen_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels,
                        int nlabels, double value)
{
    seen_t *s = ctx;
    (void)suffix;
    if (strcmp(family, s->family) != 0) return;
    for (int i = 0; i < nlabels; i++)
        if (strcmp(labels[i].name, s->label) == 0 && strcmp(labels[i].value, s->value) == 0) {
            s->sum += value;
            s->samples++;
        }
}

static double metric(kiq_metrics_t *m, const char *family, const char *label, const char *value, int *families)
{
    seen_t s = {.family = family, .label = label, .value = value};
    kiq_metric_sink_t sink = {seen_family, seen_sample, &s};
    assert_int_equal(kiq_metrics_collect(m, &sink), 0);
    if (families) *families = s.families;
    return s.samples ? s.sum : -1;
}

static void test_an_owned_line_calls_on_its_owners_thread_and_follows_its_peer(void **state)
{
    char dir[64];
    kiq_broker_t *b = start_broker(dir, sizeof dir);
    kiq_metrics_t *m = kiq_metrics_new();
    kiq_peer_channel_config_t cfg = line_to("owned", dead_port(), m);
    kiq_peer_channel_t *ch = kiq_peer_channel_open(&cfg);
    assert_non_null(ch);
    test_call_t t;
    call_init(&t, 2000);
    assert_int_equal(kiq_peer_channel_call(ch, &t.call), -1); /* nobody there */
    assert_non_null(strstr(t.call.error, "127.0.0.1"));
    call_free(&t);
    /* within the backoff: refused without trying */
    assert_true(kiq_peer_channel_version(ch, KIQ_API_API_VERSIONS) < 0);
    assert_non_null(strstr(kiq_error_get(), "trying again"));

    /* the peer moved: the next call goes there at once, backoff or not */
    kiq_peer_channel_retarget(ch, "127.0.0.1", kiq_broker_port(b));
    assert_true(kiq_peer_channel_version(ch, KIQ_API_FETCH) >= 12);
    for (int i = 0; i < 3; i++) {
        call_init(&t, 5000);
        assert_int_equal(kiq_peer_channel_call(ch, &t.call), 0);
        assert_int_equal(t.resp.error_code, 0);
        call_free(&t);
    }
    kiq_peer_channel_stats_t st;
    kiq_peer_channel_stats(ch, &st);
    assert_int_equal(st.connects, 1); /* one kept connection */
    assert_int_equal(st.answered, 3);
    assert_int_equal(metric(m, "kafkaiq_peer_channel_calls_total", "outcome", "answered", NULL), 3);
    assert_int_equal(metric(m, "kafkaiq_peer_channel_connects_total", "outcome", "failed", NULL), 1);

    /* cut short: the next call connects again */
    kiq_peer_channel_interrupt(ch);
    call_init(&t, 5000);
    assert_int_equal(kiq_peer_channel_call(ch, &t.call), 0);
    call_free(&t);
    kiq_peer_channel_stats(ch, &st);
    assert_int_equal(st.connects, 2);

    kiq_peer_channel_stop(ch);
    call_init(&t, 5000);
    assert_int_equal(kiq_peer_channel_call(ch, &t.call), -1);
    assert_non_null(strstr(t.call.error, "shutting down"));
    call_free(&t);
    kiq_peer_channel_free(ch);
    kiq_metrics_free(m);
    stop_broker(b, dir);
}

static void test_lines_share_their_families_in_the_registry_until_freed(void **state)
{
    kiq_metrics_t *m = kiq_metrics_new();
    kiq_peer_channel_config_t one = line_to("one", dead_port(), m), two = line_to("two", dead_port(), m);
    kiq_peer_channel_t *a = kiq_peer_channel_open(&one), *b = kiq_peer_channel_open(&two);
    int families = 0;
    assert_int_equal(metric(m, "kafkaiq_peer_channel_queued", "channel", "one", &families), 0);
    assert_int_equal(families, 1); /* one family, a sample per line */
    assert_int_equal(metric(m, "kafkaiq_peer_channel_queued", "channel", "two", NULL), 0);
    kiq_peer_channel_free(a);
    assert_true(metric(m, "kafkaiq_peer_channel_queued", "channel", "one", NULL) == -1); /* gone */
    assert_int_equal(metric(m, "kafkaiq_peer_channel_queued", "channel", "two", NULL), 0);
    kiq_peer_channel_free(b);
    kiq_metrics_free(m);
}

int main(void)
{
    kiq_say_set_level(KIQ_SAY_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answers_in_order_from_a_real_broker),
        cmocka_unit_test(test_a_peer_not_there_fails_each_call_by_its_deadline),
        cmocka_unit_test(test_a_silent_peer_holds_the_head_and_stop_ends_the_rest),
        cmocka_unit_test(test_an_owned_line_calls_on_its_owners_thread_and_follows_its_peer),
        cmocka_unit_test(test_lines_share_their_families_in_the_registry_until_freed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
