/* SCRAM credentials kept by the controller (KIP-554): AlterUserScramCredentials
 * decided by Kafka's rules and written as UserScramCredentialRecords and
 * RemoveUserScramCredentialRecords; DescribeUserScramCredentials and the
 * lookups of authentication answered from the image. */
#include <stdio.h>
#include <string.h>

#include "controller/controller_internal.h"
#include "core/error.h"
#include "core/say.h"

/* One result per user named, in the order first named. */
static int user_slot(kiq_alter_user_scram_credentials_response_t *out, kiq_str_t user)
{
    for (int i = 0; i < out->results_n; i++)
        if (out->results[i].user.len == user.len && memcmp(out->results[i].user.p, user.p, (size_t)user.len) == 0)
            return i;
    kiq_alter_user_scram_credentials_response_results_t *r = &out->results[out->results_n];
    kiq_alter_user_scram_credentials_response_results_init(r);
    r->user = user;
    return out->results_n++;
}

static void refuse(kiq_alter_user_scram_credentials_response_t *out, int slot, int16_t code, kiq_arena_t *a,
                   const char *why)
{
    if (out->results[slot].error_code) return; /* the first reason stands */
    out->results[slot].error_code = code;
    out->results[slot].error_message = kiq_ctl_astr(a, why);
}

/* Refusals common to deletions and upsertions; the user's slot. */
static int check(kiq_alter_user_scram_credentials_response_t *out, kiq_arena_t *a, kiq_str_t name, int8_t mech,
                 int index, const kiq_str_t *names, const int8_t *mechs)
{
    int slot = user_slot(out, name);
    if (name.len <= 0) refuse(out, slot, KIQ_ERR_UNACCEPTABLE_CREDENTIAL, a, "Username must not be empty");
    else if (kiq_scram_mech_of_wire(mech) < 0)
        refuse(out, slot, KIQ_ERR_UNSUPPORTED_SASL_MECHANISM, a, "Unknown SCRAM mechanism");
    for (int j = 0; j < index; j++)
        if (mechs[j] == mech && names[j].len == name.len && memcmp(names[j].p, name.p, (size_t)name.len) == 0)
            refuse(out, slot, KIQ_ERR_DUPLICATE_RESOURCE, a,
                   "A user credential cannot be altered twice in the same request");
    return slot;
}

int kiq_controller_alter_scram(kiq_controller_t *c, const kiq_alter_user_scram_credentials_request_t *req,
                               kiq_arena_t *a, kiq_alter_user_scram_credentials_response_t *out)
{
    int nd = req->deletions_n > 0 ? req->deletions_n : 0, nu = req->upsertions_n > 0 ? req->upsertions_n : 0;
    out->results = kiq_arena_calloc(a, (size_t)(nd + nu) + 1, sizeof *out->results);
    out->results_n = 0;
    kiq_str_t *names = kiq_arena_calloc(a, (size_t)(nd + nu) + 1, sizeof *names);
    int8_t *mechs = kiq_arena_calloc(a, (size_t)(nd + nu) + 1, 1);
    int *slots = kiq_arena_calloc(a, (size_t)(nd + nu) + 1, sizeof *slots);
    kiq_scram_credential_t *creds = kiq_arena_calloc(a, (size_t)nu + 1, sizeof *creds);
    pthread_mutex_lock(&c->mu);
    const kiq_scram_store_t *store = kiq_metadata_image_scram(c->image);
    for (int i = 0; i < nd + nu; i++) {
        bool del = i < nd;
        names[i] = del ? req->deletions[i].name : req->upsertions[i - nd].name;
        mechs[i] = del ? req->deletions[i].mechanism : req->upsertions[i - nd].mechanism;
        if (!names[i].p) names[i] = KIQ_STR("");
        int slot = slots[i] = check(out, a, names[i], mechs[i], i, names, mechs);
        if (!c->active) {
            refuse(out, slot, KIQ_ERR_NOT_CONTROLLER, a, "this node is not the active controller");
            continue;
        }
        if (del) {
            if (kiq_scram_mech_of_wire(mechs[i]) >= 0 &&
                !kiq_scram_store_get(store, names[i].p, (size_t)names[i].len, mechs[i]))
                refuse(out, slot, KIQ_ERR_RESOURCE_NOT_FOUND, a,
                       "Attempt to delete a user credential that does not exist");
            continue;
        }
        const kiq_alter_user_scram_credentials_request_upsertions_t *u = &req->upsertions[i - nd];
        int m = kiq_scram_mech_of_wire(u->mechanism);
        if (m >= 0 && kiq_scram_credential_from_salted((enum kiq_scram_mech)m, u->salted_password.p,
                                                       u->salted_password.p ? (size_t)u->salted_password.len : 0,
                                                       u->salt.p, u->salt.p ? (size_t)u->salt.len : 0,
                                                       u->iterations, &creds[i - nd]) != 0)
            refuse(out, slot, KIQ_ERR_UNACCEPTABLE_CREDENTIAL, a, kiq_error_get());
    }
    batch_t b = {.a = a};
    for (int i = 0; i < nd + nu; i++) {
        if (out->results[slots[i]].error_code) continue; /* a user's changes go all or none */
        if (i < nd) {
            kiq_remove_user_scram_credential_record_t *r =
                &kiq_ctl_add_record(&b, KIQ_MR_REMOVE_USER_SCRAM_CREDENTIAL)->m.remove_user_scram_credential;
            r->name = names[i];
            r->mechanism = mechs[i];
            continue;
        }
        const kiq_scram_credential_t *cr = &creds[i - nd];
        size_t kl = kiq_scram_key_len((enum kiq_scram_mech)kiq_scram_mech_of_wire(mechs[i]));
        kiq_user_scram_credential_record_t *r =
            &kiq_ctl_add_record(&b, KIQ_MR_USER_SCRAM_CREDENTIAL)->m.user_scram_credential;
        r->name = names[i];
        r->mechanism = mechs[i];
        r->salt = (kiq_bytes_t){cr->salt, (int32_t)cr->salt_len};
        r->stored_key = (kiq_bytes_t){cr->stored_key, (int32_t)kl};
        r->server_key = (kiq_bytes_t){cr->server_key, (int32_t)kl};
        r->iterations = cr->iterations;
    }
    int rc = 0;
    if (b.n && kiq_ctl_commit(c, &b) != 0) {
        rc = c->commit_error;
        for (int i = 0; i < out->results_n; i++)
            if (!out->results[i].error_code) refuse(out, i, (int16_t)rc, a, "the credentials were not written");
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void kiq_controller_describe_scram(kiq_controller_t *c, const kiq_describe_user_scram_credentials_request_t *req,
                                   kiq_arena_t *a, kiq_describe_user_scram_credentials_response_t *out)
{
    pthread_mutex_lock(&c->mu);
    const kiq_scram_store_t *s = kiq_metadata_image_scram(c->image);
    size_t cap = req->users_n < 0 ? s->n : (size_t)req->users_n;
    out->results = kiq_arena_calloc(a, cap + 1, sizeof *out->results);
    out->results_n = 0;
    for (size_t i = 0; i < cap; i++) {
        kiq_str_t user;
        if (req->users_n < 0) {
            /* every user once: entries are sorted by user */
            if (i > 0 && strcmp(s->entries[i].user, s->entries[i - 1].user) == 0) continue;
            user = kiq_ctl_astr(a, s->entries[i].user);
        } else
            user = req->users[i].name.p ? req->users[i].name : KIQ_STR("");
        kiq_describe_user_scram_credentials_response_results_t *r = &out->results[out->results_n++];
        kiq_describe_user_scram_credentials_response_results_init(r);
        r->user = user;
        bool twice = false;
        for (size_t j = 0; req->users_n >= 0 && j < i; j++)
            twice |= req->users[j].name.len == user.len && memcmp(req->users[j].name.p, user.p, (size_t)user.len) == 0;
        r->credential_infos = kiq_arena_calloc(a, 3, sizeof *r->credential_infos);
        for (int8_t m = KIQ_SCRAM_WIRE_SHA_256; m <= KIQ_SCRAM_WIRE_SHA_512; m++) {
            const kiq_scram_entry_t *e = kiq_scram_store_get(s, user.p, (size_t)user.len, m);
            if (!e) continue;
            kiq_describe_user_scram_credentials_response_results_credential_infos_t *ci =
                &r->credential_infos[r->credential_infos_n++];
            kiq_describe_user_scram_credentials_response_results_credential_infos_init(ci);
            ci->mechanism = m;
            ci->iterations = e->cred.iterations;
        }
        if (twice) {
            r->error_code = KIQ_ERR_DUPLICATE_RESOURCE;
            r->error_message = kiq_ctl_astr(a, "Cannot describe SCRAM credentials for the same user twice in a single request");
            r->credential_infos_n = 0;
        } else if (!r->credential_infos_n) {
            r->error_code = KIQ_ERR_RESOURCE_NOT_FOUND;
            char why[300];
            snprintf(why, sizeof why, "Attempt to describe a user credential that does not exist: %.*s", (int)user.len,
                     user.p);
            r->error_message = kiq_ctl_astr(a, why);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

int kiq_controller_scram_credential(kiq_controller_t *c, enum kiq_scram_mech m, const char *user,
                                    kiq_scram_credential_t *out)
{
    pthread_mutex_lock(&c->mu);
    const kiq_scram_entry_t *e = kiq_scram_store_get(kiq_metadata_image_scram(c->image), user, strlen(user),
                                                     m == KIQ_SCRAM_SHA_512 ? KIQ_SCRAM_WIRE_SHA_512
                                                                            : KIQ_SCRAM_WIRE_SHA_256);
    if (e) *out = e->cred;
    pthread_mutex_unlock(&c->mu);
    return e ? 0 : -1;
}

/* The round is sent after mu is released: its bytes must not point into the image. */
static kiq_bytes_t bytes_copy(kiq_arena_t *a, const uint8_t *p, size_t n)
{
    uint8_t *d = kiq_arena_alloc(a, n ? n : 1);
    memcpy(d, p, n);
    return (kiq_bytes_t){d, (int32_t)n};
}

void kiq_ctl_build_scram(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    const kiq_scram_store_t *s = kiq_metadata_image_scram(c->image);
    um->kafkaiq_scram_credentials = kiq_arena_calloc(a, s->n + 1, sizeof *um->kafkaiq_scram_credentials);
    um->kafkaiq_scram_credentials_n = (int32_t)s->n;
    for (size_t i = 0; i < s->n; i++) {
        const kiq_scram_entry_t *e = &s->entries[i];
        int m = kiq_scram_mech_of_wire(e->mechanism);
        size_t kl = kiq_scram_key_len(m < 0 ? KIQ_SCRAM_SHA_256 : (enum kiq_scram_mech)m);
        kiq_update_metadata_request_kafkaiq_scram_credentials_t *o = &um->kafkaiq_scram_credentials[i];
        kiq_update_metadata_request_kafkaiq_scram_credentials_init(o);
        o->name = kiq_ctl_astr(a, e->user);
        o->mechanism = e->mechanism;
        o->salt = bytes_copy(a, e->cred.salt, e->cred.salt_len);
        o->stored_key = bytes_copy(a, e->cred.stored_key, kl);
        o->server_key = bytes_copy(a, e->cred.server_key, kl);
        o->iterations = e->cred.iterations;
    }
}

/* One credential of kafkaiq.add.scram as a record of the batch. */
static int bootstrap_record(void *ctx, const char *user, enum kiq_scram_mech m, const kiq_scram_credential_t *cred)
{
    batch_t *b = ctx;
    size_t kl = kiq_scram_key_len(m);
    kiq_user_scram_credential_record_t *r = &kiq_ctl_add_record(b, KIQ_MR_USER_SCRAM_CREDENTIAL)->m.user_scram_credential;
    r->name = kiq_ctl_astr(b->a, user);
    r->mechanism = (int8_t)(m == KIQ_SCRAM_SHA_512 ? KIQ_SCRAM_WIRE_SHA_512 : KIQ_SCRAM_WIRE_SHA_256);
    r->salt = bytes_copy(b->a, cred->salt, cred->salt_len);
    r->stored_key = bytes_copy(b->a, cred->stored_key, kl);
    r->server_key = bytes_copy(b->a, cred->server_key, kl);
    r->iterations = cred->iterations;
    return 0;
}

void kiq_ctl_add_bootstrap_scram(kiq_controller_t *c, batch_t *b)
{
    /* checked when the broker was made: a failure now is a failure to allocate */
    if (kiq_scram_add_spec(kiq_config_str(c->cfg, KIQ_CFG_ADD_SCRAM), bootstrap_record, b) != 0)
        KIQ_ERROR("kafkaiq.add.scram: %s", kiq_error_get());
}
