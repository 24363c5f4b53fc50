/* A cluster-mode broker's registration and heartbeats
 * (server/broker_lifecycle.h) against the real controller hosted by
 * another in-process broker: the request it sends, registration and the
 * first UpdateMetadata, fencing while paused and coming back when resumed;
 * the startup phases a controller's request reaches before the registration
 * is answered (labs 9 saw "metadata" before "registered"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/say.h"
#include "include/kafkaiq.h"
#include "server/broker.h"
#include "server/broker_lifecycle.h"
#include "server/broker_startup.h"
#include "controller/metadata_cache.h"
#include "support/log_fixture.h"

typedef struct fixture {
    char dir[2][64];
    kiq_broker_t *b[2];
    int control_port;
} fixture_t;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static kiq_broker_t *start_broker(fixture_t *f, int id)
{
    char listeners[128], voters[64], bid[16];
    snprintf(listeners, sizeof listeners, "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d",
             id == 0 ? f->control_port : 0);
    snprintf(voters, sizeof voters, "0@127.0.0.1:%d", f->control_port);
    snprintf(bid, sizeof bid, "%d", id);
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "listeners", listeners), 0);
    assert_int_equal(kiq_config_set(c, "control.plane.listener.name", "CONTROLLER"), 0);
    assert_int_equal(kiq_config_set(c, "controller.quorum.voters", voters), 0);
    assert_int_equal(kiq_config_set(c, "broker.id", bid), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", f->dir[id]), 0);
    assert_int_equal(kiq_config_set(c, "broker.heartbeat.interval.ms", "50"), 0);
    assert_int_equal(kiq_config_set(c, "broker.session.timeout.ms", "500"), 0);
    kiq_broker_t *b = kiq_broker_new(c);
    kiq_config_free(c);
    assert_non_null(b);
    assert_int_equal(kiq_broker_start(b), 0);
    return b;
}

static int setup(void **state)
{
    kiq_say_set_level(KIQ_SAY_ERROR);
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    for (int i = 0; i < 2; i++) assert_int_equal(kiq_test_temp_dir(f->dir[i], sizeof f->dir[i], "lifecycle"), 0);
    f->control_port = free_port();
    for (int i = 0; i < 2; i++) f->b[i] = start_broker(f, i);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    for (int i = 1; i >= 0; i--) {
        kiq_broker_free(f->b[i]);
        kiq_test_remove_tree(f->dir[i]);
    }
    free(f);
    return 0;
}

static void test_registration_request(void **state)
{
    fixture_t *f = *state;
    kiq_broker_t *b = f->b[1];
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_uuid_t inc = {{1, 2, 3}};
    kiq_broker_identity_t id = {
        .node_id = b->node_id,
        .cluster_id = b->cluster_id,
        .incarnation = inc,
        .advertised_host = b->advertised_host,
        .advertised_port = b->advertised_port,
        .has_control_plane = b->has_control_plane,
        .control_host = b->control_host,
        .control_port = b->control_port,
        .config = b->config,
    };
    kiq_broker_registration_request_t req;
    kiq_broker_lifecycle_registration(&id, &a, &req);
    assert_int_equal(req.broker_id, 1);
    assert_true(kiq_str_eq(req.cluster_id, b->cluster_id));
    assert_memory_equal(req.incarnation_id.b, inc.b, 16);
    assert_int_equal(req.listeners_n, 2);
    assert_true(kiq_str_eq(req.listeners[0].name, "PLAINTEXT"));
    assert_true(kiq_str_eq(req.listeners[0].host, "127.0.0.1"));
    assert_int_equal(req.listeners[0].port, kiq_broker_port(b));
    assert_true(kiq_str_eq(req.listeners[1].name, "CONTROLLER"));
    assert_int_equal(req.listeners[1].port, b->control_port);
    assert_true(b->control_port > 0);
    assert_int_equal(req.features_n, 0);
    assert_null(req.rack.p);
    kiq_arena_reset(&a);
}

static void test_registers_and_learns_the_cluster(void **state)
{
    fixture_t *f = *state;
    for (int i = 0; i < 2; i++) {
        assert_true(kiq_broker_lifecycle_wait_registered(f->b[i]->lifecycle, 10000));
        assert_true(kiq_broker_lifecycle_epoch(f->b[i]->lifecycle) >= 0);
        /* both brokers' metadata lists both, with their client ports */
        assert_true(kiq_metadata_cache_wait_brokers(f->b[i]->metadata, 2, 10000));
        char host[64];
        int port;
        for (int j = 0; j < 2; j++) {
            assert_true(kiq_metadata_cache_broker(f->b[i]->metadata, j, NULL, host, sizeof host, &port));
            assert_int_equal(port, kiq_broker_port(f->b[j]));
            assert_true(kiq_metadata_cache_broker(f->b[i]->metadata, j, "CONTROLLER", host, sizeof host, &port));
            assert_int_equal(port, f->b[j]->control_port);
        }
        assert_int_equal(kiq_metadata_cache_controller(f->b[i]->metadata), 0);
    }
}

/* Waits, update by update, until the controller's broker sees n live
 * brokers; the timeout only bounds a failure. */
static bool wait_live(kiq_metadata_cache_t *mc, int n, int timeout_ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        uint64_t v = kiq_metadata_cache_version(mc);
        if (kiq_metadata_cache_broker_count(mc) == n) return true;
        clock_gettime(CLOCK_MONOTONIC, &t);
        int left = timeout_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) return false;
        kiq_metadata_cache_wait_version(mc, v + 1, left);
    }
}

static void test_paused_broker_is_fenced_then_back(void **state)
{
    fixture_t *f = *state;
    kiq_metadata_cache_t *mc = f->b[0]->metadata;
    assert_true(kiq_metadata_cache_wait_brokers(mc, 2, 10000));
    int64_t epoch = kiq_broker_lifecycle_epoch(f->b[1]->lifecycle);
    kiq_broker_lifecycle_pause(f->b[1]->lifecycle, true);
    assert_true(wait_live(mc, 1, 10000));
    char host[64];
    int port;
    assert_false(kiq_metadata_cache_broker(mc, 1, NULL, host, sizeof host, &port));
    kiq_broker_lifecycle_pause(f->b[1]->lifecycle, false);
    assert_true(wait_live(mc, 2, 10000));
    assert_true(kiq_metadata_cache_broker(mc, 1, NULL, host, sizeof host, &port));
    /* the same incarnation keeps its epoch; a new epoch would be fine too,
     * but the broker must be registered */
    assert_true(kiq_broker_lifecycle_epoch(f->b[1]->lifecycle) >= epoch);
}

static void test_controller_phases_count_from_the_registration(void **state)
{
    (void)state;
    kiq_broker_startup_t s;
    kiq_broker_startup_begin(&s);
    /* the controller's requests reach the restarted broker first */
    kiq_broker_startup_from_controller(&s, KIQ_STARTUP_METADATA, 3);
    kiq_broker_startup_from_controller(&s, KIQ_STARTUP_REPLICATION, 6);
    assert_false(kiq_broker_startup_reached(&s, KIQ_STARTUP_METADATA));
    assert_false(kiq_broker_startup_reached(&s, KIQ_STARTUP_REPLICATION));
    kiq_broker_startup_registered(&s, 42);
    assert_true(kiq_broker_startup_reached(&s, KIQ_STARTUP_REGISTERED));
    assert_true(kiq_broker_startup_reached(&s, KIQ_STARTUP_METADATA));
    assert_true(kiq_broker_startup_reached(&s, KIQ_STARTUP_REPLICATION));
    assert_true(atomic_load(&s.at_ns[KIQ_STARTUP_METADATA]) >= atomic_load(&s.at_ns[KIQ_STARTUP_REGISTERED]));
    assert_true(atomic_load(&s.at_ns[KIQ_STARTUP_REPLICATION]) >= atomic_load(&s.at_ns[KIQ_STARTUP_METADATA]));
    assert_int_equal(atomic_load(&s.detail[KIQ_STARTUP_REGISTERED]), 42);
    assert_int_equal(atomic_load(&s.detail[KIQ_STARTUP_METADATA]), 3);
    assert_int_equal(atomic_load(&s.detail[KIQ_STARTUP_REPLICATION]), 6);
    assert_false(kiq_broker_startup_reached(&s, KIQ_STARTUP_READY));

    /* in a new start, a request after the registration is stamped at once */
    kiq_broker_startup_begin(&s);
    assert_false(kiq_broker_startup_reached(&s, KIQ_STARTUP_METADATA));
    kiq_broker_startup_registered(&s, 43);
    assert_false(kiq_broker_startup_reached(&s, KIQ_STARTUP_METADATA));
    kiq_broker_startup_from_controller(&s, KIQ_STARTUP_METADATA, 2);
    assert_true(kiq_broker_startup_reached(&s, KIQ_STARTUP_METADATA));
    assert_int_equal(atomic_load(&s.detail[KIQ_STARTUP_METADATA]), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_registration_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_registers_and_learns_the_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_paused_broker_is_fenced_then_back, setup, teardown),
        cmocka_unit_test(test_controller_phases_count_from_the_registration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
