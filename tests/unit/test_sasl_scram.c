/* SCRAM's server side against RFC 7677's SCRAM-SHA-256 example (a fixed
 * server nonce stands in for the random one), SCRAM-SHA-512 by a client
 * computed here, and malformed or wrong client messages refused; through
 * a SASL session, authentication by delegation token (tokenauth=true): the
 * owner's principal, the token's expiry as the session's bound, an expired
 * or unknown token refused, and no token for a plain user name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/clock.h"
#include "core/error.h"
#include "proto/errors.h"
#include "security/sasl.h"
#include "security/sasl_scram.h"

static const char *const SNONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";

static int rfc_user(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    static const uint8_t salt[] = {0x5b, 0x6d, 0x99, 0x68, 0x9d, 0x12, 0x35, 0x8e,
                                   0xec, 0xa0, 0x4b, 0x14, 0x12, 0x36, 0xfa, 0x81}; /* W22ZaJ0SNY7soEsUEjb6gQ== */
    if (strcmp(user, "user") != 0) return -1;
    assert_int_equal(kiq_scram_credential_make(m, "pencil", 6, salt, sizeof salt, 4096, out), 0);
    return 0;
}

static int step(kiq_scram_server_t *s, const char *msg, char **out)
{
    size_t n;
    return kiq_scram_step(s, (const uint8_t *)msg, strlen(msg), rfc_user, NULL, out, &n);
}

static void test_rfc7677_example(void **state)
{
    (void)state;
    kiq_scram_server_t s;
    kiq_scram_server_init(&s, KIQ_SCRAM_SHA_256);
    strcpy(s.server_nonce, SNONCE);
    char *out;
    assert_int_equal(step(&s, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO", &out), 0);
    assert_string_equal(out, "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    free(out);
    assert_int_equal(step(&s, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                              "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", &out), 0);
    assert_string_equal(out, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    assert_int_equal(s.state, KIQ_SCRAM_DONE);
    assert_string_equal(s.user, "user");
    free(out);
    kiq_scram_server_clear(&s);
}

/* A client's final message for password over the server's first answer. */
static char *client_final(enum kiq_scram_mech m, const char *password, const char *cfirst_bare,
                          const char *server_first)
{
    const EVP_MD *md = m == KIQ_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
    size_t kl = kiq_scram_key_len(m);
    const char *nonce = server_first + 2, *comma = strchr(nonce, ',');
    const char *salt64 = strstr(server_first, ",s=") + 3;
    uint8_t salt[64], salted[64], ck[64], sk[64], sig[64], proof[64];
    int sl = EVP_DecodeBlock(salt, (const unsigned char *)salt64, (int)(strchr(salt64, ',') - salt64));
    sl -= salt64[strchr(salt64, ',') - salt64 - 1] == '=' ? (salt64[strchr(salt64, ',') - salt64 - 2] == '=' ? 2 : 1) : 0;
    int iters = atoi(strstr(server_first, ",i=") + 3);
    PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, sl, iters, md, (int)kl, salted);
    unsigned int n;
    HMAC(md, salted, (int)kl, (const uint8_t *)"Client Key", 10, ck, &n);
    EVP_Digest(ck, kl, sk, NULL, md, NULL);
    char *without = malloc(512), *auth = malloc(2048), *out = malloc(1024);
    snprintf(without, 512, "c=biws,r=%.*s", (int)(comma - nonce), nonce);
    snprintf(auth, 2048, "%s,%s,%s", cfirst_bare, server_first, without);
    HMAC(md, sk, (int)kl, (const uint8_t *)auth, strlen(auth), sig, &n);
    for (size_t i = 0; i < kl; i++) proof[i] = ck[i] ^ sig[i];
    char p64[100];
    EVP_EncodeBlock((unsigned char *)p64, proof, (int)kl);
    snprintf(out, 1024, "%s,p=%s", without, p64);
    free(without);
    free(auth);
    return out;
}

static void exchange(enum kiq_scram_mech m, const char *password, int want)
{
    kiq_scram_server_t s;
    kiq_scram_server_init(&s, m);
    char *first;
    assert_int_equal(step(&s, "n,,n=user,r=clientnonce1", &first), 0);
    char *final = client_final(m, password, "n=user,r=clientnonce1", first);
    char *out;
    assert_int_equal(step(&s, final, &out), want);
    if (want == 0) {
        assert_int_equal(s.state, KIQ_SCRAM_DONE);
        assert_memory_equal(out, "v=", 2);
        free(out);
    } else
        assert_null(out);
    free(first);
    free(final);
    kiq_scram_server_clear(&s);
}

static void test_sha512_and_wrong_password(void **state)
{
    (void)state;
    exchange(KIQ_SCRAM_SHA_512, "pencil", 0);
    exchange(KIQ_SCRAM_SHA_256, "pencil", 0);
    exchange(KIQ_SCRAM_SHA_512, "pen", 1);
    exchange(KIQ_SCRAM_SHA_256, "Pencil", 1);
}

static void test_unknown_user(void **state)
{
    (void)state;
    kiq_scram_server_t s;
    kiq_scram_server_init(&s, KIQ_SCRAM_SHA_256);
    char *out;
    assert_int_equal(step(&s, "n,,n=someone,r=abc", &out), 1);
    assert_null(out);
    kiq_scram_server_clear(&s);
}

static void test_malformed(void **state)
{
    (void)state;
    static const char *const firsts[] = {
        "", "n", "n,", "p=tls-unique,,n=user,r=abc", "x,,n=user,r=abc", "n,,r=abc", "n,,n=user",
        "n,,n=,r=abc", "n,,n=us=er,r=abc", "n,,n=user,r=", "n,,n=user,r=a b", "n,a=other,n=user,r=abc",
        "n,,m=ext,n=user,r=abc", "n,,n=user,r=abc,junk",
    };
    for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
        kiq_scram_server_t s;
        kiq_scram_server_init(&s, KIQ_SCRAM_SHA_256);
        char *out;
        assert_int_equal(step(&s, firsts[i], &out), -1);
        assert_null(out);
        kiq_scram_server_clear(&s);
    }
    static const char *const finals[] = {
        "", "c=biws", "c=biws,r=abcSNONCE", "c=eSws,r=abcSNONCE,p=AAAA", "c=biws,r=abcOTHER,p=AAAA",
        "c=biws,r=abcSNONCE,p=notbase64!", "c=biws,r=abcSNONCE,p=AAAA", "c=bi,r=abcSNONCE,p=AAAA",
        "c=biws,r=abcSNONCE,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=,x=1",
    };
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++) {
        kiq_scram_server_t s;
        kiq_scram_server_init(&s, KIQ_SCRAM_SHA_256);
        strcpy(s.server_nonce, "SNONCE");
        char *out;
        assert_int_equal(step(&s, "n,,n=user,r=abc", &out), 0);
        free(out);
        assert_int_equal(step(&s, finals[i], &out), -1);
        assert_null(out);
        kiq_scram_server_clear(&s);
    }
    /* the user name's escapes */
    kiq_scram_server_t s;
    kiq_scram_server_init(&s, KIQ_SCRAM_SHA_256);
    char *out;
    assert_int_equal(step(&s, "n,,n=a=2Cb=3Dc,r=abc", &out), 1);
    assert_string_equal(s.user, "a,b=c");
    kiq_scram_server_clear(&s);
}

static int count_user(void *ctx, const char *user, const char *password)
{
    (*(int *)ctx)++;
    return strcmp(user, "alice") == 0 && strcmp(password, "se\"cret") != 0 ? -1 : 0;
}

static void test_jaas(void **state)
{
    (void)state;
    int n = 0;
    assert_int_equal(kiq_sasl_jaas_users("org.apache.kafka.common.security.plain.PlainLoginModule required "
                                         "username=\"admin\" password=\"x\" user_alice=\"se\\\"cret\" user_bob=b ;",
                                         count_user, &n), 0);
    assert_int_equal(n, 2);
    static const char *const bad[] = {"", "Module", "Module demanded user_a=\"x\";", "Module required user_a=\"x\"",
                                      "Module required user_a;", "Module required user_a=\"x;",
                                      "Module required user_a=x; Other required;"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kiq_sasl_jaas_users(bad[i], count_user, &n), -1);
}

struct added {
    int n;
    char users[4][32];
    enum kiq_scram_mech mechs[4];
    kiq_scram_credential_t creds[4];
};

static int add(void *ctx, const char *user, enum kiq_scram_mech m, const kiq_scram_credential_t *cred)
{
    struct added *a = ctx;
    snprintf(a->users[a->n], sizeof a->users[0], "%s", user);
    a->mechs[a->n] = m;
    a->creds[a->n++] = *cred;
    return 0;
}

/* kafkaiq.add.scram's text, as kafka-storage format --add-scram takes it */
static void test_add_spec(void **state)
{
    (void)state;
    struct added a = {0};
    assert_int_equal(kiq_scram_add_spec("SCRAM-SHA-512=[name=broker,password=b-secret];"
                                        "SCRAM-SHA-256=[name=alice,password=pencil,iterations=8192]", add, &a), 0);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.users[0], "broker");
    assert_int_equal(a.mechs[0], KIQ_SCRAM_SHA_512);
    assert_int_equal(a.creds[0].iterations, 4096);
    assert_string_equal(a.users[1], "alice");
    assert_int_equal(a.creds[1].iterations, 8192);
    /* the credential is the password's, with the salt it was given */
    kiq_scram_credential_t again;
    assert_int_equal(kiq_scram_credential_make(KIQ_SCRAM_SHA_256, "pencil", 6, a.creds[1].salt, a.creds[1].salt_len,
                                               8192, &again), 0);
    assert_memory_equal(again.stored_key, a.creds[1].stored_key, 32);
    assert_int_equal(kiq_scram_add_spec("", add, &a), 0);
    assert_int_equal(a.n, 2);
    static const char *const bad[] = {"SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=[name=a]",
                                      "SCRAM-SHA-256=name=a,password=b", "SCRAM-SHA-256=[name=a,password=b,salt=x]",
                                      "SCRAM-SHA-256=[name=a,password=b,iterations=100]",
                                      "SCRAM-SHA-256=[name=a,password=b,iterations=4096x]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(kiq_scram_add_spec(bad[i], add, &a), -1);
    assert_int_equal(a.n, 2);
}

/* tok-live expires in a minute, tok-old a minute ago; the password of both is "hmac64" */
static int tokens(void *ctx, enum kiq_scram_mech m, const char *id, kiq_scram_credential_t *out, char *owner,
                  size_t cap, int64_t *expiry_ms)
{
    bool live = !strcmp(id, "tok-live");
    if (!live && strcmp(id, "tok-old") != 0) return -1;
    snprintf(owner, cap, "User:alice");
    *expiry_ms = kiq_clock_wall_ms() + (live ? 60000 : -60000);
    return kiq_scram_credential_make(m, "hmac64", 6, (const uint8_t *)"saltsalt", 8, 4096, out);
}

/* a whole exchange through a session: SaslAuthenticate's error code */
static int token_session(kiq_sasl_t *sasl, const char *id, const char *ext, kiq_sasl_session_t **out_ss)
{
    kiq_sasl_session_t *ss = kiq_sasl_session_new(sasl);
    assert_int_equal(kiq_sasl_handshake(ss, "SCRAM-SHA-512", 13), 0);
    char first[160], bare[128];
    snprintf(bare, sizeof bare, "n=%s,r=tokennonce%s", id, ext);
    snprintf(first, sizeof first, "n,,%s", bare);
    uint8_t *answer;
    size_t len;
    int rc = kiq_sasl_authenticate(ss, (const uint8_t *)first, strlen(first), &answer, &len);
    if (rc == 0) {
        char *server_first = strndup((const char *)answer, len);
        free(answer);
        char *final = client_final(KIQ_SCRAM_SHA_512, "hmac64", bare, server_first);
        rc = kiq_sasl_authenticate(ss, (const uint8_t *)final, strlen(final), &answer, &len);
        if (rc == 0) free(answer);
        free(final);
        free(server_first);
    }
    *out_ss = ss;
    return rc;
}

static void test_delegation_token_auth(void **state)
{
    (void)state;
    kiq_config_t *c = kiq_config_new();
    kiq_config_set(c, "sasl.enabled.mechanisms", "SCRAM-SHA-512");
    kiq_sasl_t *sasl = kiq_sasl_new(c);
    kiq_config_free(c);
    assert_non_null(sasl);
    kiq_sasl_set_token_lookup(sasl, tokens, NULL);
    kiq_sasl_session_t *ss;
    assert_int_equal(token_session(sasl, "tok-live", ",tokenauth=true", &ss), 0);
    assert_string_equal(kiq_sasl_principal(ss), "User:alice");
    assert_true(kiq_sasl_token_authenticated(ss));
    int64_t life = kiq_sasl_session_lifetime_ms(ss);
    assert_true(life > 50000 && life <= 60000);
    kiq_sasl_session_unref(ss);
    /* expired, unknown, or without the extension (no user of that name) */
    assert_int_equal(token_session(sasl, "tok-old", ",tokenauth=true", &ss), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    kiq_sasl_session_unref(ss);
    assert_int_equal(token_session(sasl, "tok-none", ",tokenauth=true", &ss), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    kiq_sasl_session_unref(ss);
    assert_int_equal(token_session(sasl, "tok-live", "", &ss), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    kiq_sasl_session_unref(ss);
    assert_int_equal(token_session(sasl, "tok-live", ",tokenauth", &ss), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    kiq_sasl_session_unref(ss);
    kiq_sasl_free(sasl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_spec),
        cmocka_unit_test(test_rfc7677_example),
        cmocka_unit_test(test_sha512_and_wrong_password),
        cmocka_unit_test(test_unknown_user),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_jaas),
        cmocka_unit_test(test_delegation_token_auth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
