/* The blocking broker-to-broker client (net/client.h) against a real broker
 * started in this process, and against hand-made servers that misbehave:
 * never answer, answer with a wrong correlation id or an oversized frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "include/kafkaiq.h"
#include "net/client.h"
#include "proto/errors.h"
#include "proto/header.h"
#include "proto/messages.h"
#include "support/log_fixture.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- a real broker ---------------------------------------------------- */

typedef struct broker_fixture {
    char dir[64];
    kiq_broker_t *broker;
    int port;
} broker_fixture_t;

static int broker_setup(void **state)
{
    kiq_say_set_level(KIQ_SAY_ERROR);
    broker_fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(kiq_test_temp_dir(f->dir, sizeof f->dir, "client"), 0);
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "listeners", "PLAINTEXT://127.0.0.1:0"), 0);
    assert_int_equal(kiq_config_set(c, "log.dirs", f->dir), 0);
    f->broker = kiq_broker_new(c);
    kiq_config_free(c);
    assert_non_null(f->broker);
    assert_int_equal(kiq_broker_start(f->broker), 0);
    f->port = kiq_broker_port(f->broker);
    assert_true(f->port > 0);
    *state = f;
    return 0;
}

static int broker_teardown(void **state)
{
    broker_fixture_t *f = *state;
    kiq_broker_stop(f->broker);
    kiq_broker_free(f->broker);
    kiq_test_remove_tree(f->dir);
    free(f);
    return 0;
}

static kiq_client_conn_t *connect_to(int port)
{
    kiq_client_conn_t *c = kiq_client_connect("127.0.0.1", port, 5000, "test-client", NULL);
    if (!c) fail_msg("connect: %s", kiq_error_get());
    return c;
}

static void test_negotiates_versions(void **state)
{
    broker_fixture_t *f = *state;
    kiq_client_conn_t *c = connect_to(f->port);
    assert_true(kiq_client_alive(c));
    assert_int_equal(kiq_client_version(c, KIQ_API_API_VERSIONS), 4);
    assert_int_equal(kiq_client_version(c, KIQ_API_METADATA), 13);
    assert_int_equal(kiq_client_version(c, KIQ_API_PRODUCE), 12);
    assert_int_equal(kiq_client_version(c, KIQ_API_FETCH), 17);
    /* declared in our codec, but this broker does not serve (so not offer) it */
    assert_non_null(kiq_api_codec(KIQ_API_LEADER_AND_ISR));
    assert_int_equal(kiq_client_version(c, KIQ_API_LEADER_AND_ISR), -1);
    assert_int_equal(kiq_client_version(c, 999), -1);
    char peer[64];
    snprintf(peer, sizeof peer, "127.0.0.1:%d", f->port);
    assert_string_equal(kiq_client_peer(c), peer);
    kiq_client_close(c);
}

static void test_metadata_v12(void **state)
{
    broker_fixture_t *f = *state;
    kiq_client_conn_t *c = connect_to(f->port);
    kiq_metadata_request_t req;
    kiq_metadata_request_init(&req);
    req.topics_n = -1; /* all topics */
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_response_t resp;
    if (kiq_client_request(c, KIQ_API_METADATA, 12, &req, &a, &resp, 5000) != 0)
        fail_msg("metadata: %s", kiq_error_get());
    assert_int_equal(resp.brokers_n, 1);
    assert_int_equal(resp.brokers[0].port, f->port);
    assert_true(kiq_str_eq(resp.brokers[0].host, "127.0.0.1"));
    assert_int_equal(resp.controller_id, resp.brokers[0].node_id);
    assert_non_null(resp.cluster_id.p);
    assert_true(kiq_client_alive(c));
    /* the same connection carries the next request (correlation ids move on) */
    kiq_arena_reset(&a);
    assert_int_equal(kiq_client_request(c, KIQ_API_METADATA, -1, &req, &a, &resp, 5000), 0);
    assert_int_equal(resp.brokers_n, 1);
    kiq_arena_reset(&a);
    kiq_client_close(c);
}

static void test_create_produce_fetch(void **state)
{
    broker_fixture_t *f = *state;
    kiq_client_conn_t *c = connect_to(f->port);
    kiq_arena_t a;
    kiq_arena_init(&a);

    kiq_create_topics_request_topics_t topic;
    kiq_create_topics_request_topics_init(&topic);
    topic.name = KIQ_STR("client-topic");
    topic.num_partitions = 1;
    topic.replication_factor = 1;
    kiq_create_topics_request_t create;
    kiq_create_topics_request_init(&create);
    create.topics_n = 1;
    create.topics = &topic;
    create.timeout_ms = 5000;
    kiq_create_topics_response_t created;
    if (kiq_client_request(c, KIQ_API_CREATE_TOPICS, -1, &create, &a, &created, 5000) != 0)
        fail_msg("create topics: %s", kiq_error_get());
    assert_int_equal(created.topics_n, 1);
    assert_int_equal(created.topics[0].error_code, KIQ_ERR_NONE);

    kiq_wr_t batch;
    kiq_wr_init(&batch);
    kiq_test_make_batch(&batch, 3, 1700000000000);
    kiq_produce_request_topic_data_partition_data_t pd;
    kiq_produce_request_topic_data_partition_data_init(&pd);
    pd.index = 0;
    pd.records = (kiq_bytes_t){batch.buf, (int32_t)batch.len};
    kiq_produce_request_topic_data_t td;
    kiq_produce_request_topic_data_init(&td);
    td.name = KIQ_STR("client-topic");
    td.partition_data_n = 1;
    td.partition_data = &pd;
    kiq_produce_request_t produce;
    kiq_produce_request_init(&produce);
    produce.acks = -1;
    produce.timeout_ms = 5000;
    produce.topic_data_n = 1;
    produce.topic_data = &td;
    kiq_produce_response_t produced;
    if (kiq_client_request(c, KIQ_API_PRODUCE, 9, &produce, &a, &produced, 5000) != 0)
        fail_msg("produce: %s", kiq_error_get());
    assert_int_equal(produced.responses_n, 1);
    assert_int_equal(produced.responses[0].partition_responses_n, 1);
    assert_int_equal(produced.responses[0].partition_responses[0].error_code, KIQ_ERR_NONE);
    assert_int_equal(produced.responses[0].partition_responses[0].base_offset, 0);

    kiq_fetch_request_topics_partitions_t fp;
    kiq_fetch_request_topics_partitions_init(&fp);
    fp.partition = 0;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    kiq_fetch_request_topics_t ft;
    kiq_fetch_request_topics_init(&ft);
    ft.topic = KIQ_STR("client-topic");
    ft.partitions_n = 1;
    ft.partitions = &fp;
    kiq_fetch_request_t fetch;
    kiq_fetch_request_init(&fetch);
    fetch.max_wait_ms = 0;
    fetch.min_bytes = 1;
    fetch.topics_n = 1;
    fetch.topics = &ft;
    /* the records are read from a fresh arena: they must point into the
     * frame that arena holds, not into anything freed since */
    kiq_arena_t fa;
    kiq_arena_init(&fa);
    kiq_fetch_response_t fetched;
    if (kiq_client_request(c, KIQ_API_FETCH, 12, &fetch, &fa, &fetched, 5000) != 0)
        fail_msg("fetch: %s", kiq_error_get());
    assert_int_equal(fetched.error_code, KIQ_ERR_NONE);
    assert_int_equal(fetched.responses_n, 1);
    assert_int_equal(fetched.responses[0].partitions_n, 1);
    const kiq_fetch_response_responses_partitions_t *p = &fetched.responses[0].partitions[0];
    assert_int_equal(p->error_code, KIQ_ERR_NONE);
    assert_int_equal(p->high_watermark, 3);
    assert_null(p->records_file);
    assert_int_equal(p->records.len, (int32_t)batch.len);
    /* the broker set base offset 0 and stamped its leader epoch (bytes
     * 12-15, outside the CRC); everything else is as produced */
    assert_memory_equal(p->records.p, batch.buf, 12);
    assert_memory_equal(p->records.p + 16, batch.buf + 16, batch.len - 16);

    kiq_arena_reset(&fa);
    kiq_arena_reset(&a);
    kiq_wr_free(&batch);
    kiq_client_close(c);
}

/* An unknown key or a version outside the codec's range fails before
 * anything is sent, and (as every failure) leaves the connection closed. */
static void test_bad_version_closes(void **state)
{
    broker_fixture_t *f = *state;
    kiq_client_conn_t *c = connect_to(f->port);
    kiq_metadata_request_t req;
    kiq_metadata_request_init(&req);
    kiq_metadata_response_t resp;
    kiq_arena_t a;
    kiq_arena_init(&a);
    assert_int_equal(kiq_client_request(c, KIQ_API_METADATA, 14, &req, &a, &resp, 1000), -1);
    assert_non_null(strstr(kiq_error_get(), "Metadata v14"));
    assert_false(kiq_client_alive(c));
    assert_int_equal(kiq_client_request(c, KIQ_API_METADATA, -1, &req, &a, &resp, 1000), -1);
    assert_non_null(strstr(kiq_error_get(), "connection closed"));
    kiq_arena_reset(&a);
    kiq_client_close(c);
}

/* ---- hand-made servers ------------------------------------------------- */

enum fake_mode { FAKE_SILENT, FAKE_WRONG_CORRELATION, FAKE_HUGE_FRAME, FAKE_OLD_BROKER };

/* Answers ApiVersions like a broker offering Metadata, then treats the next
 * request as its mode says, then waits for the client to hang up. The
 * server thread owns the sockets; got_request is guarded by lock. */
typedef struct fake_server {
    int listen_fd;
    int port;
    enum fake_mode mode;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool got_request;
} fake_server_t;

static bool read_full(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* One request frame; its header in h (pointing into *frame, freed by the
 * caller). False when the client hung up. */
static bool read_request(int fd, uint8_t **frame, kiq_request_header_t *h)
{
    uint8_t size[4];
    if (!read_full(fd, size, 4)) return false;
    uint32_t n = kiq_be32(size);
    *frame = malloc(n);
    if (!*frame || !read_full(fd, *frame, n)) return false;
    kiq_rd_t r;
    kiq_rd_init(&r, *frame, n);
    return kiq_request_header_decode(&r, h) == 0;
}

static void send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        if (k <= 0) return;
        b += k;
        n -= (size_t)k;
    }
}

/* An old broker answers an ApiVersions version it does not know in v0,
 * with UNSUPPORTED_VERSION and its own ApiVersions range (0-2 here). */
static void answer_api_versions(int fd, const kiq_request_header_t *h, bool old)
{
    int16_t version = h->api_version;
    int16_t error = KIQ_ERR_NONE;
    if (old && version > 2) {
        version = 0;
        error = KIQ_ERR_UNSUPPORTED_VERSION;
    }
    kiq_api_versions_response_api_keys_t keys[2];
    kiq_api_versions_response_api_keys_init(&keys[0]);
    keys[0].api_key = KIQ_API_API_VERSIONS;
    keys[0].max_version = old ? 2 : 3;
    kiq_api_versions_response_api_keys_init(&keys[1]);
    keys[1].api_key = KIQ_API_METADATA;
    keys[1].max_version = 12;
    kiq_api_versions_response_t resp;
    kiq_api_versions_response_init(&resp);
    resp.error_code = error;
    resp.api_keys_n = error ? 1 : 2;
    resp.api_keys = keys;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i32(&w, 0);
    kiq_response_header_encode(&w, h->api_key, version, h->correlation_id);
    kiq_api_versions_response_encode(&w, version, &resp);
    kiq_wr_patch_i32(&w, 0, (int32_t)(w.len - 4));
    send_all(fd, w.buf, w.len);
    kiq_wr_free(&w);
}

static void *fake_main(void *arg)
{
    fake_server_t *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0) return NULL;
    uint8_t *frame = NULL;
    kiq_request_header_t h;
    bool old = s->mode == FAKE_OLD_BROKER;
    if (read_request(fd, &frame, &h)) {
        answer_api_versions(fd, &h, old);
        free(frame);
        frame = NULL;
        if (old && h.api_version > 2 && read_request(fd, &frame, &h)) {
            answer_api_versions(fd, &h, old); /* the retry at v2 */
            free(frame);
            frame = NULL;
        }
        if (read_request(fd, &frame, &h)) {
            pthread_mutex_lock(&s->lock);
            s->got_request = true;
            pthread_cond_signal(&s->cond);
            pthread_mutex_unlock(&s->lock);
            if (s->mode == FAKE_WRONG_CORRELATION) {
                kiq_wr_t w;
                kiq_wr_init(&w);
                kiq_wr_i32(&w, 0);
                kiq_response_header_encode(&w, h.api_key, h.api_version, h.correlation_id + 100);
                kiq_metadata_response_t resp;
                kiq_metadata_response_init(&resp);
                kiq_metadata_response_encode(&w, h.api_version, &resp);
                kiq_wr_patch_i32(&w, 0, (int32_t)(w.len - 4));
                send_all(fd, w.buf, w.len);
                kiq_wr_free(&w);
            } else if (s->mode == FAKE_HUGE_FRAME) {
                uint8_t size[4];
                kiq_put_be32(size, 0x7fffffffu);
                send_all(fd, size, 4);
            }
        }
    }
    free(frame);
    uint8_t sink[256];
    while (recv(fd, sink, sizeof sink, 0) > 0) {
    } /* until the client hangs up */
    close(fd);
    return NULL;
}

static fake_server_t *fake_start(enum fake_mode mode)
{
    fake_server_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->mode = mode;
    s->listen_fd = kiq_test_listen_any(&s->port);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    assert_int_equal(pthread_create(&s->thread, NULL, fake_main, s), 0);
    return s;
}

static void fake_wait_request(fake_server_t *s)
{
    pthread_mutex_lock(&s->lock);
    while (!s->got_request) pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

/* Call once the client is closed: the server thread ends on its hang-up. */
static void fake_free(fake_server_t *s)
{
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

static int metadata_request(kiq_client_conn_t *c, int timeout_ms)
{
    kiq_metadata_request_t req;
    kiq_metadata_request_init(&req);
    kiq_metadata_response_t resp;
    kiq_arena_t a;
    kiq_arena_init(&a);
    int rc = kiq_client_request(c, KIQ_API_METADATA, -1, &req, &a, &resp, timeout_ms);
    kiq_arena_reset(&a);
    return rc;
}

static void test_request_times_out(void **state)
{
    (void)state;
    fake_server_t *s = fake_start(FAKE_SILENT);
    kiq_client_conn_t *c = connect_to(s->port);
    assert_int_equal(kiq_client_version(c, KIQ_API_METADATA), 12);
    assert_int_equal(kiq_client_version(c, KIQ_API_PRODUCE), -1);
    int64_t t0 = now_ms();
    assert_int_equal(metadata_request(c, 200), -1);
    int64_t took = now_ms() - t0;
    assert_true(took >= 200);
    assert_true(took < 5000);
    const char *err = kiq_error_get();
    assert_non_null(strstr(err, "timed out waiting for the response"));
    assert_non_null(strstr(err, kiq_client_peer(c)));
    assert_non_null(strstr(err, "Metadata v12"));
    assert_false(kiq_client_alive(c));
    kiq_client_close(c);
    fake_free(s);
}

static void test_falls_back_for_an_old_broker(void **state)
{
    (void)state;
    fake_server_t *s = fake_start(FAKE_OLD_BROKER);
    kiq_client_conn_t *c = connect_to(s->port);
    assert_int_equal(kiq_client_version(c, KIQ_API_API_VERSIONS), 2);
    assert_int_equal(kiq_client_version(c, KIQ_API_METADATA), 12);
    kiq_client_close(c);
    fake_free(s);
}

static void test_wrong_correlation_id(void **state)
{
    (void)state;
    fake_server_t *s = fake_start(FAKE_WRONG_CORRELATION);
    kiq_client_conn_t *c = connect_to(s->port);
    assert_int_equal(metadata_request(c, 5000), -1);
    assert_non_null(strstr(kiq_error_get(), "correlation id"));
    assert_false(kiq_client_alive(c));
    kiq_client_close(c);
    fake_free(s);
}

static void test_oversized_frame_refused(void **state)
{
    (void)state;
    fake_server_t *s = fake_start(FAKE_HUGE_FRAME);
    kiq_client_conn_t *c = connect_to(s->port);
    assert_int_equal(metadata_request(c, 5000), -1);
    assert_non_null(strstr(kiq_error_get(), "response frame of 2147483647 bytes"));
    kiq_client_close(c);
    fake_free(s);
}

typedef struct blocked_call {
    kiq_client_conn_t *c;
    int rc;
    char err[512];
    int64_t took;
} blocked_call_t;

static void *blocked_main(void *arg)
{
    blocked_call_t *b = arg;
    int64_t t0 = now_ms();
    b->rc = metadata_request(b->c, 30000);
    b->took = now_ms() - t0;
    snprintf(b->err, sizeof b->err, "%s", kiq_error_get());
    return NULL;
}

static void test_shutdown_interrupts_a_blocked_request(void **state)
{
    (void)state;
    fake_server_t *s = fake_start(FAKE_SILENT);
    blocked_call_t b = {.c = connect_to(s->port)};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, blocked_main, &b), 0);
    fake_wait_request(s); /* the request is sent: its owner waits for the answer */
    kiq_client_shutdown(b.c);
    pthread_join(t, NULL);
    assert_int_equal(b.rc, -1);
    assert_non_null(strstr(b.err, "shut down"));
    assert_true(b.took < 10000);
    assert_false(kiq_client_alive(b.c));
    /* and every later request fails at once */
    assert_int_equal(metadata_request(b.c, 30000), -1);
    kiq_client_close(b.c);
    fake_free(s);
}

static void test_connect_refused(void **state)
{
    (void)state;
    int port;
    int fd = kiq_test_listen_any(&port);
    close(fd); /* nothing listens there now */
    assert_null(kiq_client_connect("127.0.0.1", port, 2000, NULL, NULL));
    char where[64];
    snprintf(where, sizeof where, "127.0.0.1:%d", port);
    assert_non_null(strstr(kiq_error_get(), where));
    assert_non_null(strstr(kiq_error_get(), "Connection refused"));
}

/* The kernel completes the handshake for a listener that never accepts, so
 * the ApiVersions exchange is what times out. */
static void test_connect_times_out(void **state)
{
    (void)state;
    int port;
    int fd = kiq_test_listen_any(&port);
    int64_t t0 = now_ms();
    assert_null(kiq_client_connect("127.0.0.1", port, 200, NULL, NULL));
    int64_t took = now_ms() - t0;
    assert_true(took >= 200);
    assert_true(took < 5000);
    assert_non_null(strstr(kiq_error_get(), "timed out"));
    close(fd);
}

static void test_bad_address(void **state)
{
    (void)state;
    assert_null(kiq_client_connect("127.0.0.1", 0, 100, NULL, NULL));
    assert_non_null(strstr(kiq_error_get(), "bad address"));
    assert_null(kiq_client_connect("", 9092, 100, NULL, NULL));
    assert_non_null(strstr(kiq_error_get(), "bad address"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_negotiates_versions, broker_setup, broker_teardown),
        cmocka_unit_test_setup_teardown(test_metadata_v12, broker_setup, broker_teardown),
        cmocka_unit_test_setup_teardown(test_create_produce_fetch, broker_setup, broker_teardown),
        cmocka_unit_test_setup_teardown(test_bad_version_closes, broker_setup, broker_teardown),
        cmocka_unit_test(test_request_times_out),
        cmocka_unit_test(test_falls_back_for_an_old_broker),
        cmocka_unit_test(test_wrong_correlation_id),
        cmocka_unit_test(test_oversized_frame_refused),
        cmocka_unit_test(test_shutdown_interrupts_a_blocked_request),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_connect_times_out),
        cmocka_unit_test(test_bad_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
