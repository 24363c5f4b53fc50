/* Delegation tokens kept by the controller (KIP-48, KIP-373 in KRaft):
 * Create, Renew and Expire decided by the rules of Kafka's
 * DelegationTokenControlManager and written as DelegationTokenRecords and
 * RemoveDelegationTokenRecords; Describe and the lookups of SCRAM
 * authentication by token answered from the image. Principals travel as
 * Type:name. */
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/uuid.h"

static const char *secret_of(const kiq_controller_t *c)
{
    return kiq_config_str(c->cfg, KIQ_CFG_DELEGATION_TOKEN_SECRET_KEY);
}

static kiq_delegation_token_record_t *token_record(batch_t *b, const kiq_dtoken_t *t)
{
    kiq_delegation_token_record_t *r = &kiq_ctl_add_record(b, KIQ_MR_DELEGATION_TOKEN)->m.delegation_token;
    r->owner = kiq_ctl_astr(b->a, t->owner);
    r->requester = kiq_ctl_astr(b->a, t->requester);
    r->renewers = kiq_arena_calloc(b->a, (size_t)t->nrenewers + 1, sizeof *r->renewers);
    for (int i = 0; i < t->nrenewers; i++) r->renewers[i] = kiq_ctl_astr(b->a, t->renewers[i]);
    r->renewers_n = t->nrenewers;
    r->issue_timestamp = t->issue_ms;
    r->max_timestamp = t->max_ms;
    r->expiration_timestamp = t->expiry_ms;
    r->token_id = kiq_ctl_astr(b->a, t->id);
    return r;
}

int kiq_controller_create_token(kiq_controller_t *c, const char *principal,
                                const kiq_create_delegation_token_request_t *req, kiq_arena_t *a,
                                kiq_create_delegation_token_response_t *out)
{
    char owner[300];
    if (req->owner_principal_name.p && req->owner_principal_name.len > 0)
        kiq_dtoken_principal_join(owner, sizeof owner, req->owner_principal_type, req->owner_principal_name);
    else
        snprintf(owner, sizeof owner, "%s", principal);
    kiq_dtoken_principal_split(a, owner, &out->principal_type, &out->principal_name);
    kiq_dtoken_principal_split(a, principal, &out->token_requester_principal_type, &out->token_requester_principal_name);
    const char *secret = secret_of(c);
    if (!*secret) return out->error_code = KIQ_ERR_DELEGATION_TOKEN_AUTH_DISABLED;
    int64_t now = kiq_clock_wall_ms();
    int64_t max_life = kiq_config_int(c->cfg, KIQ_CFG_DELEGATION_TOKEN_MAX_LIFETIME_MS);
    if (req->max_lifetime_ms > 0 && req->max_lifetime_ms < max_life) max_life = req->max_lifetime_ms;
    int64_t max_ts = now + max_life;
    int64_t expiry = now + kiq_config_int(c->cfg, KIQ_CFG_DELEGATION_TOKEN_EXPIRY_TIME_MS);
    if (expiry > max_ts) expiry = max_ts;
    kiq_uuid_t u;
    char id[32];
    if (kiq_uuid_random(&u) != 0) return out->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    kiq_uuid_to_base64(&u, id);
    int nr = req->renewers_n > 0 ? req->renewers_n : 0;
    char **renewers = kiq_arena_calloc(a, (size_t)nr + 1, sizeof *renewers);
    for (int i = 0; i < nr; i++) {
        char p[300];
        kiq_dtoken_principal_join(p, sizeof p, req->renewers[i].principal_type, req->renewers[i].principal_name);
        renewers[i] = (char *)kiq_ctl_astr(a, p).p;
    }
    kiq_dtoken_t t = {.id = id, .owner = owner, .requester = (char *)principal, .renewers = renewers,
                      .nrenewers = nr, .issue_ms = now, .max_ms = max_ts, .expiry_ms = expiry};
    batch_t b = {.a = a};
    token_record(&b, &t);
    pthread_mutex_lock(&c->mu);
    int rc = kiq_ctl_commit(c, &b) != 0 ? c->commit_error : 0;
    pthread_mutex_unlock(&c->mu);
    if (rc) return out->error_code = (int16_t)rc;
    uint8_t *hmac = kiq_arena_alloc(a, KIQ_DTOKEN_HMAC_LEN);
    kiq_dtoken_hmac(secret, id, hmac);
    out->hmac = (kiq_bytes_t){hmac, KIQ_DTOKEN_HMAC_LEN};
    out->token_id = kiq_ctl_astr(a, id);
    out->issue_timestamp_ms = now;
    out->expiry_timestamp_ms = expiry;
    out->max_timestamp_ms = max_ts;
    return 0;
}

/* Renew (expire false) or expire: the token named by hmac for principal;
 * 0 with the new expiry, or a Kafka error. period < 0: the default
 * renewal, or, expiring, at once. */
static int16_t change_expiry(kiq_controller_t *c, const char *principal, kiq_bytes_t hmac, int64_t period,
                             bool expire, int64_t *expiry_out)
{
    const char *secret = secret_of(c);
    if (!*secret) return KIQ_ERR_DELEGATION_TOKEN_AUTH_DISABLED;
    kiq_arena_t a;
    kiq_arena_init(&a);
    int64_t now = kiq_clock_wall_ms();
    int16_t err = 0;
    pthread_mutex_lock(&c->mu);
    const kiq_dtoken_t *t = kiq_dtoken_store_by_hmac(kiq_metadata_image_tokens(c->image), secret, hmac.p,
                                                     hmac.p ? (size_t)hmac.len : 0);
    if (!t) err = KIQ_ERR_DELEGATION_TOKEN_NOT_FOUND;
    else if (t->max_ms < now || t->expiry_ms < now) err = KIQ_ERR_DELEGATION_TOKEN_EXPIRED;
    else if (!kiq_dtoken_may_renew(t, principal)) err = KIQ_ERR_DELEGATION_TOKEN_OWNER_MISMATCH;
    else {
        batch_t b = {.a = &a};
        if (expire && period < 0) {
            kiq_ctl_add_record(&b, KIQ_MR_REMOVE_DELEGATION_TOKEN)->m.remove_delegation_token.token_id =
                kiq_ctl_astr(&a, t->id);
            *expiry_out = now;
        } else {
            if (period < 0) period = kiq_config_int(c->cfg, KIQ_CFG_DELEGATION_TOKEN_EXPIRY_TIME_MS);
            kiq_dtoken_t next = *t;
            next.expiry_ms = now + period < t->max_ms ? now + period : t->max_ms;
            token_record(&b, &next);
            *expiry_out = next.expiry_ms;
        }
        if (kiq_ctl_commit(c, &b) != 0) err = c->commit_error;
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return err;
}

int kiq_controller_renew_token(kiq_controller_t *c, const char *principal,
                               const kiq_renew_delegation_token_request_t *req,
                               kiq_renew_delegation_token_response_t *out)
{
    return out->error_code = change_expiry(c, principal, req->hmac, req->renew_period_ms, false,
                                           &out->expiry_timestamp_ms);
}

int kiq_controller_expire_token(kiq_controller_t *c, const char *principal,
                                const kiq_expire_delegation_token_request_t *req,
                                kiq_expire_delegation_token_response_t *out)
{
    return out->error_code = change_expiry(c, principal, req->hmac, req->expiry_time_period_ms, true,
                                           &out->expiry_timestamp_ms);
}

void kiq_controller_describe_tokens(kiq_controller_t *c, const kiq_describe_delegation_token_request_t *req,
                                    kiq_arena_t *a, kiq_describe_delegation_token_response_t *out)
{
    const char *secret = secret_of(c);
    if (!*secret) {
        out->error_code = KIQ_ERR_DELEGATION_TOKEN_AUTH_DISABLED;
        return;
    }
    pthread_mutex_lock(&c->mu);
    const kiq_dtoken_store_t *s = kiq_metadata_image_tokens(c->image);
    out->tokens = kiq_arena_calloc(a, s->n + 1, sizeof *out->tokens);
    for (size_t i = 0; i < s->n; i++) {
        const kiq_dtoken_t *t = &s->tokens[i];
        /* owners null: every token; without an authorizer every principal may see each */
        bool wanted = req->owners_n < 0;
        for (int j = 0; !wanted && j < req->owners_n; j++) {
            char p[300];
            kiq_dtoken_principal_join(p, sizeof p, req->owners[j].principal_type, req->owners[j].principal_name);
            wanted = !strcmp(p, t->owner);
        }
        if (!wanted) continue;
        kiq_describe_delegation_token_response_tokens_t *d = &out->tokens[out->tokens_n++];
        kiq_describe_delegation_token_response_tokens_init(d);
        kiq_dtoken_principal_split(a, t->owner, &d->principal_type, &d->principal_name);
        kiq_dtoken_principal_split(a, t->requester, &d->token_requester_principal_type, &d->token_requester_principal_name);
        d->issue_timestamp = t->issue_ms;
        d->expiry_timestamp = t->expiry_ms;
        d->max_timestamp = t->max_ms;
        d->token_id = kiq_ctl_astr(a, t->id);
        uint8_t *hmac = kiq_arena_alloc(a, KIQ_DTOKEN_HMAC_LEN);
        kiq_dtoken_hmac(secret, t->id, hmac);
        d->hmac = (kiq_bytes_t){hmac, KIQ_DTOKEN_HMAC_LEN};
        d->renewers = kiq_arena_calloc(a, (size_t)t->nrenewers + 1, sizeof *d->renewers);
        for (int j = 0; j < t->nrenewers; j++) {
            kiq_describe_delegation_token_response_tokens_renewers_t *r = &d->renewers[d->renewers_n++];
            kiq_describe_delegation_token_response_tokens_renewers_init(r);
            kiq_dtoken_principal_split(a, t->renewers[j], &r->principal_type, &r->principal_name);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void kiq_ctl_remove_expired_tokens(kiq_controller_t *c)
{
    const kiq_dtoken_store_t *s = kiq_metadata_image_tokens(c->image);
    if (!s->n) return;
    int64_t now = kiq_clock_wall_ms();
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    for (size_t i = 0; i < s->n; i++)
        if (s->tokens[i].expiry_ms < now || s->tokens[i].max_ms < now)
            kiq_ctl_add_record(&b, KIQ_MR_REMOVE_DELEGATION_TOKEN)->m.remove_delegation_token.token_id =
                kiq_ctl_astr(&a, s->tokens[i].id);
    if (b.n) kiq_ctl_commit(c, &b);
    kiq_arena_reset(&a);
}

int kiq_controller_token_credential(kiq_controller_t *c, enum kiq_scram_mech m, const char *token_id,
                                    kiq_scram_credential_t *out, char *owner, size_t cap, int64_t *expiry_ms)
{
    const char *secret = secret_of(c);
    if (!*secret) return -1;
    pthread_mutex_lock(&c->mu);
    const kiq_dtoken_t *t = kiq_dtoken_store_get(kiq_metadata_image_tokens(c->image), token_id, strlen(token_id));
    if (t) {
        snprintf(owner, cap, "%s", t->owner);
        *expiry_ms = t->expiry_ms < t->max_ms ? t->expiry_ms : t->max_ms;
    }
    pthread_mutex_unlock(&c->mu);
    return t ? kiq_dtoken_scram_credential(secret, m, token_id, out) : -1;
}

void kiq_ctl_build_tokens(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    const kiq_dtoken_store_t *s = kiq_metadata_image_tokens(c->image);
    um->kafkaiq_delegation_tokens = kiq_arena_calloc(a, s->n + 1, sizeof *um->kafkaiq_delegation_tokens);
    um->kafkaiq_delegation_tokens_n = (int32_t)s->n;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_dtoken_t *t = &s->tokens[i];
        kiq_update_metadata_request_kafkaiq_delegation_tokens_t *o = &um->kafkaiq_delegation_tokens[i];
        kiq_update_metadata_request_kafkaiq_delegation_tokens_init(o);
        o->token_id = kiq_ctl_astr(a, t->id);
        o->owner = kiq_ctl_astr(a, t->owner);
        o->expiry_timestamp_ms = t->expiry_ms < t->max_ms ? t->expiry_ms : t->max_ms;
    }
}
