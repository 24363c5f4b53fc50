/* SCRAM's server side on OpenSSL's PBKDF2, HMAC and digests; see
 * sasl_scram.h. Every field of a client message is checked for its form
 * and length before use. */
#include "security/sasl_scram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/error.h"

static const EVP_MD *md_of(enum kiq_scram_mech m) { return m == KIQ_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256(); }

const char *kiq_scram_mech_name(enum kiq_scram_mech m)
{
    return m == KIQ_SCRAM_SHA_512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

int kiq_scram_mech_of(const char *name, size_t len)
{
    if (len == 13 && memcmp(name, "SCRAM-SHA-256", 13) == 0) return KIQ_SCRAM_SHA_256;
    if (len == 13 && memcmp(name, "SCRAM-SHA-512", 13) == 0) return KIQ_SCRAM_SHA_512;
    return -1;
}

size_t kiq_scram_key_len(enum kiq_scram_mech m) { return m == KIQ_SCRAM_SHA_512 ? 64 : 32; }

static void hmac(enum kiq_scram_mech m, const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t *out)
{
    unsigned int n = 0;
    HMAC(md_of(m), key, (int)key_len, data, len, out, &n);
}

int kiq_scram_credential_make(enum kiq_scram_mech m, const char *password, size_t password_len, const uint8_t *salt,
                              size_t salt_len, int32_t iterations, kiq_scram_credential_t *out)
{
    if (iterations < KIQ_SCRAM_MIN_ITERATIONS || iterations > KIQ_SCRAM_MAX_ITERATIONS)
        return kiq_error_set("Iterations %d is less than the minimum %d or greater than the maximum %d for %s",
                             iterations, KIQ_SCRAM_MIN_ITERATIONS, KIQ_SCRAM_MAX_ITERATIONS, kiq_scram_mech_name(m));
    if (salt_len == 0 || salt_len > KIQ_SCRAM_MAX_SALT) return kiq_error_set("salt of %zu bytes", salt_len);
    size_t kl = kiq_scram_key_len(m);
    uint8_t salted[KIQ_SCRAM_MAX_KEY];
    if (PKCS5_PBKDF2_HMAC(password, (int)password_len, salt, (int)salt_len, iterations, md_of(m), (int)kl, salted) != 1)
        return kiq_error_set("PBKDF2 failed");
    int rc = kiq_scram_credential_from_salted(m, salted, kl, salt, salt_len, iterations, out);
    OPENSSL_cleanse(salted, sizeof salted);
    return rc;
}

int kiq_scram_credential_from_salted(enum kiq_scram_mech m, const uint8_t *salted, size_t salted_len,
                                     const uint8_t *salt, size_t salt_len, int32_t iterations,
                                     kiq_scram_credential_t *out)
{
    size_t kl = kiq_scram_key_len(m);
    if (iterations < KIQ_SCRAM_MIN_ITERATIONS || iterations > KIQ_SCRAM_MAX_ITERATIONS)
        return kiq_error_set("Iterations %d is less than the minimum %d or greater than the maximum %d for %s",
                             iterations, KIQ_SCRAM_MIN_ITERATIONS, KIQ_SCRAM_MAX_ITERATIONS, kiq_scram_mech_name(m));
    if (salt_len == 0 || salt_len > KIQ_SCRAM_MAX_SALT) return kiq_error_set("salt of %zu bytes", salt_len);
    if (salted_len != kl) return kiq_error_set("a salted password of %zu bytes for %s", salted_len, kiq_scram_mech_name(m));
    uint8_t client_key[KIQ_SCRAM_MAX_KEY];
    *out = (kiq_scram_credential_t){.iterations = iterations, .salt_len = salt_len};
    memcpy(out->salt, salt, salt_len);
    hmac(m, salted, kl, "Client Key", 10, client_key);
    hmac(m, salted, kl, "Server Key", 10, out->server_key);
    EVP_Digest(client_key, kl, out->stored_key, NULL, md_of(m), NULL);
    OPENSSL_cleanse(client_key, sizeof client_key);
    return 0;
}

/* One MECHANISM=[name=N,password=P(,iterations=I)] entry of len bytes. */
static int add_entry(const char *e, size_t len,
                     int (*fn)(void *ctx, const char *user, enum kiq_scram_mech m, const kiq_scram_credential_t *cred),
                     void *ctx)
{
    char text[1024], *name = NULL, *password = NULL;
    long iterations = KIQ_SCRAM_MIN_ITERATIONS;
    if (len >= sizeof text) return kiq_error_set("an entry of %zu bytes", len);
    memcpy(text, e, len);
    text[len] = 0;
    char *eq = strchr(text, '='), *end = text + len;
    if (!eq || eq[1] != '[' || end[-1] != ']')
        return kiq_error_set("'%s': MECHANISM=[name=...,password=...] expected", text);
    *eq = 0;
    end[-1] = 0;
    int m = kiq_scram_mech_of(text, strlen(text));
    if (m < 0) return kiq_error_set("unknown mechanism %s (SCRAM-SHA-256 or SCRAM-SHA-512)", text);
    for (char *save, *kv = strtok_r(eq + 2, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *num_end;
        if (strncmp(kv, "name=", 5) == 0) name = kv + 5;
        else if (strncmp(kv, "password=", 9) == 0) password = kv + 9;
        else if (strncmp(kv, "iterations=", 11) == 0 && (iterations = strtol(kv + 11, &num_end, 10), !*num_end))
            continue;
        else return kiq_error_set("%s: name=, password= or iterations=N expected", kv);
    }
    if (!name || !*name || !password || !*password) return kiq_error_set("%s: name and password are needed", text);
    if (iterations < KIQ_SCRAM_MIN_ITERATIONS || iterations > KIQ_SCRAM_MAX_ITERATIONS)
        return kiq_error_set("iterations %ld: %d to %d", iterations, KIQ_SCRAM_MIN_ITERATIONS, KIQ_SCRAM_MAX_ITERATIONS);
    uint8_t salt[16];
    kiq_scram_credential_t cred;
    if (RAND_bytes(salt, sizeof salt) != 1) return kiq_error_set("no random bytes for a salt");
    int rc = kiq_scram_credential_make((enum kiq_scram_mech)m, password, strlen(password), salt, sizeof salt,
                                       (int32_t)iterations, &cred);
    if (rc == 0) rc = fn(ctx, name, (enum kiq_scram_mech)m, &cred);
    OPENSSL_cleanse(text, sizeof text); /* the password */
    return rc;
}

int kiq_scram_add_spec(const char *spec,
                       int (*fn)(void *ctx, const char *user, enum kiq_scram_mech m, const kiq_scram_credential_t *cred),
                       void *ctx)
{
    for (const char *p = spec; *p;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len && add_entry(p, len, fn, ctx) != 0) return -1;
        p += len + (semi ? 1 : 0);
    }
    return 0;
}

void kiq_scram_server_init(kiq_scram_server_t *s, enum kiq_scram_mech m)
{
    memset(s, 0, sizeof *s);
    s->mech = m;
}

void kiq_scram_server_clear(kiq_scram_server_t *s)
{
    free(s->client_first_bare);
    free(s->server_first);
    OPENSSL_cleanse(&s->cred, sizeof s->cred);
    s->client_first_bare = s->server_first = NULL;
}

/* base64 of n bytes into out (room for 4*ceil(n/3)+1) */
static void b64(const uint8_t *in, size_t n, char *out) { EVP_EncodeBlock((unsigned char *)out, in, (int)n); }

/* base64 text of len characters into out (room max): the byte count, -1
 * when it is not base64 or too long. */
static int unb64(const char *in, size_t len, uint8_t *out, size_t max)
{
    if (len % 4 || len / 4 * 3 > max + 2 || len > 4096) return -1;
    uint8_t tmp[3072];
    if (len == 0) return 0;
    int n = EVP_DecodeBlock(tmp, (const unsigned char *)in, (int)len);
    if (n < 0) return -1;
    if (in[len - 1] == '=') n--;
    if (in[len - 2] == '=') n--;
    if ((size_t)n > max) return -1;
    memcpy(out, tmp, (size_t)n);
    return n;
}

/* The value of attribute a at *p (an "a=" prefix), up to the next comma
 * or end; the cursor moves past the comma. -1 when absent. */
static int attr(const char **p, const char *end, char a, const char **val, size_t *len)
{
    if (end - *p < 2 || (*p)[0] != a || (*p)[1] != '=') return -1;
    const char *v = *p + 2, *c = memchr(v, ',', (size_t)(end - v));
    *val = v;
    *len = (size_t)((c ? c : end) - v);
    *p = c ? c + 1 : end;
    return 0;
}

/* RFC 5802's saslname: '=2C' and '=3D' are ',' and '='; any other '=' is malformed. */
static int saslname(const char *v, size_t len, char *out, size_t max)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = v[i];
        if (ch == '=') {
            if (i + 3 <= len && memcmp(v + i, "=2C", 3) == 0) ch = ',';
            else if (i + 3 <= len && memcmp(v + i, "=3D", 3) == 0) ch = '=';
            else return -1;
            i += 2;
        } else if (ch == 0)
            return -1;
        if (o + 1 >= max) return -1;
        out[o++] = ch;
    }
    out[o] = 0;
    return o ? 0 : -1;
}

static bool printable_nonce(const char *v, size_t len)
{
    if (!len) return false;
    for (size_t i = 0; i < len; i++)
        if (v[i] < 0x21 || v[i] > 0x7e || v[i] == ',') return false;
    return true;
}

static int malformed(const char *what) { return kiq_error_set("Invalid SCRAM %s", what); }

static int client_first(kiq_scram_server_t *s, const char *m, size_t len, kiq_scram_lookup_fn lookup, void *ctx,
                        char **out, size_t *out_len)
{
    const char *end = m + len, *p = m;
    if (len < 3 || memchr(m, 0, len)) return malformed("client first message");
    if ((p[0] != 'n' && p[0] != 'y') || p[1] != ',')
        return malformed("client first message: channel binding is not supported");
    p += 2;
    const char *authzid = NULL;
    size_t alen = 0;
    if (p < end && *p != ',' && attr(&p, end, 'a', &authzid, &alen) != 0) return malformed("client first message");
    else if (p < end && *p == ',')
        p++;
    else if (!authzid)
        return malformed("client first message");
    size_t gl = (size_t)(p - m);
    if (gl >= sizeof s->gs2_header) return malformed("client first message");
    memcpy(s->gs2_header, m, gl);
    s->gs2_header[gl] = 0;
    const char *bare = p, *v;
    size_t vl;
    if (attr(&p, end, 'n', &v, &vl) != 0 || saslname(v, vl, s->user, sizeof s->user) != 0)
        return malformed("client first message: bad user name");
    if (authzid) {
        char az[256];
        if (saslname(authzid, alen, az, sizeof az) != 0 || strcmp(az, s->user) != 0)
            return kiq_error_set("Authentication failed: Client requested an authorization id that is different from username");
    }
    if (attr(&p, end, 'r', &v, &vl) != 0 || !printable_nonce(v, vl) || vl > 200)
        return malformed("client first message: bad nonce");
    /* extensions follow, Kafka's tokenauth=true among them */
    while (p < end) {
        const char *e = p, *comma = memchr(p, ',', (size_t)(end - p)), *stop = comma ? comma : end;
        const char *eq = memchr(e, '=', (size_t)(stop - e));
        if (!eq || eq == e) return malformed("client first message: bad extension");
        if (stop - e == 14 && memcmp(e, "tokenauth=true", 14) == 0) s->tokenauth = true;
        p = comma ? comma + 1 : end;
    }
    if (!s->server_nonce[0]) {
        uint8_t rnd[24];
        if (RAND_bytes(rnd, sizeof rnd) != 1) return kiq_error_set("no random bytes for a nonce");
        b64(rnd, sizeof rnd, s->server_nonce);
    }
    snprintf(s->nonce, sizeof s->nonce, "%.*s%s", (int)vl, v, s->server_nonce);
    if (!(s->client_first_bare = strndup(bare, (size_t)(end - bare)))) return kiq_error_set("out of memory");
    if (lookup(ctx, s->mech, s->user, &s->cred) != 0) return 1;
    char salt[KIQ_SCRAM_MAX_SALT * 2];
    b64(s->cred.salt, s->cred.salt_len, salt);
    size_t n = strlen(s->nonce) + strlen(salt) + 32;
    if (!(s->server_first = malloc(n))) return kiq_error_set("out of memory");
    snprintf(s->server_first, n, "r=%s,s=%s,i=%d", s->nonce, salt, s->cred.iterations);
    if (!(*out = strdup(s->server_first))) return kiq_error_set("out of memory");
    *out_len = strlen(*out);
    s->state = KIQ_SCRAM_FINAL;
    return 0;
}

static int client_final(kiq_scram_server_t *s, const char *m, size_t len, char **out, size_t *out_len)
{
    const char *end = m + len, *p = m, *v;
    size_t vl;
    if (memchr(m, 0, len)) return malformed("client final message");
    uint8_t cbind[300];
    int cl;
    if (attr(&p, end, 'c', &v, &vl) != 0 || (cl = unb64(v, vl, cbind, sizeof cbind)) < 0 ||
        (size_t)cl != strlen(s->gs2_header) || memcmp(cbind, s->gs2_header, (size_t)cl) != 0)
        return malformed("client final message: bad channel binding");
    /* the nonce must end with the server's, as Kafka checks it: librdkafka
     * before 2.x's fix sends its own nonce in front of the whole one */
    size_t nl = strlen(s->nonce);
    if (attr(&p, end, 'r', &v, &vl) != 0 || vl < nl || memcmp(v + vl - nl, s->nonce, nl) != 0)
        return malformed("client final message: nonce does not match");
    /* extensions, then the proof last */
    const char *proof_at = NULL;
    for (const char *q = p; q + 2 <= end; q++)
        if ((q == p || q[-1] == ',') && q[0] == 'p' && q[1] == '=') proof_at = q;
    if (!proof_at) return malformed("client final message: no proof");
    size_t kl = kiq_scram_key_len(s->mech);
    uint8_t proof[KIQ_SCRAM_MAX_KEY];
    p = proof_at;
    if (attr(&p, end, 'p', &v, &vl) != 0 || p != end || unb64(v, vl, proof, sizeof proof) != (int)kl)
        return malformed("client final message: bad proof");
    size_t without_proof = (size_t)(proof_at - 1 - m);
    size_t alen = strlen(s->client_first_bare) + strlen(s->server_first) + without_proof + 2;
    char *auth = malloc(alen + 1);
    if (!auth) return kiq_error_set("out of memory");
    snprintf(auth, alen + 1, "%s,%s,%.*s", s->client_first_bare, s->server_first, (int)without_proof, m);
    uint8_t sig[KIQ_SCRAM_MAX_KEY], client_key[KIQ_SCRAM_MAX_KEY], stored[KIQ_SCRAM_MAX_KEY];
    hmac(s->mech, s->cred.stored_key, kl, auth, alen, sig);
    for (size_t i = 0; i < kl; i++) client_key[i] = proof[i] ^ sig[i];
    EVP_Digest(client_key, kl, stored, NULL, md_of(s->mech), NULL);
    if (CRYPTO_memcmp(stored, s->cred.stored_key, kl) != 0) {
        free(auth);
        return 1;
    }
    hmac(s->mech, s->cred.server_key, kl, auth, alen, sig);
    free(auth);
    if (!(*out = malloc(2 + kl * 2 + 4))) return kiq_error_set("out of memory");
    memcpy(*out, "v=", 2);
    b64(sig, kl, *out + 2);
    *out_len = strlen(*out);
    s->state = KIQ_SCRAM_DONE;
    return 0;
}

int kiq_scram_step(kiq_scram_server_t *s, const uint8_t *in, size_t len, kiq_scram_lookup_fn lookup, void *ctx,
                   char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    switch (s->state) {
    case KIQ_SCRAM_FIRST: return client_first(s, (const char *)in, len, lookup, ctx, out, out_len);
    case KIQ_SCRAM_FINAL: return client_final(s, (const char *)in, len, out, out_len);
    default: return kiq_error_set("SCRAM exchange already complete");
    }
}
