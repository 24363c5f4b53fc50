/* Client-metrics resources (KIP-714): values checked as Kafka checks them
 * (interval.ms range, match as selector=regex with known selectors and
 * valid regexes), match taking a client only when every selector matches
 * the whole of its value, and the subscription a broker offers: the
 * prefixes of every matching resource together at the shortest interval,
 * none when no resource matches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/client_metrics_configs.h"
#include "proto/errors.h"
#include "server/client_telemetry.h"

static int set(kiq_client_metrics_configs_t *c, int i, const char *v)
{
    return kiq_client_metrics_configs_set(c, i, v ? KIQ_STR(v) : KIQ_STR_NULL);
}

static void test_values_checked(void **state)
{
    (void)state;
    kiq_client_metrics_configs_t c = {{0}};
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, "100"), 0);
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, "3600000"), 0);
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, "99"), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, "3600001"), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, "1s"), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, ""), KIQ_ERR_INVALID_CONFIG);
    assert_string_equal(c.v[KIQ_CM_CFG_INTERVAL_MS], "3600000"); /* a refused value changes nothing */
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_id=app-.*, client_source_address=127\\.0\\.0\\.1"), 0);
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_colour=red"), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_id"), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_id=[a-"), KIQ_ERR_INVALID_CONFIG);
    assert_int_equal(set(&c, KIQ_CM_CFG_METRICS, "org.apache.kafka.producer., org.apache.kafka.consumer."), 0);
    assert_int_equal(set(&c, KIQ_CM_CFG_METRICS, NULL), 0);
    assert_null(c.v[KIQ_CM_CFG_METRICS]);
    assert_int_equal(kiq_client_metrics_config_find(KIQ_STR("interval.ms")), KIQ_CM_CFG_INTERVAL_MS);
    assert_int_equal(kiq_client_metrics_config_find(KIQ_STR("intervals")), -1);
    kiq_client_metrics_configs_clear(&c);
}

static void test_match(void **state)
{
    (void)state;
    kiq_client_metrics_configs_t c = {{0}};
    kiq_client_selector_t who = {"AAAAAAAAAAAAAAAAAAAAAQ", "app-1", "", "", "127.0.0.1", "50000"};
    assert_true(kiq_client_metrics_matches(&c, &who)); /* no match: every client */
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_id=app-.*,client_source_address=127\\.0\\.0\\.1"), 0);
    assert_true(kiq_client_metrics_matches(&c, &who));
    who.client_source_address = "10.0.0.1";
    assert_false(kiq_client_metrics_matches(&c, &who)); /* every selector must match */
    who.client_source_address = "127.0.0.1";
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_id=app"), 0);
    assert_false(kiq_client_metrics_matches(&c, &who)); /* the whole value, not a part */
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, "client_software_name=librdkafka"), 0);
    assert_false(kiq_client_metrics_matches(&c, &who));
    kiq_client_metrics_configs_clear(&c);
}

static void put(kiq_client_telemetry_t *t, const char *name, const char *metrics, const char *interval,
                const char *match)
{
    kiq_client_metrics_configs_t c = {{0}};
    assert_int_equal(set(&c, KIQ_CM_CFG_METRICS, metrics), 0);
    assert_int_equal(set(&c, KIQ_CM_CFG_INTERVAL_MS, interval), 0);
    assert_int_equal(set(&c, KIQ_CM_CFG_MATCH, match), 0);
    assert_int_equal(kiq_client_telemetry_resource_put(t, KIQ_STR(name), &c), 0);
}

static void test_subscription(void **state)
{
    (void)state;
    kiq_client_telemetry_t *t = kiq_client_telemetry_new();
    kiq_client_selector_t app = {"x", "app-1", "", "", "127.0.0.1", "1"}, other = {"y", "other", "", "", "", ""};
    char metrics[256];
    int32_t interval;
    assert_false(kiq_client_telemetry_subscription(t, &app, metrics, sizeof metrics, &interval));
    put(t, "producers", "org.apache.kafka.producer.", "2000", "client_id=app-.*");
    put(t, "everyone", "org.apache.kafka.consumer.", NULL, NULL);
    assert_true(kiq_client_telemetry_subscription(t, &app, metrics, sizeof metrics, &interval));
    assert_int_equal(interval, 2000);
    assert_non_null(strstr(metrics, "org.apache.kafka.producer."));
    assert_non_null(strstr(metrics, "org.apache.kafka.consumer."));
    assert_true(kiq_client_telemetry_subscription(t, &other, metrics, sizeof metrics, &interval));
    assert_string_equal(metrics, "org.apache.kafka.consumer.");
    assert_int_equal(interval, KIQ_CLIENT_METRICS_DEFAULT_INTERVAL_MS);
    /* every config deleted: the resource is gone */
    put(t, "everyone", NULL, NULL, NULL);
    assert_false(kiq_client_telemetry_subscription(t, &other, metrics, sizeof metrics, &interval));
    kiq_client_metrics_configs_t got;
    assert_int_equal(kiq_client_telemetry_resource_get(t, KIQ_STR("producers"), &got), 1);
    assert_string_equal(got.v[KIQ_CM_CFG_INTERVAL_MS], "2000");
    kiq_client_metrics_configs_clear(&got);
    assert_int_equal(kiq_client_telemetry_resource_get(t, KIQ_STR("everyone"), &got), 0);
    kiq_client_telemetry_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_checked),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_subscription),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
