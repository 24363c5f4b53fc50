/* The inter-broker and controller clients' security from Kafka's configs:
 * the mechanism and the user read from the mechanism's JAAS entry (by its
 * listener-prefixed name too) or sasl.jaas.config, plaintext needing
 * nothing, and the refusals: GSSAPI (Kafka's default), no user, a JAAS
 * text that does not parse, a trust store that cannot be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "config/config.h"
#include "core/error.h"
#include "security/peer_security.h"

static kiq_config_t *with(const char *const *kv)
{
    kiq_config_t *c = kiq_config_new();
    for (; *kv; kv += 2) assert_int_equal(kiq_config_set(c, kv[0], kv[1]), 0);
    return c;
}

static void test_users(void **state)
{
    (void)state;
    const char *const scram[] = {
        "sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\" password=\"b-secret\";",
        NULL};
    kiq_config_t *c = with(scram);
    kiq_peer_security_t *s = kiq_peer_security_new(c, KIQ_SASL_PLAINTEXT, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL);
    assert_non_null(s);
    assert_string_equal(s->mechanism, "SCRAM-SHA-512");
    assert_string_equal(s->user, "broker");
    assert_string_equal(s->password, "b-secret");
    assert_string_equal(s->principal, "User:broker");
    assert_null(s->tls);
    kiq_peer_security_free(s);
    kiq_config_free(c);

    /* PLAIN's entry holds the server's users and the client's own; the
     * controller's mechanism is its own config; sasl.jaas.config is the fallback */
    const char *const plain[] = {
        "sasl.mechanism.controller.protocol", "PLAIN",
        "sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"ctl\" "
                            "password=\"c-secret\" user_ctl=\"c-secret\";",
        NULL};
    c = with(plain);
    s = kiq_peer_security_new(c, KIQ_SASL_PLAINTEXT, KIQ_CFG_SASL_MECHANISM_CONTROLLER_PROTOCOL);
    assert_non_null(s);
    assert_string_equal(s->user, "ctl");
    kiq_peer_security_free(s);
    /* a plaintext peer needs nothing */
    s = kiq_peer_security_new(c, KIQ_PLAINTEXT, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL);
    assert_non_null(s);
    assert_string_equal(s->mechanism, "");
    assert_string_equal(s->principal, "");
    kiq_peer_security_free(s);
    kiq_config_free(c);
}

static void test_refusals(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    /* Kafka's default mechanism, GSSAPI, is not spoken */
    assert_null(kiq_peer_security_new(c, KIQ_SASL_SSL, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL));
    assert_non_null(strstr(kiq_error_get(), "GSSAPI"));
    /* no user for the mechanism */
    assert_int_equal(kiq_config_set(c, "sasl.mechanism.inter.broker.protocol", "PLAIN"), 0);
    assert_null(kiq_peer_security_new(c, KIQ_SASL_PLAINTEXT, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL));
    assert_non_null(strstr(kiq_error_get(), "no username and password"));
    /* a JAAS text that does not parse */
    assert_int_equal(kiq_config_set(c, "plain.sasl.jaas.config", "Module required username=\"x\""), 0);
    assert_null(kiq_peer_security_new(c, KIQ_SASL_PLAINTEXT, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL));
    /* TLS whose trust store cannot be read */
    assert_int_equal(kiq_config_set(c, "ssl.truststore.type", "PEM"), 0);
    assert_int_equal(kiq_config_set(c, "ssl.truststore.location", "/nonexistent/ca.pem"), 0);
    assert_null(kiq_peer_security_new(c, KIQ_SSL, KIQ_CFG_SASL_MECHANISM_INTER_BROKER_PROTOCOL));
    kiq_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_users),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
