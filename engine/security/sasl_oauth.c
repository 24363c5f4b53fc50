/* OAUTHBEARER token parsing and validation; see sasl_oauth.h. */
#include "security/sasl_oauth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjose/cjose.h>
#include <jansson.h>

#include "core/error.h"
#include "security/sasl.h"

typedef struct jwks_key {
    cjose_jwk_t *jwk;
    char *kid; /* NULL when the key has none: tried for any token */
} jwks_key_t;

/* Read-only once built (see sasl_oauth.h). */
struct kiq_oauth {
    jwks_key_t *keys; /* none: the unsecured validator */
    size_t nkeys;
    char principal_claim[64], scope_claim[64];
    char *required_scopes; /* comma-separated, the unsecured validator's option; NULL when none */
    char *audiences;       /* comma-separated; NULL when not checked */
    char *issuer;          /* NULL when not checked */
    int64_t skew_ms;
};

static int set_claim_name(char *dst, size_t cap, const char *option, const char *value)
{
    if (!*value || strlen(value) >= cap) return kiq_error_set("%s: a claim name of 1 to %zu characters", option, cap - 1);
    strcpy(dst, value);
    return 0;
}

static int dup_option(char **dst, const char *value)
{
    free(*dst);
    *dst = *value ? strdup(value) : NULL;
    return *value && !*dst ? kiq_error_set("out of memory") : 0;
}

/* Kafka's OAuthBearerUnsecuredValidatorCallbackHandler options, from the
 * OAUTHBEARER JAAS text; the other options (the login module's) ignored. */
static int jaas_option(void *ctx, const char *key, const char *value)
{
    kiq_oauth_t *o = ctx;
    if (!strcmp(key, "unsecuredValidatorPrincipalClaimName"))
        return set_claim_name(o->principal_claim, sizeof o->principal_claim, key, value);
    if (!strcmp(key, "unsecuredValidatorScopeClaimName"))
        return set_claim_name(o->scope_claim, sizeof o->scope_claim, key, value);
    if (!strcmp(key, "unsecuredValidatorRequiredScope")) return dup_option(&o->required_scopes, value);
    if (!strcmp(key, "unsecuredValidatorAllowableClockSkewMs")) {
        char *end;
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || v < 0) return kiq_error_set("%s: a count of milliseconds, not '%s'", key, value);
        o->skew_ms = v;
    }
    return 0;
}

static int load_jwks(kiq_oauth_t *o, const char *url)
{
    if (strncmp(url, "file:", 5) != 0)
        return kiq_error_set("sasl.oauthbearer.jwks.endpoint.url: only a file: URL is read (%s)", url);
    const char *path = url + 5;
    if (!strncmp(path, "//", 2)) path += 2; /* file:///abs/path */
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc) return kiq_error_set("sasl.oauthbearer.jwks.endpoint.url: %s: %s", path, jerr.text);
    json_t *keys = json_object_get(doc, "keys");
    size_t n = json_is_array(keys) ? json_array_size(keys) : 0;
    if (n && !(o->keys = calloc(n, sizeof *o->keys))) {
        json_decref(doc);
        return kiq_error_set("out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        json_t *k = json_array_get(keys, i);
        const char *use = json_string_value(json_object_get(k, "use"));
        if (use && strcmp(use, "sig") != 0) continue; /* an encryption key signs nothing */
        cjose_err err;
        cjose_jwk_t *jwk = cjose_jwk_import_json((cjose_header_t *)k, &err);
        if (!jwk) continue; /* a key type cjose does not know cannot verify anything either */
        const char *kid = json_string_value(json_object_get(k, "kid"));
        o->keys[o->nkeys] = (jwks_key_t){jwk, kid ? strdup(kid) : NULL};
        o->nkeys++;
    }
    json_decref(doc);
    if (!o->nkeys) return kiq_error_set("sasl.oauthbearer.jwks.endpoint.url: %s has no signing key", path);
    return 0;
}

kiq_oauth_t *kiq_oauth_new(const kiq_config_t *c)
{
    kiq_oauth_t *o = calloc(1, sizeof *o);
    if (!o) return kiq_error_set("out of memory"), NULL;
    const char *jwks = kiq_config_str(c, KIQ_CFG_SASL_OAUTHBEARER_JWKS_ENDPOINT_URL);
    if (*jwks) {
        if (set_claim_name(o->principal_claim, sizeof o->principal_claim, "sasl.oauthbearer.sub.claim.name",
                           kiq_config_str(c, KIQ_CFG_SASL_OAUTHBEARER_SUB_CLAIM_NAME)) != 0 ||
            set_claim_name(o->scope_claim, sizeof o->scope_claim, "sasl.oauthbearer.scope.claim.name",
                           kiq_config_str(c, KIQ_CFG_SASL_OAUTHBEARER_SCOPE_CLAIM_NAME)) != 0 ||
            dup_option(&o->audiences, kiq_config_str(c, KIQ_CFG_SASL_OAUTHBEARER_EXPECTED_AUDIENCE)) != 0 ||
            dup_option(&o->issuer, kiq_config_str(c, KIQ_CFG_SASL_OAUTHBEARER_EXPECTED_ISSUER)) != 0 ||
            load_jwks(o, jwks) != 0)
            goto fail;
        o->skew_ms = (int64_t)kiq_config_int(c, KIQ_CFG_SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS) * 1000;
        return o;
    }
    strcpy(o->principal_claim, "sub");
    strcpy(o->scope_claim, "scope");
    const char *jaas = kiq_config_str(c, KIQ_CFG_OAUTHBEARER_SASL_JAAS_CONFIG);
    if (*jaas && kiq_sasl_jaas_options(jaas, jaas_option, o) != 0) goto fail;
    return o;
fail:
    kiq_oauth_free(o);
    return NULL;
}

void kiq_oauth_free(kiq_oauth_t *o)
{
    if (!o) return;
    for (size_t i = 0; i < o->nkeys; i++) {
        cjose_jwk_release(o->keys[i].jwk);
        free(o->keys[i].kid);
    }
    free(o->keys);
    free(o->required_scopes);
    free(o->audiences);
    free(o->issuer);
    free(o);
}

/* RFC 6750's b64token */
static bool token_char(int c) { return isalnum(c) || strchr("-._~+/=", c); }

int kiq_oauth_client_message(const uint8_t *in, size_t len, const char **token, size_t *token_len,
                             const char **authzid, size_t *authzid_len)
{
    const char *p = (const char *)in, *end = p + len;
    *token = NULL;
    *token_len = 0;
    *authzid = "";
    *authzid_len = 0;
    if (len < 3 || (p[0] != 'n' && p[0] != 'y') || p[1] != ',')
        return kiq_error_set("OAUTHBEARER: the message must start with a gs2 header (n,)");
    p += 2;
    if (p < end && *p == 'a') {
        if (end - p < 2 || p[1] != '=') return kiq_error_set("OAUTHBEARER: a malformed authorization id");
        p += 2;
        const char *comma = memchr(p, ',', (size_t)(end - p));
        if (!comma || comma == p) return kiq_error_set("OAUTHBEARER: a malformed authorization id");
        *authzid = p;
        *authzid_len = (size_t)(comma - p);
        p = comma;
    }
    if (p >= end || *p++ != ',') return kiq_error_set("OAUTHBEARER: the gs2 header must end with ','");
    if (p >= end || *p++ != 0x01) return kiq_error_set("OAUTHBEARER: expected \\x01 after the gs2 header");
    for (;;) {
        if (p >= end) return kiq_error_set("OAUTHBEARER: the message must end with \\x01\\x01");
        if (*p == 0x01) {
            if (p + 1 != end) return kiq_error_set("OAUTHBEARER: bytes after the final \\x01");
            break;
        }
        const char *key = p;
        while (p < end && isalpha((unsigned char)*p)) p++;
        size_t kl = (size_t)(p - key);
        if (!kl || p >= end || *p != '=') return kiq_error_set("OAUTHBEARER: expected key=value");
        const char *value = ++p;
        while (p < end && *p != 0x01) {
            unsigned char ch = (unsigned char)*p;
            if (!((ch >= 0x21 && ch <= 0x7e) || ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'))
                return kiq_error_set("OAUTHBEARER: a value with a byte 0x%02x", ch);
            p++;
        }
        if (p >= end) return kiq_error_set("OAUTHBEARER: a value not ended by \\x01");
        size_t vl = (size_t)(p - value);
        p++;
        if (!vl) return kiq_error_set("OAUTHBEARER: an empty value of %.*s", (int)kl, key);
        if (kl != 4 || strncmp(key, "auth", 4) != 0) continue; /* an extension: none is validated */
        if (*token) return kiq_error_set("OAUTHBEARER: auth given twice");
        if (vl < 7 || strncasecmp(value, "bearer", 6) != 0 || value[6] != ' ')
            return kiq_error_set("OAUTHBEARER: auth must be 'Bearer <token>'");
        const char *t = value + 6, *tend = value + vl;
        while (t < tend && *t == ' ') t++;
        if (t == tend) return kiq_error_set("OAUTHBEARER: an empty bearer token");
        for (const char *q = t; q < tend; q++)
            if (!token_char((unsigned char)*q)) return kiq_error_set("OAUTHBEARER: a bearer token with a byte 0x%02x", (unsigned char)*q);
        *token = t;
        *token_len = (size_t)(tend - t);
    }
    if (!*token) return kiq_error_set("OAUTHBEARER: no auth in the message");
    return 0;
}

/* base64url without padding (RFC 7515); -1 on a character outside it */
static int b64url_decode(const char *s, size_t n, uint8_t *out, size_t *out_len)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i], v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '-') v = 62;
        else if (c == '_') v = 63;
        else return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    if (bits >= 6) return -1; /* one character alone carries no byte */
    *out_len = o;
    return 0;
}

static json_t *b64url_json(const char *s, size_t n)
{
    uint8_t *buf = malloc(n ? n : 1);
    size_t len;
    json_t *j = NULL;
    if (buf && b64url_decode(s, n, buf, &len) == 0) j = json_loadb((const char *)buf, len, 0, NULL);
    free(buf);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

/* a NumericDate claim (seconds, possibly fractional) in ms: 0, 1 when absent, -1 when not a number */
static int time_claim(json_t *claims, const char *name, int64_t *ms)
{
    json_t *v = json_object_get(claims, name);
    if (!v) return 1;
    if (!json_is_number(v)) return -1;
    double s = json_number_value(v);
    if (s < 0 || s > 9.2e15) return -1;
    *ms = (int64_t)(s * 1000);
    return 0;
}

static bool in_list(const char *list, const char *item, size_t len)
{
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        const char *q = p;
        while (l && *q == ' ') q++, l--;
        while (l && q[l - 1] == ' ') l--;
        if (l == len && !strncmp(q, item, len)) return true;
        p = comma ? comma + 1 : p + strlen(p);
    }
    return false;
}

static bool has_scope(json_t *scope, const char *want, size_t len)
{
    if (json_is_string(scope)) {
        const char *s = json_string_value(scope);
        for (const char *p = s; *p;) {
            while (*p == ' ') p++;
            const char *e = p;
            while (*e && *e != ' ') e++;
            if ((size_t)(e - p) == len && !strncmp(p, want, len)) return true;
            p = e;
        }
        return false;
    }
    size_t i;
    json_t *v;
    json_array_foreach(scope, i, v) if (json_is_string(v) && strlen(json_string_value(v)) == len &&
                                        !strncmp(json_string_value(v), want, len)) return true;
    return false;
}

static int check_claims(const kiq_oauth_t *o, json_t *claims, int64_t now, kiq_oauth_token_t *out)
{
    const char *sub = json_string_value(json_object_get(claims, o->principal_claim));
    if (!sub || !*sub) return kiq_error_set("the principal claim %s is missing or not a string", o->principal_claim), KIQ_OAUTH_INVALID;
    if (strlen(sub) >= sizeof out->principal) return kiq_error_set("the principal claim is too long"), KIQ_OAUTH_INVALID;
    int64_t exp, iat, nbf;
    if (time_claim(claims, "exp", &exp) != 0) return kiq_error_set("the exp claim is missing or not a number"), KIQ_OAUTH_INVALID;
    if (now > exp + o->skew_ms) return kiq_error_set("the token expired at %lld ms", (long long)exp), KIQ_OAUTH_INVALID;
    int rc = time_claim(claims, "iat", &iat);
    if (rc < 0) return kiq_error_set("the iat claim is not a number"), KIQ_OAUTH_INVALID;
    if (rc == 0 && iat > now + o->skew_ms) return kiq_error_set("the token is issued in the future"), KIQ_OAUTH_INVALID;
    if (rc == 0 && exp <= iat) return kiq_error_set("the token expires before it is issued"), KIQ_OAUTH_INVALID;
    rc = time_claim(claims, "nbf", &nbf);
    if (rc < 0 || (rc == 0 && nbf > now + o->skew_ms)) return kiq_error_set("the token is not valid yet (nbf)"), KIQ_OAUTH_INVALID;
    if (o->issuer) {
        const char *iss = json_string_value(json_object_get(claims, "iss"));
        if (!iss || strcmp(iss, o->issuer) != 0) return kiq_error_set("the issuer is not %s", o->issuer), KIQ_OAUTH_INVALID;
    }
    if (o->audiences) {
        json_t *aud = json_object_get(claims, "aud"), *v;
        bool ok = json_is_string(aud) && in_list(o->audiences, json_string_value(aud), strlen(json_string_value(aud)));
        size_t i;
        if (json_is_array(aud))
            json_array_foreach(aud, i, v) ok = ok || (json_is_string(v) && in_list(o->audiences, json_string_value(v),
                                                                                  strlen(json_string_value(v))));
        if (!ok) return kiq_error_set("no expected audience (%s) in the token", o->audiences), KIQ_OAUTH_INVALID;
    }
    if (o->required_scopes) {
        json_t *scope = json_object_get(claims, o->scope_claim);
        for (const char *p = o->required_scopes; *p;) {
            const char *comma = strchr(p, ',');
            size_t l = comma ? (size_t)(comma - p) : strlen(p);
            while (l && *p == ' ') p++, l--;
            while (l && p[l - 1] == ' ') l--;
            if (l && !(scope && has_scope(scope, p, l)))
                return kiq_error_set("the required scope %.*s is missing", (int)l, p), KIQ_OAUTH_SCOPE;
            p = comma ? comma + 1 : p + strlen(p);
        }
    }
    strcpy(out->principal, sub);
    out->expires_ms = exp;
    return 0;
}

/* Kafka's default: header.payload. with alg none and nothing signed */
static int unsecured(const kiq_oauth_t *o, const char *tok, size_t len, int64_t now, kiq_oauth_token_t *out)
{
    const char *dot1 = memchr(tok, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', (size_t)(tok + len - dot1 - 1)) : NULL;
    if (!dot2) return kiq_error_set("not a compact JWS (three parts)"), KIQ_OAUTH_INVALID;
    if (dot2 + 1 != tok + len) return kiq_error_set("an unsecured token must have an empty signature"), KIQ_OAUTH_INVALID;
    json_t *header = b64url_json(tok, (size_t)(dot1 - tok));
    const char *alg = json_string_value(json_object_get(header, "alg"));
    bool none = alg && !strcmp(alg, "none");
    json_decref(header);
    if (!none) return kiq_error_set("an unsecured token's header must say alg none"), KIQ_OAUTH_INVALID;
    json_t *claims = b64url_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    if (!claims) return kiq_error_set("the claims are not a base64url JSON object"), KIQ_OAUTH_INVALID;
    int rc = check_claims(o, claims, now, out);
    json_decref(claims);
    return rc;
}

static const char *const signing_algs[] = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"};

static int signed_token(const kiq_oauth_t *o, const char *tok, size_t len, int64_t now, kiq_oauth_token_t *out)
{
    cjose_err err;
    cjose_jws_t *jws = cjose_jws_import(tok, len, &err);
    if (!jws) return kiq_error_set("not a signed JWT: %s", err.message), KIQ_OAUTH_INVALID;
    cjose_header_t *h = cjose_jws_get_protected(jws);
    const char *alg = cjose_header_get(h, CJOSE_HDR_ALG, &err);
    const char *kid = cjose_header_get(h, CJOSE_HDR_KID, &err);
    bool alg_ok = false;
    for (size_t i = 0; alg && i < sizeof signing_algs / sizeof *signing_algs; i++) alg_ok = alg_ok || !strcmp(alg, signing_algs[i]);
    int rc = KIQ_OAUTH_INVALID;
    bool verified = false;
    for (size_t i = 0; alg_ok && i < o->nkeys && !verified; i++)
        if (!kid || !o->keys[i].kid || !strcmp(kid, o->keys[i].kid)) verified = cjose_jws_verify(jws, o->keys[i].jwk, &err);
    uint8_t *body;
    size_t body_len;
    if (!alg_ok) kiq_error_set("the token's algorithm %s is not an asymmetric signature", alg ? alg : "(none)");
    else if (!verified) kiq_error_set("no key of the JWKS verifies the token's signature (kid %s)", kid ? kid : "none");
    else if (!cjose_jws_get_plaintext(jws, &body, &body_len, &err)) kiq_error_set("no claims: %s", err.message);
    else {
        json_t *claims = json_loadb((const char *)body, body_len, 0, NULL);
        if (json_is_object(claims)) rc = check_claims(o, claims, now, out);
        else kiq_error_set("the claims are not a JSON object");
        json_decref(claims);
    }
    cjose_jws_release(jws);
    return rc;
}

int kiq_oauth_validate(const kiq_oauth_t *o, const char *token, size_t len, int64_t now_ms, kiq_oauth_token_t *out)
{
    return o->nkeys ? signed_token(o, token, len, now_ms, out) : unsecured(o, token, len, now_ms, out);
}
