/* Client quotas kept by the controller: AlterClientQuotas decided by
 * Kafka's rules (controller/client_quota_rules.c) and written as
 * ClientQuotaRecords; DescribeClientQuotas and the quota managers'
 * lookups answered from the image. */
#include "controller/client_quota_rules.h"
#include "controller/controller_internal.h"

int kiq_controller_alter_client_quotas(kiq_controller_t *c, const kiq_alter_client_quotas_request_t *req,
                                       kiq_arena_t *a, kiq_alter_client_quotas_response_t *out)
{
    kiq_client_quota_change_t *changes;
    size_t n;
    pthread_mutex_lock(&c->mu);
    kiq_client_quotas_plan(kiq_metadata_image_quotas(c->image), req, a, out, &changes, &n);
    batch_t b = {.a = a};
    for (int i = 0; i < out->entries_n; i++)
        if (!c->active && !out->entries[i].error_code) {
            out->entries[i].error_code = KIQ_ERR_NOT_CONTROLLER;
            out->entries[i].error_message = kiq_ctl_astr(a, "this node is not the active controller");
        }
    for (size_t i = 0; c->active && !req->validate_only && i < n; i++)
        kiq_ctl_add_record(&b, KIQ_MR_CLIENT_QUOTA)->m.client_quota = changes[i].record;
    int rc = 0;
    if (b.n && kiq_ctl_commit(c, &b) != 0) {
        rc = c->commit_error;
        for (int i = 0; i < out->entries_n; i++)
            if (!out->entries[i].error_code) {
                out->entries[i].error_code = (int16_t)rc;
                out->entries[i].error_message = kiq_ctl_astr(a, "the quotas were not written");
            }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

void kiq_controller_describe_client_quotas(kiq_controller_t *c, const kiq_describe_client_quotas_request_t *req,
                                           kiq_arena_t *a, kiq_describe_client_quotas_response_t *out)
{
    pthread_mutex_lock(&c->mu);
    kiq_client_quotas_describe(kiq_metadata_image_quotas(c->image), req, a, out);
    pthread_mutex_unlock(&c->mu);
}

uint64_t kiq_controller_quotas_version(kiq_controller_t *c) { return atomic_load(&c->quotas_version); }

bool kiq_controller_quotas_set(kiq_controller_t *c, int key)
{
    pthread_mutex_lock(&c->mu);
    bool any = kiq_client_quota_store_sets(kiq_metadata_image_quotas(c->image), key);
    pthread_mutex_unlock(&c->mu);
    return any;
}

int kiq_controller_client_quota(kiq_controller_t *c, const char *user, const char *client_id, int key,
                                double *bound, bool *by_user, bool *by_client)
{
    kiq_quota_entity_t match;
    pthread_mutex_lock(&c->mu);
    int found = kiq_client_quota_resolve(kiq_metadata_image_quotas(c->image), user, client_id, key, bound, &match);
    pthread_mutex_unlock(&c->mu);
    if (found) {
        *by_user = match.has_user;
        *by_client = match.has_client;
    }
    return found;
}

static kiq_str_t name_or_null(kiq_arena_t *a, const char *s) { return s ? kiq_ctl_astr(a, s) : (kiq_str_t){0}; }

void kiq_ctl_build_quotas(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    const kiq_client_quota_store_t *s = kiq_metadata_image_quotas(c->image);
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        for (int k = 0; k < KIQ_QUOTA__COUNT; k++) n += (s->entries[i].set >> k) & 1;
    um->kafkaiq_client_quotas = kiq_arena_calloc(a, n + 1, sizeof *um->kafkaiq_client_quotas);
    for (size_t i = 0; i < s->n; i++) {
        const kiq_client_quota_entry_t *e = &s->entries[i];
        for (int k = 0; k < KIQ_QUOTA__COUNT; k++) {
            if (!((e->set >> k) & 1)) continue;
            kiq_update_metadata_request_kafkaiq_client_quotas_t *o =
                &um->kafkaiq_client_quotas[um->kafkaiq_client_quotas_n++];
            kiq_update_metadata_request_kafkaiq_client_quotas_init(o);
            o->has_user = e->entity.has_user;
            o->user = name_or_null(a, e->entity.user);
            o->has_client_id = e->entity.has_client;
            o->client_id = name_or_null(a, e->entity.client_id);
            o->key = kiq_ctl_astr(a, kiq_quota_key_names[k]);
            o->value = e->value[k];
        }
    }
}
