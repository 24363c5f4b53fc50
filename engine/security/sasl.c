/* SASL sessions and the PLAIN mechanism; SCRAM's exchange is in
 * sasl_scram.c. See sasl.h. */
#include "security/sasl.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "proto/errors.h"
#include "security/sasl_oauth.h"

enum mech { MECH_PLAIN, MECH_SCRAM_256, MECH_SCRAM_512, MECH_OAUTHBEARER, MECH_COUNT };
static const char *const mech_names[MECH_COUNT] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"};

/* the API keys allowed before authentication */
enum { API_SASL_HANDSHAKE = 17, API_API_VERSIONS = 18, API_SASL_AUTHENTICATE = 36 };

typedef struct plain_user {
    char *name, *password;
} plain_user_t;

/* Read-only once the listener runs (see sasl.h). */
struct kiq_sasl {
    int order[MECH_COUNT]; /* the enabled ones, as configured */
    int nenabled;
    plain_user_t *users;
    size_t nusers;
    kiq_scram_lookup_fn lookup;
    void *lookup_ctx;
    kiq_sasl_token_lookup_fn token_lookup;
    void *token_ctx;
    kiq_oauth_t *oauth; /* with OAUTHBEARER enabled */
    int64_t reauth_ms;  /* connections.max.reauth.ms, 0: none */
    /* KIQ_SASL_COUNTS of them: any handler thread counts through a read-only kiq_sasl_t, readers read */
    atomic_uint_fast64_t *counts;
};

/* AWAIT_OAUTH_ACK: a refused token was answered with the error JSON, the
 * client's \x01 is awaited before the failure (RFC 7628 3.2.3) */
enum state { AWAIT_HANDSHAKE, AWAIT_TOKEN, AWAIT_OAUTH_ACK, DONE, FAILED };

/* See sasl.h for who holds which field when. */
struct kiq_sasl_session {
    atomic_int refs;
    const kiq_sasl_t *sasl;
    atomic_bool authenticated;
    enum state state;
    enum mech mech;
    bool reauthenticating; /* a handshake after authentication: principal and mech are the first one's */
    atomic_bool raw_tokens; /* a v0 handshake: tokens without Kafka headers until authenticated */
    bool mech_changed;     /* ... naming another mechanism: refused at its token */
    char oauth_error[128]; /* the JSON a refused token was answered with */
    bool token_authenticated;  /* by a delegation token (SCRAM tokenauth): it may not ask for tokens */
    char token_owner[300];     /* the token's owner, Type:name, while its exchange runs */
    int64_t token_expiry_ms;
    kiq_scram_server_t scram;
    char principal[300];
    int64_t lifetime_ms; /* what the last authentication granted (SaslAuthenticate v1+) */
    /* mono clock ms past which only a re-authentication is taken; 0: never. Written by the handler, read by the processor */
    atomic_int_fast64_t expires_ms;
};

static int add_user(void *ctx, const char *user, const char *password)
{
    kiq_sasl_t *s = ctx;
    plain_user_t *more = realloc(s->users, (s->nusers + 1) * sizeof *more);
    if (!more) return kiq_error_set("out of memory");
    s->users = more;
    more[s->nusers] = (plain_user_t){strdup(user), strdup(password)};
    if (!more[s->nusers].name || !more[s->nusers].password) return kiq_error_set("out of memory");
    s->nusers++;
    return 0;
}

int kiq_sasl_jaas_options(const char *jaas, int (*fn)(void *ctx, const char *key, const char *value), void *ctx)
{
    const char *p = jaas;
    while (isspace((unsigned char)*p)) p++;
    const char *cls = p;
    while (*p && !isspace((unsigned char)*p) && *p != ';') p++;
    if (p == cls) return kiq_error_set("sasl.jaas.config: no login module");
    while (isspace((unsigned char)*p)) p++;
    const char *flag = p;
    while (isalpha((unsigned char)*p)) p++;
    size_t fl = (size_t)(p - flag);
    if (!((fl == 8 && !strncmp(flag, "required", 8)) || (fl == 9 && !strncmp(flag, "requisite", 9)) ||
          (fl == 10 && !strncmp(flag, "sufficient", 10)) || (fl == 8 && !strncmp(flag, "optional", 8))))
        return kiq_error_set("sasl.jaas.config: expected a control flag (required, requisite, sufficient or "
                             "optional) after %.*s", (int)(flag - cls), cls);
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (*p == ';') break;
        if (!*p) return kiq_error_set("sasl.jaas.config: it must end with ';'");
        const char *key = p;
        while (*p && *p != '=' && !isspace((unsigned char)*p) && *p != ';') p++;
        size_t kl = (size_t)(p - key);
        while (isspace((unsigned char)*p)) p++;
        if (!kl || *p != '=') return kiq_error_set("sasl.jaas.config: expected key=value at '%.20s'", key);
        p++;
        while (isspace((unsigned char)*p)) p++;
        char value[512];
        size_t vl = 0;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1]) p++;
                if (vl + 1 >= sizeof value) return kiq_error_set("sasl.jaas.config: value too long");
                value[vl++] = *p;
            }
            if (*p != '"') return kiq_error_set("sasl.jaas.config: unterminated quote");
            p++;
        } else {
            while (*p && !isspace((unsigned char)*p) && *p != ';') {
                if (vl + 1 >= sizeof value) return kiq_error_set("sasl.jaas.config: value too long");
                value[vl++] = *p++;
            }
        }
        value[vl] = 0;
        char name[256];
        if (kl >= sizeof name) return kiq_error_set("sasl.jaas.config: option name too long");
        memcpy(name, key, kl);
        name[kl] = 0;
        if (fn(ctx, name, value) != 0) return -1;
    }
    for (p++; isspace((unsigned char)*p); p++) {}
    if (*p) return kiq_error_set("sasl.jaas.config: one login module only, got more after ';'");
    return 0;
}

struct users_of {
    int (*fn)(void *ctx, const char *user, const char *password);
    void *ctx;
};

static int user_option(void *ctx, const char *key, const char *value)
{
    struct users_of *u = ctx;
    return strncmp(key, "user_", 5) == 0 && key[5] ? u->fn(u->ctx, key + 5, value) : 0;
}

int kiq_sasl_jaas_users(const char *jaas, int (*fn)(void *ctx, const char *user, const char *password), void *ctx)
{
    struct users_of u = {fn, ctx};
    return kiq_sasl_jaas_options(jaas, user_option, &u);
}

kiq_sasl_t *kiq_sasl_new(const kiq_config_t *c)
{
    kiq_sasl_t *s = calloc(1, sizeof *s);
    if (!s) return kiq_error_set("out of memory"), NULL;
    if (!(s->counts = calloc(KIQ_SASL_COUNTS, sizeof *s->counts))) {
        kiq_error_set("out of memory");
        goto fail;
    }
    for (const char *p = kiq_config_str(c, KIQ_CFG_SASL_ENABLED_MECHANISMS); *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && *p == ' ') p++, len--;
        while (len && p[len - 1] == ' ') len--;
        int m = 0;
        while (m < MECH_COUNT && !(strlen(mech_names[m]) == len && strncmp(p, mech_names[m], len) == 0)) m++;
        if (m == MECH_COUNT) {
            kiq_error_set("sasl.enabled.mechanisms: %.*s is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                          "OAUTHBEARER)",
                          (int)len, p);
            goto fail;
        }
        s->order[s->nenabled++] = m;
        p = comma ? comma + 1 : p + strlen(p);
    }
    if (!s->nenabled) {
        kiq_error_set("sasl.enabled.mechanisms: none for a SASL listener");
        goto fail;
    }
    for (int i = 0; i < s->nenabled; i++)
        if (s->order[i] == MECH_PLAIN) {
            const char *jaas = kiq_config_str(c, KIQ_CFG_PLAIN_SASL_JAAS_CONFIG);
            if (!*jaas) {
                kiq_error_set("PLAIN needs its users: listener.name.<listener>.plain.sasl.jaas.config");
                goto fail;
            }
            if (kiq_sasl_jaas_users(jaas, add_user, s) != 0) goto fail;
        } else if (s->order[i] == MECH_OAUTHBEARER && !(s->oauth = kiq_oauth_new(c)))
            goto fail;
    s->reauth_ms = kiq_config_int(c, KIQ_CFG_CONNECTIONS_MAX_REAUTH_MS);
    return s;
fail:
    kiq_sasl_free(s);
    return NULL;
}

void kiq_sasl_free(kiq_sasl_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->nusers; i++) {
        free(s->users[i].name);
        if (s->users[i].password) OPENSSL_cleanse(s->users[i].password, strlen(s->users[i].password));
        free(s->users[i].password);
    }
    free(s->users);
    kiq_oauth_free(s->oauth);
    free(s->counts);
    free(s);
}

uint64_t kiq_sasl_count(const kiq_sasl_t *s, enum kiq_sasl_count which) { return atomic_load(&s->counts[which]); }

void kiq_sasl_set_scram_lookup(kiq_sasl_t *s, kiq_scram_lookup_fn lookup, void *ctx)
{
    s->lookup = lookup;
    s->lookup_ctx = ctx;
}

void kiq_sasl_set_token_lookup(kiq_sasl_t *s, kiq_sasl_token_lookup_fn lookup, void *ctx)
{
    s->token_lookup = lookup;
    s->token_ctx = ctx;
}

bool kiq_sasl_token_authenticated(const kiq_sasl_session_t *ss) { return ss->token_authenticated; }

int kiq_sasl_mechanisms(const kiq_sasl_t *s, const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < s->nenabled && n < max; i++) names[n++] = mech_names[s->order[i]];
    return n;
}

kiq_sasl_session_t *kiq_sasl_session_new(const kiq_sasl_t *s)
{
    kiq_sasl_session_t *ss = calloc(1, sizeof *ss);
    if (!ss) return NULL;
    atomic_init(&ss->refs, 1);
    ss->sasl = s;
    return ss;
}

kiq_sasl_session_t *kiq_sasl_session_ref(kiq_sasl_session_t *ss)
{
    atomic_fetch_add(&ss->refs, 1);
    return ss;
}

void kiq_sasl_session_unref(kiq_sasl_session_t *ss)
{
    if (!ss || atomic_fetch_sub(&ss->refs, 1) != 1) return;
    kiq_scram_server_clear(&ss->scram);
    free(ss);
}

bool kiq_sasl_authenticated(const kiq_sasl_session_t *ss) { return atomic_load(&ss->authenticated); }

bool kiq_sasl_allows(const kiq_sasl_session_t *ss, int16_t api_key, int64_t now_ms)
{
    if (api_key == API_SASL_HANDSHAKE || api_key == API_SASL_AUTHENTICATE) return true;
    if (!atomic_load(&ss->authenticated)) return api_key == API_API_VERSIONS;
    int64_t expires = atomic_load(&ss->expires_ms);
    return !expires || now_ms < expires;
}

void kiq_sasl_set_raw_tokens(kiq_sasl_session_t *ss) { atomic_store(&ss->raw_tokens, true); }

bool kiq_sasl_raw_token_next(const kiq_sasl_session_t *ss)
{
    return atomic_load(&ss->raw_tokens) && !atomic_load(&ss->authenticated);
}

const char *kiq_sasl_principal(const kiq_sasl_session_t *ss)
{
    return atomic_load(&ss->authenticated) ? ss->principal : NULL;
}

int kiq_sasl_handshake(kiq_sasl_session_t *ss, const char *mechanism, size_t len)
{
    /* KIP-368: a handshake on an authenticated connection starts a re-authentication */
    if (ss->state == DONE) {
        ss->reauthenticating = true;
        ss->mech_changed = !(strlen(mech_names[ss->mech]) == len && memcmp(mechanism, mech_names[ss->mech], len) == 0);
        if (ss->mech_changed) {
            snprintf(ss->oauth_error, sizeof ss->oauth_error, "%.*s", (int)(len > 64 ? 64 : len), mechanism);
            ss->state = AWAIT_TOKEN;
            return 0;
        }
        ss->state = AWAIT_HANDSHAKE;
    }
    if (ss->state != AWAIT_HANDSHAKE) {
        ss->state = FAILED;
        kiq_error_set("Unexpected Kafka request of type SASL_HANDSHAKE during SASL handshake.");
        return KIQ_ERR_ILLEGAL_SASL_STATE;
    }
    for (int i = 0; i < ss->sasl->nenabled; i++) {
        int m = ss->sasl->order[i];
        if (strlen(mech_names[m]) == len && memcmp(mechanism, mech_names[m], len) == 0) {
            ss->mech = (enum mech)m;
            ss->state = AWAIT_TOKEN;
            if (m == MECH_SCRAM_256 || m == MECH_SCRAM_512) {
                kiq_scram_server_clear(&ss->scram);
                kiq_scram_server_init(&ss->scram, m == MECH_SCRAM_512 ? KIQ_SCRAM_SHA_512 : KIQ_SCRAM_SHA_256);
            }
            return 0;
        }
    }
    ss->state = FAILED;
    kiq_error_set("Unsupported SASL mechanism %.*s", (int)(len > 64 ? 64 : len), mechanism);
    return KIQ_ERR_UNSUPPORTED_SASL_MECHANISM;
}

/* A credential's expiry (wall clock ms, 0: none) and connections.max.reauth.ms
 * bound the session as Kafka computes it; 0 when neither does. */
static int64_t session_lifetime(const kiq_sasl_session_t *ss, int64_t credential_expires_ms)
{
    int64_t life = ss->sasl->reauth_ms;
    if (credential_expires_ms) {
        int64_t left = credential_expires_ms - kiq_clock_wall_ms();
        if (!life || left < life) life = left;
    }
    return life > 0 ? life : 0;
}

/* Type:name as Kafka's message prints a principal, Type.name */
static const char *dotted(const char *principal, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", principal);
    char *colon = strchr(buf, ':');
    if (colon) *colon = '.';
    return buf;
}

/* principal is Type:name. 0, or 1 when a re-authentication names another
 * principal (refused as Kafka refuses it) */
static int authenticated(kiq_sasl_session_t *ss, const char *principal, int64_t credential_expires_ms)
{
    if (ss->reauthenticating && strcmp(principal, ss->principal) != 0) {
        char was[sizeof ss->principal], now[sizeof ss->principal];
        return kiq_error_set("Cannot change principals during re-authentication from %s: %s",
                             dotted(ss->principal, was, sizeof was), dotted(principal, now, sizeof now)), 1;
    }
    if (!ss->reauthenticating) strcpy(ss->principal, principal); /* the processor may be reading it */
    ss->lifetime_ms = session_lifetime(ss, credential_expires_ms);
    /* the lifetime is reported to a client that is asked nothing of it
     * before a first (v0) answer, and any session it has ends on time */
    atomic_store(&ss->expires_ms, ss->lifetime_ms ? kiq_clock_mono_ms() + ss->lifetime_ms : 0);
    ss->state = DONE;
    atomic_store(&ss->authenticated, true);
    return 0;
}

/* PLAIN's one message, authzid NUL user NUL password (RFC 4616). */
static int plain(kiq_sasl_session_t *ss, const uint8_t *in, size_t len)
{
    const char *m = (const char *)in, *end = m + len;
    const char *nul1 = memchr(m, 0, len), *nul2 = nul1 ? memchr(nul1 + 1, 0, (size_t)(end - nul1 - 1)) : NULL;
    if (!nul1 || !nul2 || memchr(nul2 + 1, 0, (size_t)(end - nul2 - 1))) {
        int tokens = !nul1 ? 1 : !nul2 ? 2 : 4;
        kiq_error_set("Invalid SASL/PLAIN response: expected 3 tokens, got %d", tokens);
        return -1;
    }
    size_t al = (size_t)(nul1 - m), ul = (size_t)(nul2 - nul1 - 1), pl = (size_t)(end - nul2 - 1);
    if (!ul) return kiq_error_set("Authentication failed: username not specified"), 1;
    if (!pl) return kiq_error_set("Authentication failed: password not specified"), 1;
    if (al && (al != ul || memcmp(m, nul1 + 1, ul) != 0))
        return kiq_error_set("Authentication failed: Client requested an authorization id that is different from "
                             "username"), 1;
    bool ok = false;
    const char *user = nul1 + 1;
    for (size_t i = 0; i < ss->sasl->nusers; i++) {
        const plain_user_t *u = &ss->sasl->users[i];
        if (strlen(u->name) == ul && memcmp(u->name, user, ul) == 0 && strlen(u->password) == pl &&
            CRYPTO_memcmp(u->password, nul2 + 1, pl) == 0)
            ok = true;
    }
    if (!ok) return kiq_error_set("Authentication failed: Invalid username or password"), 1;
    char principal[300];
    snprintf(principal, sizeof principal, "User:%.*s", (int)ul, user);
    return authenticated(ss, principal, 0);
}

/* OAUTHBEARER's first message: 0 once valid; a refused token is answered
 * with RFC 7628's error JSON (2, the exchange goes on to the client's
 * \x01); -1 malformed, 1 refused at once (another authorization id). */
static int oauthbearer(kiq_sasl_session_t *ss, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
    const char *token, *authzid;
    size_t token_len, authzid_len;
    if (kiq_oauth_client_message(in, len, &token, &token_len, &authzid, &authzid_len) != 0) return -1;
    kiq_oauth_token_t t;
    int rc = kiq_oauth_validate(ss->sasl->oauth, token, token_len, kiq_clock_wall_ms(), &t);
    if (rc != 0) {
        KIQ_WARN_LIMITED("OAUTHBEARER token refused: %s", kiq_error_get());
        snprintf(ss->oauth_error, sizeof ss->oauth_error, "{\"status\":\"%s\"}",
                 rc == KIQ_OAUTH_SCOPE ? "insufficient_scope" : "invalid_token");
        *out_len = strlen(ss->oauth_error);
        if (!(*out = (uint8_t *)strdup(ss->oauth_error))) return kiq_error_set("out of memory");
        ss->state = AWAIT_OAUTH_ACK;
        return 2;
    }
    if (authzid_len && (authzid_len != strlen(t.principal) || memcmp(authzid, t.principal, authzid_len) != 0))
        return kiq_error_set("Authentication failed: Client requested an authorization id (%.*s) that is different "
                             "from the token's principal name (%s)", (int)(authzid_len > 64 ? 64 : authzid_len),
                             authzid, t.principal), 1;
    if (!(*out = malloc(1))) return kiq_error_set("out of memory");
    char principal[300];
    snprintf(principal, sizeof principal, "User:%s", t.principal);
    return authenticated(ss, principal, t.expires_ms);
}

/* SCRAM's lookup for a session: a user's credential, or with tokenauth a
 * delegation token's (its owner and expiry kept for the principal and the
 * session's lifetime; an expired token authenticates nothing) */
static int session_lookup(void *ctx, enum kiq_scram_mech m, const char *user, kiq_scram_credential_t *out)
{
    kiq_sasl_session_t *ss = ctx;
    const kiq_sasl_t *s = ss->sasl;
    if (!ss->scram.tokenauth) return s->lookup ? s->lookup(s->lookup_ctx, m, user, out) : -1;
    if (!s->token_lookup ||
        s->token_lookup(s->token_ctx, m, user, out, ss->token_owner, sizeof ss->token_owner, &ss->token_expiry_ms) != 0)
        return -1;
    return ss->token_expiry_ms < kiq_clock_wall_ms() ? -1 : 0;
}

int kiq_sasl_authenticate(kiq_sasl_session_t *ss, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    const char *during = ss->reauthenticating ? "re-authentication" : "authentication";
    if (ss->state == AWAIT_OAUTH_ACK) {
        /* the client's \x01 (or anything else) after the error JSON: Kafka fails with the JSON as its message */
        kiq_error_set("%s", ss->oauth_error);
        goto failed;
    }
    if (ss->state != AWAIT_TOKEN) {
        kiq_error_set(ss->state == DONE ? "SaslAuthenticate request received after successful authentication"
                                        : "Unexpected Kafka request of type SASL_AUTHENTICATE during SASL handshake.");
        ss->state = FAILED;
        return KIQ_ERR_ILLEGAL_SASL_STATE;
    }
    if (ss->mech_changed) {
        kiq_error_set("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism "
                      "'%s'", ss->oauth_error, mech_names[ss->mech]);
        goto failed;
    }
    int rc;
    if (ss->mech == MECH_PLAIN) {
        rc = plain(ss, in, len);
        /* a malformed message gets Kafka's generic answer, a refused one its own */
        if (rc < 0) kiq_error_set("Authentication failed during %s due to invalid credentials with SASL "
                                  "mechanism PLAIN", during);
        if (rc == 0 && !(*out = malloc(1))) rc = kiq_error_set("out of memory");
    } else if (ss->mech == MECH_OAUTHBEARER) {
        rc = oauthbearer(ss, in, len, out, out_len);
        if (rc == 2) return 0;
        if (rc < 0) {
            KIQ_DEBUG("OAUTHBEARER message refused: %s", kiq_error_get());
            kiq_error_set("Authentication failed during %s due to invalid credentials with SASL mechanism "
                          "OAUTHBEARER", during);
        }
    } else {
        char *answer;
        rc = kiq_scram_step(&ss->scram, in, len, session_lookup, ss, &answer, out_len);
        *out = (uint8_t *)answer;
        if (rc != 0) KIQ_DEBUG("SCRAM refused: %s", rc < 0 ? kiq_error_get() : "no such credential, or a wrong proof");
        if (rc != 0)
            kiq_error_set("Authentication failed during %s due to invalid credentials with SASL mechanism %s",
                          during, mech_names[ss->mech]);
        else if (ss->scram.state == KIQ_SCRAM_DONE && ss->scram.tokenauth) {
            rc = authenticated(ss, ss->token_owner, ss->token_expiry_ms);
            ss->token_authenticated = rc == 0;
        } else if (ss->scram.state == KIQ_SCRAM_DONE) {
            char principal[300];
            snprintf(principal, sizeof principal, "User:%s", ss->scram.user);
            rc = authenticated(ss, principal, 0);
        }
    }
    if (rc == 0) {
        if (ss->state == DONE)
            atomic_fetch_add(&ss->sasl->counts[ss->reauthenticating ? KIQ_SASL_REAUTH_OK : KIQ_SASL_AUTH_OK], 1);
        return 0;
    }
failed:
    free(*out);
    *out = NULL;
    *out_len = 0;
    ss->state = FAILED;
    atomic_fetch_add(&ss->sasl->counts[ss->reauthenticating ? KIQ_SASL_REAUTH_FAILED : KIQ_SASL_AUTH_FAILED], 1);
    return KIQ_ERR_SASL_AUTHENTICATION_FAILED;
}

int64_t kiq_sasl_session_lifetime_ms(const kiq_sasl_session_t *ss) { return ss->lifetime_ms; }
