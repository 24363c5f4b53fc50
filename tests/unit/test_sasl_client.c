/* SASL's client side (brokers signing in to each other): RFC 7677's
 * SCRAM-SHA-256 example from the client's seat (its nonce preset), the
 * client against KafkaIQ's own SCRAM server for both mechanisms, a wrong
 * password refused by the server, a server that cannot prove itself or
 * answers out of form refused by the client, PLAIN's token, and the
 * inter-broker user read from Kafka's JAAS options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/error.h"
#include "security/sasl.h"
#include "security/sasl_client.h"
#include "security/sasl_scram.h"

static int pencil(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    (void)ctx;
    if (strcmp(user, "user") != 0 && strcmp(user, "a,b=c") != 0) return -1;
    static const uint8_t salt[] = {0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e,
                                   0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81};
    return kiq_scram_credential_make(m, "pencil", 6, salt, sizeof salt, 4096, out);
}

static int step(kiq_sasl_client_t *c, const char *in, char **out)
{
    uint8_t *o;
    size_t n;
    int rc = kiq_sasl_client_step(c, (const uint8_t *)in, in ? strlen(in) : 0, &o, &n);
    *out = rc == 0 ? strndup((const char *)o, n) : NULL;
    free(o);
    return rc;
}

static void test_rfc7677_client(void **state)
{
    (void)state;
    kiq_sasl_client_t c;
    assert_int_equal(kiq_sasl_client_init(&c, "SCRAM-SHA-256", "user", "pencil"), 0);
    strcpy(c.nonce, "rOprNGfwEbeRWgbNEkqO");
    char *out;
    assert_int_equal(step(&c, NULL, &out), 0);
    assert_string_equal(out, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    free(out);
    assert_int_equal(step(&c, "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
                          &out), 0);
    assert_string_equal(out, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                             "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    free(out);
    assert_int_equal(step(&c, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", &out), 1);
    kiq_sasl_client_clear(&c);
}

/* The whole exchange against the server; the server's last verdict. */
static int against_server(const char *mech, const char *user, const char *password, bool tamper)
{
    kiq_sasl_client_t c;
    assert_int_equal(kiq_sasl_client_init(&c, mech, user, password), 0);
    kiq_scram_server_t s;
    kiq_scram_server_init(&s, (enum kiq_scram_mech)kiq_scram_mech_of(mech, strlen(mech)));
    uint8_t *tok;
    size_t tl;
    char *ans = NULL;
    size_t al = 0;
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        assert_int_equal(kiq_sasl_client_step(&c, (const uint8_t *)ans, al, &tok, &tl), 0);
        free(ans);
        rc = kiq_scram_step(&s, tok, tl, pencil, NULL, &ans, &al);
        free(tok);
    }
    if (rc == 0) {
        assert_int_equal(s.state, KIQ_SCRAM_DONE);
        assert_string_equal(s.user, user);
        if (tamper) ans[3] ^= 1;
        rc = kiq_sasl_client_step(&c, (const uint8_t *)ans, al, &tok, &tl) == 1 ? 0 : -1;
    }
    free(ans);
    kiq_scram_server_clear(&s);
    kiq_sasl_client_clear(&c);
    return rc;
}

static void test_against_the_server(void **state)
{
    (void)state;
    assert_int_equal(against_server("SCRAM-SHA-256", "user", "pencil", false), 0);
    assert_int_equal(against_server("SCRAM-SHA-512", "user", "pencil", false), 0);
    assert_int_equal(against_server("SCRAM-SHA-512", "a,b=c", "pencil", false), 0); /* escaped name */
    assert_int_equal(against_server("SCRAM-SHA-512", "user", "pen", false), 1);     /* the server refuses */
    /* a server signature that does not match: the client refuses it */
    assert_int_equal(against_server("SCRAM-SHA-256", "user", "pencil", true), -1);
}

static void test_bad_server_messages(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",   /* not our nonce */
        "r=clientnonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",   /* our nonce, nothing added */
        "r=clientnonceX,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100",   /* too few iterations */
        "r=clientnonceX,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999", /* too many */
        "r=clientnonceX,s=!!!,i=4096",                        /* salt not base64 */
        "r=clientnonceX,i=4096",                              /* no salt */
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiq_sasl_client_t c;
        assert_int_equal(kiq_sasl_client_init(&c, "SCRAM-SHA-256", "user", "pencil"), 0);
        strcpy(c.nonce, "clientnonce");
        char *out;
        assert_int_equal(step(&c, NULL, &out), 0);
        free(out);
        assert_int_equal(step(&c, bad[i], &out), -1);
        kiq_sasl_client_clear(&c);
    }
}

static void test_plain(void **state)
{
    (void)state;
    kiq_sasl_client_t c;
    assert_int_equal(kiq_sasl_client_init(&c, "GSSAPI", "u", "p"), -1);
    assert_int_equal(kiq_sasl_client_init(&c, "PLAIN", "broker", "secret"), 0);
    uint8_t *tok;
    size_t n;
    assert_int_equal(kiq_sasl_client_step(&c, NULL, 0, &tok, &n), 0);
    assert_int_equal(n, 14);
    assert_memory_equal(tok, "\0broker\0secret", 14);
    free(tok);
    assert_int_equal(kiq_sasl_client_step(&c, (const uint8_t *)"", 0, &tok, &n), 1);
    kiq_sasl_client_clear(&c);
}

static int collect(void *ctx, const char *key, const char *value)
{
    char *out = ctx;
    strcat(out, key);
    strcat(out, "=");
    strcat(out, value);
    strcat(out, ";");
    return 0;
}

static void test_jaas_options(void **state)
{
    (void)state;
    char got[256] = "";
    assert_int_equal(kiq_sasl_jaas_options("org.apache.kafka.common.security.scram.ScramLoginModule required "
                                           "username=\"broker\" password=\"se\\\"cret\" user_alice=\"a\";",
                                           collect, got), 0);
    assert_string_equal(got, "username=broker;password=se\"cret;user_alice=a;");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7677_client),
        cmocka_unit_test(test_against_the_server),
        cmocka_unit_test(test_bad_server_messages),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_jaas_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
