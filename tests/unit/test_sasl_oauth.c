/* OAUTHBEARER: RFC 7628's client message parsed and malformed ones
 * refused; tokens validated as Kafka's unsecured validator does (alg none,
 * exp, iat, the principal claim, required scopes, clock skew) and against
 * a JWKS file (an RSA key made here, signatures by cjose, audience and
 * issuer); through a SASL session: a refused token answered with the
 * error JSON then failed at the client's \x01, the session's lifetime,
 * re-authentication (KIP-368) with the same principal, another one and
 * another mechanism refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjose/cjose.h>
#include <jansson.h>

#include "config/config.h"
#include "core/clock.h"
#include "core/error.h"
#include "proto/errors.h"
#include "security/sasl.h"
#include "security/sasl_oauth.h"

static const int64_t NOW = 1700000000000; /* a fixed wall clock for validation */

static char *b64url(const char *s)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(s);
    char *out = malloc(n * 4 / 3 + 4), *o = out;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | (uint8_t)s[i];
        bits += 8;
        while (bits >= 6) *o++ = tab[(acc >> (bits -= 6)) & 63];
    }
    if (bits) *o++ = tab[(acc << (6 - bits)) & 63];
    *o = 0;
    return out;
}

/* header.claims. with the given JSON texts */
static char *unsigned_token(const char *header, const char *claims)
{
    char *h = b64url(header), *c = b64url(claims);
    char *t = malloc(strlen(h) + strlen(c) + 3);
    sprintf(t, "%s.%s.", h, c);
    free(h);
    free(c);
    return t;
}

static kiq_oauth_t *unsecured_validator(const char *jaas)
{
    kiq_config_t *c = kiq_config_new();
    if (jaas) kiq_config_set(c, "oauthbearer.sasl.jaas.config", jaas);
    kiq_oauth_t *o = kiq_oauth_new(c);
    kiq_config_free(c);
    assert_non_null(o);
    return o;
}

static int validate(const kiq_oauth_t *o, const char *token, kiq_oauth_token_t *t)
{
    return kiq_oauth_validate(o, token, strlen(token), NOW, t);
}

static void test_client_message(void **state)
{
    (void)state;
    const char *tok, *az;
    size_t tl, al;
    static const char ok[] = "n,,\x01" "auth=Bearer abc.def.\x01\x01";
    assert_int_equal(kiq_oauth_client_message((const uint8_t *)ok, sizeof ok - 1, &tok, &tl, &az, &al), 0);
    assert_int_equal(tl, 8);
    assert_memory_equal(tok, "abc.def.", 8);
    assert_int_equal(al, 0);
    static const char ext[] = "n,a=alice,\x01" "traceId=x y\x01" "auth=bearer  t-1\x01\x01";
    assert_int_equal(kiq_oauth_client_message((const uint8_t *)ext, sizeof ext - 1, &tok, &tl, &az, &al), 0);
    assert_int_equal(tl, 3);
    assert_memory_equal(az, "alice", 5);
    assert_int_equal(al, 5);
    static const char *const bad[] = {
        "",                                              /* nothing */
        "p,,\x01" "auth=Bearer t\x01\x01",               /* channel binding */
        "n,,auth=Bearer t\x01\x01",                      /* no separator after the header */
        "n,,\x01" "auth=Bearer t\x01",                   /* no final \x01 */
        "n,,\x01" "auth=Bearer t\x01\x01x",              /* bytes after it */
        "n,,\x01" "x=1\x01\x01",                         /* no auth */
        "n,,\x01" "auth=Basic dXNlcg==\x01\x01",         /* another scheme */
        "n,,\x01" "auth=Bearer \x01\x01",                /* an empty token */
        "n,,\x01" "auth=Bearer a b\x01\x01",             /* a space in it */
        "n,,\x01" "auth=Bearer t\x01" "auth=Bearer u\x01\x01", /* twice */
        "n,,\x01" "=v\x01" "auth=Bearer t\x01\x01",      /* an empty key */
        "n,,\x01" "k=\x01" "auth=Bearer t\x01\x01",      /* an empty value */
        "n,a=,\x01" "auth=Bearer t\x01\x01",             /* an empty authorization id */
        "n,a=alice\x01" "auth=Bearer t\x01\x01",         /* the header not ended */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kiq_oauth_client_message((const uint8_t *)bad[i], strlen(bad[i]), &tok, &tl, &az, &al), -1);
    static const char nul[] = "n,,\x01" "k=a\0b\x01" "auth=Bearer t\x01\x01";
    assert_int_equal(kiq_oauth_client_message((const uint8_t *)nul, sizeof nul - 1, &tok, &tl, &az, &al), -1);
}

static void test_unsecured(void **state)
{
    (void)state;
    kiq_oauth_t *o = unsecured_validator(NULL);
    kiq_oauth_token_t t;
    char *tok = unsigned_token("{\"alg\":\"none\"}", "{\"sub\":\"alice\",\"iat\":1699999990,\"exp\":1700000060.5}");
    assert_int_equal(validate(o, tok, &t), 0);
    assert_string_equal(t.principal, "alice");
    assert_int_equal(t.expires_ms, 1700000060500);
    free(tok);
    static const char *const refused[][2] = {
        {"{\"alg\":\"none\"}", "{\"sub\":\"alice\",\"exp\":1699999999}"},                /* expired */
        {"{\"alg\":\"none\"}", "{\"sub\":\"alice\"}"},                                   /* no exp */
        {"{\"alg\":\"none\"}", "{\"sub\":\"alice\",\"exp\":\"1700000060\"}"},            /* exp a string */
        {"{\"alg\":\"none\"}", "{\"exp\":1700000060}"},                                  /* no sub */
        {"{\"alg\":\"none\"}", "{\"sub\":7,\"exp\":1700000060}"},                        /* sub a number */
        {"{\"alg\":\"none\"}", "{\"sub\":\"a\",\"iat\":1700000030,\"exp\":1700000060}"}, /* issued later */
        {"{\"alg\":\"none\"}", "{\"sub\":\"a\",\"iat\":1699999990,\"exp\":1699999000}"}, /* exp before iat */
        {"{\"alg\":\"none\"}", "{\"sub\":\"a\",\"nbf\":1700000050,\"exp\":1700000060}"}, /* not valid yet */
        {"{\"alg\":\"RS256\"}", "{\"sub\":\"alice\",\"exp\":1700000060}"},               /* claims a signature */
        {"{}", "{\"sub\":\"alice\",\"exp\":1700000060}"},                                /* no alg */
        {"{\"alg\":\"none\"}", "[1,2]"},                                                 /* claims not an object */
        {"{\"alg\":\"none\"}", "{\"sub\":\"alice\",\"exp\":1700000060"},                 /* not JSON */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        tok = unsigned_token(refused[i][0], refused[i][1]);
        assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
        free(tok);
    }
    static const char *const malformed[] = {"abc", "a.b", "a.b.c.d", "e30.e30.sig", "!!!.e30.", "e30.e.", ""};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
        assert_int_equal(validate(o, malformed[i], &t), KIQ_OAUTH_INVALID);
    kiq_oauth_free(o);
}

static void test_unsecured_options(void **state)
{
    (void)state;
    kiq_oauth_t *o = unsecured_validator(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        "unsecuredValidatorPrincipalClaimName=\"user\" unsecuredValidatorRequiredScope=\"read,write\" "
        "unsecuredValidatorScopeClaimName=\"scp\" unsecuredValidatorAllowableClockSkewMs=\"5000\";");
    kiq_oauth_token_t t;
    const char *none = "{\"alg\":\"none\"}";
    char *tok = unsigned_token(none, "{\"user\":\"bob\",\"scp\":\"read write admin\",\"exp\":1699999997}");
    assert_int_equal(validate(o, tok, &t), 0); /* 3 s past exp, within the 5 s allowed */
    assert_string_equal(t.principal, "bob");
    free(tok);
    tok = unsigned_token(none, "{\"user\":\"bob\",\"scp\":[\"write\",\"read\"],\"exp\":1700000060}");
    assert_int_equal(validate(o, tok, &t), 0);
    free(tok);
    tok = unsigned_token(none, "{\"user\":\"bob\",\"scp\":\"read\",\"exp\":1700000060}");
    assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_SCOPE);
    free(tok);
    tok = unsigned_token(none, "{\"sub\":\"bob\",\"scp\":\"read write\",\"exp\":1700000060}");
    assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
    free(tok);
    tok = unsigned_token(none, "{\"user\":\"bob\",\"scp\":\"read write\",\"exp\":1699999990}");
    assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
    free(tok);
    kiq_oauth_free(o);
    kiq_config_t *c = kiq_config_new();
    kiq_config_set(c, "oauthbearer.sasl.jaas.config",
                   "M required unsecuredValidatorAllowableClockSkewMs=\"soon\";");
    assert_null(kiq_oauth_new(c));
    kiq_config_free(c);
}

/* An RSA key, its public half written as a JWKS with kid k1 */
typedef struct jwks_fixture {
    cjose_jwk_t *key, *other;
    char path[64];
} jwks_fixture_t;

static int jwks_setup(void **state)
{
    jwks_fixture_t *f = calloc(1, sizeof *f);
    static const uint8_t e[] = {1, 0, 1};
    cjose_err err;
    f->key = cjose_jwk_create_RSA_random(2048, e, sizeof e, &err);
    f->other = cjose_jwk_create_RSA_random(2048, e, sizeof e, &err);
    assert_non_null(f->key);
    char *pub = cjose_jwk_to_json(f->key, false, &err);
    json_t *k = json_loads(pub, 0, NULL);
    free(pub);
    json_object_set_new(k, "kid", json_string("k1"));
    json_object_set_new(k, "use", json_string("sig"));
    json_t *enc = json_pack("{s:s,s:s,s:s}", "kty", "oct", "use", "enc", "k", "c2VjcmV0");
    json_t *doc = json_pack("{s:[o,o]}", "keys", enc, k);
    strcpy(f->path, "/tmp/kiq-jwks-XXXXXX");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(json_dump_file(doc, f->path, 0), 0);
    json_decref(doc);
    *state = f;
    return 0;
}

static int jwks_teardown(void **state)
{
    jwks_fixture_t *f = *state;
    unlink(f->path);
    cjose_jwk_release(f->key);
    cjose_jwk_release(f->other);
    free(f);
    return 0;
}

static char *signed_token(cjose_jwk_t *key, const char *kid, const char *claims)
{
    cjose_err err;
    cjose_header_t *h = cjose_header_new(&err);
    cjose_header_set(h, CJOSE_HDR_ALG, CJOSE_HDR_ALG_RS256, &err);
    if (kid) cjose_header_set(h, CJOSE_HDR_KID, kid, &err);
    cjose_jws_t *jws = cjose_jws_sign(key, h, (const uint8_t *)claims, strlen(claims), &err);
    assert_non_null(jws);
    const char *compact;
    assert_true(cjose_jws_export(jws, &compact, &err));
    char *t = strdup(compact);
    cjose_jws_release(jws);
    cjose_header_release(h);
    return t;
}

static kiq_oauth_t *jwks_validator(const jwks_fixture_t *f, const char *audience, const char *issuer)
{
    char url[96];
    snprintf(url, sizeof url, "file://%s", f->path);
    kiq_config_t *c = kiq_config_new();
    kiq_config_set(c, "sasl.oauthbearer.jwks.endpoint.url", url);
    if (audience) kiq_config_set(c, "sasl.oauthbearer.expected.audience", audience);
    if (issuer) kiq_config_set(c, "sasl.oauthbearer.expected.issuer", issuer);
    kiq_oauth_t *o = kiq_oauth_new(c);
    kiq_config_free(c);
    assert_non_null(o);
    return o;
}

static void test_jwks(void **state)
{
    jwks_fixture_t *f = *state;
    kiq_oauth_t *o = jwks_validator(f, "kafka, other", "https://idp.example");
    kiq_oauth_token_t t;
    const char *good = "{\"sub\":\"carol\",\"aud\":[\"x\",\"kafka\"],\"iss\":\"https://idp.example\",\"exp\":1700000060}";
    char *tok = signed_token(f->key, "k1", good);
    assert_int_equal(validate(o, tok, &t), 0);
    assert_string_equal(t.principal, "carol");
    assert_int_equal(t.expires_ms, 1700000060000);
    free(tok);
    tok = signed_token(f->key, NULL, good); /* no kid: every key tried */
    assert_int_equal(validate(o, tok, &t), 0);
    free(tok);
    /* within the 30 s skew, and past it */
    tok = signed_token(f->key, "k1", "{\"sub\":\"c\",\"aud\":\"kafka\",\"iss\":\"https://idp.example\",\"exp\":1699999980}");
    assert_int_equal(validate(o, tok, &t), 0);
    free(tok);
    static const char *const refused[] = {
        "{\"sub\":\"c\",\"aud\":\"kafka\",\"iss\":\"https://idp.example\",\"exp\":1699999960}", /* expired */
        "{\"sub\":\"c\",\"aud\":\"web\",\"iss\":\"https://idp.example\",\"exp\":1700000060}",   /* audience */
        "{\"sub\":\"c\",\"iss\":\"https://idp.example\",\"exp\":1700000060}",                  /* no audience */
        "{\"sub\":\"c\",\"aud\":\"kafka\",\"iss\":\"https://evil.example\",\"exp\":1700000060}", /* issuer */
        "{\"aud\":\"kafka\",\"iss\":\"https://idp.example\",\"exp\":1700000060}",              /* no sub */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        tok = signed_token(f->key, "k1", refused[i]);
        assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
        free(tok);
    }
    tok = signed_token(f->other, "k1", good); /* signed by a key not in the JWKS */
    assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
    free(tok);
    tok = signed_token(f->key, "k2", good); /* a kid the JWKS lacks */
    assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
    free(tok);
    tok = unsigned_token("{\"alg\":\"none\"}", good); /* unsigned where a signature is needed */
    assert_int_equal(validate(o, tok, &t), KIQ_OAUTH_INVALID);
    free(tok);
    /* the signature of another payload */
    char *a = signed_token(f->key, "k1", good), *b = signed_token(f->key, "k1", "{\"sub\":\"mallory\",\"exp\":1700000060}");
    strcpy(strrchr(b, '.') + 1, strrchr(a, '.') + 1);
    assert_int_equal(validate(o, b, &t), KIQ_OAUTH_INVALID);
    free(a);
    free(b);
    kiq_oauth_free(o);
    /* a JWKS that is not there, not a file URL, without a signing key */
    kiq_config_t *c = kiq_config_new();
    static const char *const bad_urls[] = {"file:///nonexistent/jwks.json", "https://idp.example/jwks"};
    for (size_t i = 0; i < 2; i++) {
        kiq_config_set(c, "sasl.oauthbearer.jwks.endpoint.url", bad_urls[i]);
        assert_null(kiq_oauth_new(c));
    }
    kiq_config_free(c);
}

static kiq_sasl_t *oauth_sasl(const char *reauth_ms)
{
    kiq_config_t *c = kiq_config_new();
    kiq_config_set(c, "sasl.enabled.mechanisms", "OAUTHBEARER,PLAIN");
    kiq_config_set(c, "plain.sasl.jaas.config", "M required user_alice=\"pw\";");
    if (reauth_ms) kiq_config_set(c, "connections.max.reauth.ms", reauth_ms);
    kiq_sasl_t *s = kiq_sasl_new(c);
    kiq_config_free(c);
    assert_non_null(s);
    return s;
}

/* a token for sub that expires in_s seconds from the real clock, in a client message */
static char *client_message(const char *sub, int in_s)
{
    char claims[160];
    snprintf(claims, sizeof claims, "{\"sub\":\"%s\",\"exp\":%lld}", sub, (long long)(kiq_clock_wall_ms() / 1000 + in_s));
    char *tok = unsigned_token("{\"alg\":\"none\"}", claims);
    char *m = malloc(strlen(tok) + 32);
    sprintf(m, "n,,\x01" "auth=Bearer %s\x01\x01", tok);
    free(tok);
    return m;
}

static int auth(kiq_sasl_session_t *ss, const char *msg, char **answer)
{
    uint8_t *out;
    size_t len;
    int rc = kiq_sasl_authenticate(ss, (const uint8_t *)msg, strlen(msg), &out, &len);
    if (answer) *answer = out ? strndup((const char *)out, len) : NULL;
    free(out);
    return rc;
}

static void test_session(void **state)
{
    (void)state;
    kiq_sasl_t *s = oauth_sasl("3000");
    kiq_sasl_session_t *ss = kiq_sasl_session_new(s);
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    char *m = client_message("alice", -60), *answer;
    assert_int_equal(auth(ss, m, &answer), 0); /* an expired token: answered with the error JSON */
    assert_string_equal(answer, "{\"status\":\"invalid_token\"}");
    free(answer);
    free(m);
    assert_false(kiq_sasl_authenticated(ss));
    kiq_error_clear();
    assert_int_equal(auth(ss, "\x01", NULL), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(kiq_error_get(), "{\"status\":\"invalid_token\"}");
    kiq_sasl_session_unref(ss);
    assert_int_equal(kiq_sasl_count(s, KIQ_SASL_AUTH_FAILED), 1);

    /* a token for 10 minutes: the session is connections.max.reauth.ms */
    ss = kiq_sasl_session_new(s);
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    m = client_message("alice", 600);
    assert_int_equal(auth(ss, m, NULL), 0);
    free(m);
    assert_string_equal(kiq_sasl_principal(ss), "User:alice");
    assert_int_equal(kiq_sasl_session_lifetime_ms(ss), 3000);
    int64_t now = kiq_clock_mono_ms();
    assert_true(kiq_sasl_allows(ss, 0, now));
    assert_false(kiq_sasl_allows(ss, 0, now + 3001)); /* past it only a re-authentication */
    assert_true(kiq_sasl_allows(ss, 17, now + 3001));
    /* re-authenticated with a token expiring in 2 s: its expiry bounds the session */
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    m = client_message("alice", 2);
    assert_int_equal(auth(ss, m, NULL), 0);
    free(m);
    assert_true(kiq_sasl_session_lifetime_ms(ss) > 0 && kiq_sasl_session_lifetime_ms(ss) <= 2000);
    assert_int_equal(kiq_sasl_count(s, KIQ_SASL_REAUTH_OK), 1);
    /* another principal refused */
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    m = client_message("mallory", 600);
    assert_int_equal(auth(ss, m, NULL), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    free(m);
    assert_string_equal(kiq_error_get(), "Cannot change principals during re-authentication from User.alice: User.mallory");
    assert_int_equal(kiq_sasl_count(s, KIQ_SASL_REAUTH_FAILED), 1);
    kiq_sasl_session_unref(ss);

    /* another mechanism on re-authentication refused; PLAIN gets the configured lifetime */
    ss = kiq_sasl_session_new(s);
    assert_int_equal(kiq_sasl_handshake(ss, "PLAIN", 5), 0);
    assert_int_equal(kiq_sasl_authenticate(ss, (const uint8_t *)"\0alice\0pw", 9, (uint8_t **)&answer, &(size_t){0}), 0);
    free(answer);
    assert_int_equal(kiq_sasl_session_lifetime_ms(ss), 3000);
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    m = client_message("alice", 600);
    assert_int_equal(auth(ss, m, NULL), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    free(m);
    assert_string_equal(kiq_error_get(), "SASL mechanism 'OAUTHBEARER' requested by client is not supported for "
                                         "re-authentication of mechanism 'PLAIN'");
    kiq_sasl_session_unref(ss);
    /* an authorization id other than the token's principal */
    ss = kiq_sasl_session_new(s);
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    m = client_message("alice", 600);
    char *shifted = malloc(strlen(m) + 8);
    sprintf(shifted, "n,a=bob,%s", m + 3);
    free(m);
    assert_int_equal(auth(ss, shifted, NULL), KIQ_ERR_SASL_AUTHENTICATION_FAILED);
    free(shifted);
    kiq_sasl_session_unref(ss);
    kiq_sasl_free(s);

    /* without connections.max.reauth.ms: PLAIN's session does not end, a token's ends at its expiry */
    s = oauth_sasl(NULL);
    ss = kiq_sasl_session_new(s);
    assert_int_equal(kiq_sasl_handshake(ss, "OAUTHBEARER", 11), 0);
    m = client_message("alice", 600);
    assert_int_equal(auth(ss, m, NULL), 0);
    free(m);
    assert_true(kiq_sasl_session_lifetime_ms(ss) > 590000 && kiq_sasl_session_lifetime_ms(ss) <= 600000);
    kiq_sasl_session_unref(ss);
    ss = kiq_sasl_session_new(s);
    assert_int_equal(kiq_sasl_handshake(ss, "PLAIN", 5), 0);
    assert_int_equal(kiq_sasl_authenticate(ss, (const uint8_t *)"\0alice\0pw", 9, (uint8_t **)&answer, &(size_t){0}), 0);
    free(answer);
    assert_int_equal(kiq_sasl_session_lifetime_ms(ss), 0);
    assert_true(kiq_sasl_allows(ss, 0, kiq_clock_mono_ms() + 86400000));
    kiq_sasl_session_unref(ss);
    kiq_sasl_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_message),
        cmocka_unit_test(test_unsecured),
        cmocka_unit_test(test_unsecured_options),
        cmocka_unit_test_setup_teardown(test_jwks, jwks_setup, jwks_teardown),
        cmocka_unit_test(test_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
