/* SASL's client side for broker-to-broker connections; see sasl_client.h.
 * The server's SCRAM messages are checked for form and length before use. */
#include "security/sasl_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/error.h"

/* A server's iteration count above this is refused: its PBKDF2 would hold
 * the connecting thread for seconds. */
enum { MAX_CLIENT_ITERATIONS = 1 << 20 };

static const EVP_MD *md_of(enum kiq_scram_mech m) { return m == KIQ_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256(); }

static void hmac(enum kiq_scram_mech m, const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t *out)
{
    unsigned int n = 0;
    HMAC(md_of(m), key, (int)key_len, data, len, out, &n);
}

/* base64 text of len characters into out (room max): the byte count, -1
 * when it is not base64 or too long. */
static int unb64(const char *in, size_t len, uint8_t *out, size_t max)
{
    uint8_t tmp[256];
    if (len == 0 || len % 4 || len / 4 * 3 > sizeof tmp) return -1;
    int n = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)len);
    if (n < 0) return -1;
    if (in[len - 1] == '=') n--;
    if (in[len - 2] == '=') n--;
    if (n <= 0 || (size_t)n > max) return -1;
    memcpy(out, tmp, (size_t)n);
    return n;
}

int kiq_sasl_client_init(kiq_sasl_client_t *c, const char *mechanism, const char *user, const char *password)
{
    memset(c, 0, sizeof *c);
    c->user = user;
    c->password = password;
    int scram = kiq_scram_mech_of(mechanism, strlen(mechanism));
    if (strcmp(mechanism, "PLAIN") == 0) {
        c->mech = KIQ_SASL_CLIENT_PLAIN;
    } else if (scram >= 0) {
        c->mech = KIQ_SASL_CLIENT_SCRAM;
        c->scram = (enum kiq_scram_mech)scram;
    } else
        return kiq_error_set("SASL mechanism %s is not spoken by brokers to each other (PLAIN, SCRAM-SHA-256, "
                             "SCRAM-SHA-512)", mechanism);
    return 0;
}

void kiq_sasl_client_clear(kiq_sasl_client_t *c)
{
    free(c->client_first_bare);
    c->client_first_bare = NULL;
    OPENSSL_cleanse(c->server_signature, sizeof c->server_signature);
}

static int take(char *text, uint8_t **out, size_t *out_len)
{
    if (!text) return kiq_error_set("out of memory");
    *out = (uint8_t *)text;
    *out_len = strlen(text);
    return 0;
}

/* PLAIN's one token: no authorization id, the user, the password. */
static int plain_token(kiq_sasl_client_t *c, uint8_t **out, size_t *out_len)
{
    size_t ul = strlen(c->user), pl = strlen(c->password);
    uint8_t *t = malloc(ul + pl + 2);
    if (!t) return kiq_error_set("out of memory");
    t[0] = 0;
    memcpy(t + 1, c->user, ul);
    t[1 + ul] = 0;
    memcpy(t + 2 + ul, c->password, pl);
    *out = t;
    *out_len = ul + pl + 2;
    return 0;
}

/* "n,,n=<user with ',' and '=' escaped>,r=<nonce>" */
static int scram_first(kiq_sasl_client_t *c, uint8_t **out, size_t *out_len)
{
    if (!c->nonce[0]) {
        uint8_t rnd[24];
        if (RAND_bytes(rnd, sizeof rnd) != 1) return kiq_error_set("no random bytes for a nonce");
        EVP_EncodeBlock((unsigned char *)c->nonce, rnd, sizeof rnd);
    }
    size_t ul = strlen(c->user);
    char *bare = malloc(ul * 3 + strlen(c->nonce) + 8);
    if (!bare) return kiq_error_set("out of memory");
    char *p = bare + sprintf(bare, "n=");
    for (size_t i = 0; i < ul; i++)
        p += c->user[i] == ',' ? sprintf(p, "=2C") : c->user[i] == '=' ? sprintf(p, "=3D") : sprintf(p, "%c", c->user[i]);
    sprintf(p, ",r=%s", c->nonce);
    c->client_first_bare = bare;
    char *first = malloc(strlen(bare) + 4);
    if (first) sprintf(first, "n,,%s", bare);
    return take(first, out, out_len);
}

/* The server's first message ("r=<nonce>,s=<salt>,i=<n>") in, the final
 * message with the proof out; the server's signature kept to check. */
static int scram_final(kiq_sasl_client_t *c, const char *m, size_t len, uint8_t **out, size_t *out_len)
{
    char sf[1024];
    if (len == 0 || len >= sizeof sf || memchr(m, 0, len)) return kiq_error_set("SCRAM: malformed server first message");
    memcpy(sf, m, len);
    sf[len] = 0;
    char *r = strncmp(sf, "r=", 2) == 0 ? sf + 2 : NULL, *s = strstr(sf, ",s="), *i = strstr(sf, ",i=");
    if (!r || !s || !i || i < s) return kiq_error_set("SCRAM: malformed server first message");
    size_t nl = (size_t)(s - r), cl = strlen(c->nonce);
    if (nl <= cl || memcmp(r, c->nonce, cl) != 0) return kiq_error_set("SCRAM: the server's nonce does not extend ours");
    char *salt64 = s + 3, *iters_at = i + 3, *end;
    long iters = strtol(iters_at, &end, 10);
    if ((*end && *end != ',') || end == iters_at || iters < KIQ_SCRAM_MIN_ITERATIONS || iters > MAX_CLIENT_ITERATIONS)
        return kiq_error_set("SCRAM: iteration count %.*s refused", (int)(end - iters_at), iters_at);
    uint8_t salt[KIQ_SCRAM_MAX_SALT];
    int sl = unb64(salt64, (size_t)(i - salt64), salt, sizeof salt);
    if (sl <= 0) return kiq_error_set("SCRAM: malformed salt");
    enum kiq_scram_mech mech = c->scram;
    size_t kl = kiq_scram_key_len(mech);
    uint8_t salted[KIQ_SCRAM_MAX_KEY], ck[KIQ_SCRAM_MAX_KEY], stored[KIQ_SCRAM_MAX_KEY], sig[KIQ_SCRAM_MAX_KEY],
        sk[KIQ_SCRAM_MAX_KEY];
    if (PKCS5_PBKDF2_HMAC(c->password, (int)strlen(c->password), salt, sl, (int)iters, md_of(mech), (int)kl,
                          salted) != 1)
        return kiq_error_set("SCRAM: PBKDF2 failed");
    hmac(mech, salted, kl, "Client Key", 10, ck);
    hmac(mech, salted, kl, "Server Key", 10, sk);
    EVP_Digest(ck, kl, stored, NULL, md_of(mech), NULL);
    size_t wl = nl + 16;
    char *without = malloc(wl);
    size_t al = strlen(c->client_first_bare) + len + wl + 4;
    char *auth = malloc(al);
    char *final = malloc(wl + kl * 2 + 8);
    int rc = 0;
    if (!without || !auth || !final) {
        rc = kiq_error_set("out of memory");
    } else {
        snprintf(without, wl, "c=biws,r=%.*s", (int)nl, r);
        snprintf(auth, al, "%s,%s,%s", c->client_first_bare, sf, without);
        hmac(mech, stored, kl, auth, strlen(auth), sig);
        uint8_t proof[KIQ_SCRAM_MAX_KEY];
        for (size_t k = 0; k < kl; k++) proof[k] = ck[k] ^ sig[k];
        char *p = final + sprintf(final, "%s,p=", without);
        EVP_EncodeBlock((unsigned char *)p, proof, (int)kl);
        hmac(mech, sk, kl, auth, strlen(auth), c->server_signature);
        OPENSSL_cleanse(proof, sizeof proof);
    }
    OPENSSL_cleanse(salted, sizeof salted);
    OPENSSL_cleanse(ck, sizeof ck);
    OPENSSL_cleanse(sk, sizeof sk);
    free(without);
    free(auth);
    if (rc != 0) {
        free(final);
        return rc;
    }
    return take(final, out, out_len);
}

/* "v=<the server's signature>" must be what the proof's exchange signs. */
static int scram_check(kiq_sasl_client_t *c, const char *m, size_t len)
{
    size_t kl = kiq_scram_key_len(c->scram);
    uint8_t v[KIQ_SCRAM_MAX_KEY];
    if (len < 2 || m[0] != 'v' || m[1] != '=' || unb64(m + 2, len - 2, v, sizeof v) != (int)kl ||
        CRYPTO_memcmp(v, c->server_signature, kl) != 0)
        return kiq_error_set("SCRAM: the server's signature does not match (is it the broker it claims to be?)");
    return 1;
}

int kiq_sasl_client_step(kiq_sasl_client_t *c, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    int step = c->step++;
    if (c->mech == KIQ_SASL_CLIENT_PLAIN) return step == 0 ? plain_token(c, out, out_len) : 1;
    switch (step) {
    case 0: return scram_first(c, out, out_len);
    case 1: return scram_final(c, (const char *)in, len, out, out_len);
    case 2: return scram_check(c, (const char *)in, len);
    default: return kiq_error_set("SCRAM exchange already complete");
    }
}
