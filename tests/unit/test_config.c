/* Broker configuration: Kafka names, properties files, overrides, and bad
 * values refused by name. */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/listeners.h"
#include "config/topic_config.h"
#include "core/error.h"

static void test_defaults(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    assert_non_null(c);
    assert_string_equal(kiq_config_str(c, KIQ_CFG_LISTENERS), "PLAINTEXT://127.0.0.1:9092");
    assert_int_equal(kiq_config_int(c, KIQ_CFG_QUEUED_MAX_REQUESTS), 500);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_SOCKET_REQUEST_MAX_BYTES), 104857600);
    assert_true(kiq_config_bool(c, KIQ_CFG_AUTO_CREATE_TOPICS_ENABLE));
    bool is_default;
    kiq_config_text(c, KIQ_CFG_NUM_PARTITIONS, &is_default);
    assert_true(is_default);
    assert_int_equal(kiq_config_validate(c), 0);
    kiq_config_free(c);
}

/* The thread counts follow the cores this process may run on, as
 * defaults (an explicit value wins). */
static void test_thread_counts_follow_the_cores(void **state)
{
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int cores = CPU_COUNT(&set);
    int net = cores < 2 ? 2 : cores > 8 ? 8 : cores, io = 2 * cores < 4 ? 4 : 2 * cores > 16 ? 16 : 2 * cores;
    kiq_config_t *c = kiq_config_new();
    assert_non_null(c);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_NETWORK_THREADS), net);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_IO_THREADS), io);
    bool is_default;
    kiq_config_text(c, KIQ_CFG_NUM_IO_THREADS, &is_default);
    assert_true(is_default);
    assert_int_equal(kiq_config_set(c, "num.io.threads", "3"), 0);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_IO_THREADS), 3);
    kiq_config_text(c, KIQ_CFG_NUM_IO_THREADS, &is_default);
    assert_false(is_default);
    /* one of three brokers in the process: its share of the cores; the
     * I/O thread count the user set stays */
    assert_int_equal(kiq_config_share_cores(c, 3), 0);
    int share = cores / 3 < 1 ? 1 : cores / 3 > 8 ? 8 : cores / 3;
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_NETWORK_THREADS), share);
    kiq_config_text(c, KIQ_CFG_NUM_NETWORK_THREADS, &is_default);
    assert_true(is_default);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_IO_THREADS), 3);
    /* a copy keeps the shared size, and sized for one again it is the whole */
    kiq_config_t *copy = kiq_config_copy(c);
    assert_non_null(copy);
    assert_int_equal(kiq_config_int(copy, KIQ_CFG_NUM_NETWORK_THREADS), share);
    assert_int_equal(kiq_config_share_cores(copy, 1), 0);
    assert_int_equal(kiq_config_int(copy, KIQ_CFG_NUM_NETWORK_THREADS), net);
    kiq_config_free(copy);
    kiq_config_free(c);
}

static void test_bad_values_named(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_set(c, "num.io.threads", "zero"), -1);
    assert_non_null(strstr(kiq_error_get(), "num.io.threads"));
    assert_int_equal(kiq_config_set(c, "num.partitions", "0"), -1);
    assert_non_null(strstr(kiq_error_get(), "num.partitions"));
    assert_int_equal(kiq_config_set(c, "auto.create.topics.enable", "yes"), -1);
    assert_int_equal(kiq_config_set(c, "message.timestamp.type", "Sometimes"), -1);
    assert_non_null(strstr(kiq_error_get(), "timestamp.type"));
    assert_int_equal(kiq_config_set(c, "log.segment.bytes", "99999999999"), -1);
    /* unchanged after refusals */
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_PARTITIONS), 1);
    assert_int_equal(kiq_config_override(c, "num.partitions"), -1);
    assert_int_equal(kiq_config_set(c, "listeners", "127.0.0.1:9092"), 0);
    assert_int_equal(kiq_config_validate(c), -1);
    assert_non_null(strstr(kiq_error_get(), "listeners"));
    kiq_config_free(c);
}

static void test_file_and_overrides(void **state)
{
    (void)state;
    char path[] = "/tmp/kiq-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "# comment\n! also a comment\n\n  num.partitions = 6\n"
                       "log.dirs: /tmp/somewhere\nmessage.timestamp.type=LogAppendTime\n"
                       "some.unknown.key=1\nnode.id=7\ncontroller.listener.names=CONTROLLER\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    kiq_config_t *c = kiq_config_new();
    assert_int_equal(kiq_config_load_file(c, path), 0);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_PARTITIONS), 6);
    assert_string_equal(kiq_config_str(c, KIQ_CFG_LOG_DIRS), "/tmp/somewhere");
    assert_string_equal(kiq_config_str(c, KIQ_CFG_MESSAGE_TIMESTAMP_TYPE), "LogAppendTime");
    /* KRaft's names for broker.id and the controller's listener */
    assert_int_equal(kiq_config_int(c, KIQ_CFG_BROKER_ID), 7);
    assert_string_equal(kiq_config_str(c, KIQ_CFG_CONTROL_PLANE_LISTENER_NAME), "CONTROLLER");
    assert_int_equal(kiq_config_override(c, "num.partitions=2"), 0);
    assert_int_equal(kiq_config_int(c, KIQ_CFG_NUM_PARTITIONS), 2);
    bool is_default;
    kiq_config_text(c, KIQ_CFG_NUM_PARTITIONS, &is_default);
    assert_false(is_default);

    kiq_config_t *copy = kiq_config_copy(c);
    assert_int_equal(kiq_config_int(copy, KIQ_CFG_NUM_PARTITIONS), 2);
    kiq_config_free(copy);

    FILE *f = fopen(path, "w");
    fputs("num.partitions=-4\n", f);
    fclose(f);
    assert_int_equal(kiq_config_load_file(c, path), -1);
    assert_non_null(strstr(kiq_error_get(), "num.partitions"));
    unlink(path);
    assert_int_equal(kiq_config_load_file(c, path), -1);
    kiq_config_free(c);
}

static void test_topic_defaults_follow_broker(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    char buf[32];
    int source;
    int i = kiq_topic_config_find("retention.ms", 12);
    assert_true(i >= 0);
    assert_string_equal(kiq_topic_config_default(c, i, buf, sizeof buf, &source), "604800000");
    assert_int_equal(source, KIQ_CONFIG_SOURCE_DEFAULT);
    kiq_config_set(c, "log.segment.bytes", "1048576");
    i = kiq_topic_config_find("segment.bytes", 13);
    assert_string_equal(kiq_topic_config_default(c, i, buf, sizeof buf, &source), "1048576");
    assert_int_equal(source, KIQ_CONFIG_SOURCE_STATIC_BROKER);
    assert_int_equal(kiq_topic_config_find("no.such.config", 14), -1);
    kiq_config_free(c);
}

/* listener.security.protocol.map: each listener's protocol; a name it
 * lacks is PLAINTEXT only under the default map. listener.name.X.ssl.*
 * is the broker-wide ssl.*; secrets are flagged. */
static void test_listener_protocols(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    kiq_listener_t ls[KIQ_MAX_LISTENERS];
    int n;
    assert_int_equal(kiq_listeners_parse("SASL_SSL://:1,SSL://h:2,CONTROLLER://:3", ls, KIQ_MAX_LISTENERS, &n), 0);
    assert_int_equal(kiq_listeners_protocols(c, ls, n), 0);
    assert_int_equal(ls[0].protocol, KIQ_SASL_SSL);
    assert_int_equal(ls[1].protocol, KIQ_SSL);
    assert_int_equal(ls[2].protocol, KIQ_PLAINTEXT);
    assert_int_equal(kiq_config_set(c, "listener.security.protocol.map", "SASL_SSL:ssl, SSL:SASL_PLAINTEXT"), 0);
    assert_int_equal(kiq_listeners_protocols(c, ls, n), -1);
    assert_non_null(strstr(kiq_error_get(), "no security protocol for listener CONTROLLER"));
    assert_int_equal(kiq_listeners_protocols(c, ls, 2), 0);
    assert_int_equal(ls[0].protocol, KIQ_SSL);
    assert_int_equal(ls[1].protocol, KIQ_SASL_PLAINTEXT);
    assert_int_equal(kiq_config_set(c, "listener.security.protocol.map", "SSL:TLS"), 0);
    assert_int_equal(kiq_listeners_protocols(c, ls + 1, 1), -1);
    assert_non_null(strstr(kiq_error_get(), "unknown security protocol 'TLS'"));
    assert_int_equal(kiq_config_set(c, "listener.security.protocol.map", "SSL"), 0);
    assert_int_equal(kiq_listeners_protocols(c, ls + 1, 1), -1);
    assert_non_null(strstr(kiq_error_get(), "NAME:PROTOCOL"));
    assert_int_equal(kiq_config_set(c, "listener.name.ssl.ssl.client.auth", "required"), 0);
    assert_string_equal(kiq_config_str(c, KIQ_CFG_SSL_CLIENT_AUTH), "required");
    assert_int_equal(kiq_config_set(c, "ssl.client.auth", "sometimes"), -1);
    assert_true(kiq_config_sensitive(KIQ_CFG_SSL_KEYSTORE_PASSWORD));
    assert_true(kiq_config_sensitive(KIQ_CFG_SSL_KEYSTORE_KEY));
    assert_false(kiq_config_sensitive(KIQ_CFG_SSL_KEYSTORE_LOCATION));
    kiq_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_thread_counts_follow_the_cores),
        cmocka_unit_test(test_bad_values_named),
        cmocka_unit_test(test_listener_protocols),
        cmocka_unit_test(test_file_and_overrides),
        cmocka_unit_test(test_topic_defaults_follow_broker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
