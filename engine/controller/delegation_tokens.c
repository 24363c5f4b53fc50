/* Delegation tokens kept sorted in an array; see delegation_tokens.h. */
#include "controller/delegation_tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "core/error.h"

static int cmp(const char *id, const char *key, size_t len)
{
    size_t il = strlen(id);
    int c = memcmp(id, key, il < len ? il : len);
    return c ? c : il < len ? -1 : il > len ? 1 : 0;
}

static size_t find(const kiq_dtoken_store_t *s, const char *id, size_t len, bool *found)
{
    size_t lo = 0, hi = s->n;
    *found = false;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp(s->tokens[mid].id, id, len);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void token_free(kiq_dtoken_t *t)
{
    free(t->id);
    free(t->owner);
    free(t->requester);
    for (int i = 0; i < t->nrenewers; i++) free(t->renewers[i]);
    free(t->renewers);
}

void kiq_dtoken_store_clear(kiq_dtoken_store_t *s)
{
    for (size_t i = 0; i < s->n; i++) token_free(&s->tokens[i]);
    free(s->tokens);
    *s = (kiq_dtoken_store_t){0};
}

static char *dup_str(kiq_str_t v) { return strndup(v.p ? v.p : "", v.p ? (size_t)v.len : 0); }

int kiq_dtoken_store_put(kiq_dtoken_store_t *s, const kiq_delegation_token_record_t *r)
{
    if (!r->token_id.p || r->token_id.len <= 0) return kiq_error_set("DelegationTokenRecord: no token id");
    kiq_dtoken_t t = {.id = dup_str(r->token_id), .owner = dup_str(r->owner), .requester = dup_str(r->requester),
                      .issue_ms = r->issue_timestamp, .max_ms = r->max_timestamp,
                      .expiry_ms = r->expiration_timestamp};
    int n = r->renewers_n > 0 ? r->renewers_n : 0;
    t.renewers = calloc((size_t)n + 1, sizeof *t.renewers);
    bool ok = t.id && t.owner && t.requester && t.renewers;
    for (int i = 0; ok && i < n; i++) ok = (t.renewers[t.nrenewers++] = dup_str(r->renewers[i])) != NULL;
    bool found;
    size_t at = find(s, r->token_id.p, (size_t)r->token_id.len, &found);
    if (ok && !found && s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        kiq_dtoken_t *more = realloc(s->tokens, cap * sizeof *more);
        if ((ok = more != NULL)) {
            s->tokens = more;
            s->cap = cap;
        }
    }
    if (!ok) {
        token_free(&t);
        return kiq_error_set("out of memory");
    }
    if (found) {
        token_free(&s->tokens[at]);
    } else {
        memmove(&s->tokens[at + 1], &s->tokens[at], (s->n - at) * sizeof *s->tokens);
        s->n++;
    }
    s->tokens[at] = t;
    return 0;
}

int kiq_dtoken_store_remove(kiq_dtoken_store_t *s, const char *id, size_t len)
{
    bool found;
    size_t at = find(s, id, len, &found);
    if (!found) return 1;
    token_free(&s->tokens[at]);
    memmove(&s->tokens[at], &s->tokens[at + 1], (s->n - at - 1) * sizeof *s->tokens);
    s->n--;
    return 0;
}

const kiq_dtoken_t *kiq_dtoken_store_get(const kiq_dtoken_store_t *s, const char *id, size_t len)
{
    bool found;
    size_t at = find(s, id, len, &found);
    return found ? &s->tokens[at] : NULL;
}

void kiq_dtoken_hmac(const char *secret, const char *id, uint8_t out[KIQ_DTOKEN_HMAC_LEN])
{
    unsigned int n = KIQ_DTOKEN_HMAC_LEN;
    HMAC(EVP_sha512(), secret, (int)strlen(secret), (const unsigned char *)id, strlen(id), out, &n);
}

const kiq_dtoken_t *kiq_dtoken_store_by_hmac(const kiq_dtoken_store_t *s, const char *secret, const uint8_t *hmac,
                                             size_t len)
{
    if (len != KIQ_DTOKEN_HMAC_LEN) return NULL;
    for (size_t i = 0; i < s->n; i++) {
        uint8_t h[KIQ_DTOKEN_HMAC_LEN];
        kiq_dtoken_hmac(secret, s->tokens[i].id, h);
        if (CRYPTO_memcmp(h, hmac, len) == 0) return &s->tokens[i];
    }
    return NULL;
}

void kiq_dtoken_principal_split(kiq_arena_t *a, const char *principal, kiq_str_t *type, kiq_str_t *name)
{
    const char *colon = strchr(principal, ':');
    *type = colon ? (kiq_str_t){kiq_arena_strndup(a, principal, (size_t)(colon - principal)),
                                (int32_t)(colon - principal)}
                  : KIQ_STR("User");
    const char *n = colon ? colon + 1 : principal;
    *name = (kiq_str_t){kiq_arena_strndup(a, n, strlen(n)), (int32_t)strlen(n)};
}

void kiq_dtoken_principal_join(char *out, size_t cap, kiq_str_t type, kiq_str_t name)
{
    snprintf(out, cap, "%.*s:%.*s", type.p ? (int)type.len : 0, type.p ? type.p : "", name.p ? (int)name.len : 0,
             name.p ? name.p : "");
}

int kiq_dtoken_may_renew(const kiq_dtoken_t *t, const char *principal)
{
    if (!strcmp(t->owner, principal) || !strcmp(t->requester, principal)) return 1;
    for (int i = 0; i < t->nrenewers; i++)
        if (!strcmp(t->renewers[i], principal)) return 1;
    return 0;
}

int kiq_dtoken_scram_credential(const char *secret, enum kiq_scram_mech m, const char *token_id,
                                kiq_scram_credential_t *out)
{
    /* the password is the HMAC's base64; a fresh salt each time, Kafka's minimum iterations */
    uint8_t hmac[KIQ_DTOKEN_HMAC_LEN], salt[32];
    char password[KIQ_DTOKEN_HMAC_LEN * 2];
    kiq_dtoken_hmac(secret, token_id, hmac);
    int n = EVP_EncodeBlock((unsigned char *)password, hmac, KIQ_DTOKEN_HMAC_LEN);
    int rc = RAND_bytes(salt, sizeof salt) == 1
                 ? kiq_scram_credential_make(m, password, (size_t)n, salt, sizeof salt, KIQ_SCRAM_MIN_ITERATIONS, out)
                 : -1;
    OPENSSL_cleanse(password, sizeof password);
    OPENSSL_cleanse(hmac, sizeof hmac);
    return rc;
}
