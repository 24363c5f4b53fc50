/* A broker's client quotas; see broker_quotas.h. */
#include "server/broker_quotas.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/client_quota_rules.h"
#include "controller/controller.h"
#include "controller/metadata_image.h"
#include "controller/metadata_record.h"
#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"
#include "proto/errors.h"
#include "server/broker.h"

#define STORE_DIR ".broker-configs"
#define STORE_FILE "client-quotas"
#define MAX_RECORD 65536 /* far above any record's size: a longer length is a damaged file */

static int store_path(kiq_broker_t *b, char *dir, char *path)
{
    if ((size_t)snprintf(dir, PATH_MAX, "%s/" STORE_DIR, b->log_dirs[0].path) >= PATH_MAX ||
        (size_t)snprintf(path, PATH_MAX, "%s/" STORE_FILE, dir) >= PATH_MAX)
        return kiq_error_set("log directory path too long");
    return 0;
}

/* Under quotas_mu: one record into the store. */
static int apply(kiq_broker_t *b, const kiq_client_quota_record_t *q, kiq_arena_t *a)
{
    kiq_quota_entity_t e;
    int key = q->key.p ? kiq_quota_key_of(q->key.p, (size_t)q->key.len) : -1;
    if (kiq_client_quota_entity_of(q->entity, q->entity_n, a, &e) != 0) return -1;
    if (key < 0) return kiq_error_set("ClientQuotaRecord: unknown quota key");
    if (kiq_client_quota_store_set(&b->quota_store, &e, key, q->value, q->remove) != 0)
        return kiq_error_set("out of memory");
    return 0;
}

int kiq_broker_quotas_load(kiq_broker_t *b)
{
    if (b->cluster) return 0;
    char dir[PATH_MAX], path[PATH_MAX];
    if (store_path(b, dir, path) != 0) return -1;
    FILE *f = fopen(path, "rb");
    if (!f) return errno == ENOENT ? 0 : kiq_error_errno("cannot read %s", path);
    uint8_t *buf = malloc(MAX_RECORD);
    if (!buf) {
        fclose(f);
        return kiq_error_set("out of memory");
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    int rc = 0;
    uint8_t len4[4];
    pthread_mutex_lock(&b->quotas_mu);
    while (rc == 0 && fread(len4, 1, 4, f) == 4) {
        uint32_t len = (uint32_t)len4[0] << 24 | (uint32_t)len4[1] << 16 | (uint32_t)len4[2] << 8 | len4[3];
        kiq_metadata_record_t r;
        if (len > MAX_RECORD || fread(buf, 1, len, f) != len)
            rc = kiq_error_set("%s: a record cut short", path);
        else if (kiq_metadata_record_decode(buf, len, &a, &r) != 0 || r.type != KIQ_MR_CLIENT_QUOTA)
            rc = kiq_error_set("%s: not a ClientQuotaRecord", path);
        else if (apply(b, &r.m.client_quota, &a) != 0)
            rc = kiq_error_set("%s: %s", path, kiq_error_get());
        kiq_arena_reset(&a);
    }
    atomic_fetch_add(&b->quota_version, 1);
    pthread_mutex_unlock(&b->quotas_mu);
    free(buf);
    fclose(f);
    return rc;
}

/* Under quotas_mu: the store written whole (by rename, synced). */
static int save(kiq_broker_t *b, const kiq_client_quota_store_t *s)
{
    char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8];
    if (store_path(b, dir, path) != 0 || kiq_mkdir_p(dir) != 0) return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    kiq_wr_t w;
    kiq_wr_init(&w);
    /* the records a snapshot of these quotas would hold */
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < s->n; i++)
        for (int k = 0; rc == 0 && k < KIQ_QUOTA__COUNT; k++) {
            if (!(s->entries[i].set & (1u << k))) continue;
            kiq_client_quota_record_entity_t parts[2];
            kiq_metadata_record_t r;
            kiq_metadata_record_init(&r, KIQ_MR_CLIENT_QUOTA);
            const kiq_quota_entity_t *e = &s->entries[i].entity;
            int n = 0;
            if (e->has_user) {
                kiq_client_quota_record_entity_init(&parts[n]);
                parts[n].entity_type = KIQ_STR("user");
                parts[n++].entity_name = e->user ? KIQ_STR(e->user) : KIQ_STR_NULL;
            }
            if (e->has_client) {
                kiq_client_quota_record_entity_init(&parts[n]);
                parts[n].entity_type = KIQ_STR("client-id");
                parts[n++].entity_name = e->client_id ? KIQ_STR(e->client_id) : KIQ_STR_NULL;
            }
            r.m.client_quota.entity = parts;
            r.m.client_quota.entity_n = n;
            r.m.client_quota.key = KIQ_STR(kiq_quota_key_names[k]);
            r.m.client_quota.value = s->entries[i].value[k];
            size_t at = w.len;
            kiq_wr_i32(&w, 0);
            rc = kiq_metadata_record_encode(&w, &r);
            if (rc == 0 && !w.err) kiq_wr_patch_i32(&w, at, (int32_t)(w.len - at - 4));
        }
    if (rc != 0 || w.err) {
        kiq_wr_free(&w);
        return rc != 0 ? -1 : kiq_error_set("out of memory");
    }
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        kiq_wr_free(&w);
        return kiq_error_errno("cannot write %s", tmp);
    }
    bool ok = fwrite(w.buf, 1, w.len, out) == w.len && fflush(out) == 0 && fsync(fileno(out)) == 0;
    kiq_wr_free(&w);
    fclose(out);
    if (!ok) return kiq_error_errno("cannot write %s", tmp);
    if (rename(tmp, path) != 0) return kiq_error_errno("cannot rename %s", tmp);
    kiq_fsync_dir(dir);
    return 0;
}

void kiq_broker_quotas_alter(kiq_broker_t *b, const kiq_alter_client_quotas_request_t *req, kiq_arena_t *a,
                             kiq_alter_client_quotas_response_t *out)
{
    kiq_client_quota_change_t *changes;
    size_t n;
    pthread_mutex_lock(&b->quotas_mu);
    kiq_client_quotas_plan(&b->quota_store, req, a, out, &changes, &n);
    if (req->validate_only || n == 0) {
        pthread_mutex_unlock(&b->quotas_mu);
        return;
    }
    /* the changes on a copy first: the store changes only once saved */
    kiq_client_quota_store_t next = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < b->quota_store.n; i++)
        for (int k = 0; rc == 0 && k < KIQ_QUOTA__COUNT; k++)
            if (b->quota_store.entries[i].set & (1u << k))
                rc = kiq_client_quota_store_set(&next, &b->quota_store.entries[i].entity, k,
                                                b->quota_store.entries[i].value[k], false);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const kiq_client_quota_record_t *q = &changes[i].record;
        rc = kiq_client_quota_store_set(&next, &changes[i].entity, kiq_quota_key_of(q->key.p, (size_t)q->key.len),
                                        q->value, q->remove);
    }
    if (rc == 0) rc = save(b, &next);
    if (rc == 0) {
        kiq_client_quota_store_clear(&b->quota_store);
        b->quota_store = next;
        atomic_fetch_add(&b->quota_version, 1);
    } else {
        char why[256];
        snprintf(why, sizeof why, "the quotas were not saved: %s", kiq_error_get());
        for (size_t i = 0; i < n; i++) {
            kiq_alter_client_quotas_response_entries_t *o = &out->entries[changes[i].entry];
            o->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            o->error_message = (kiq_str_t){kiq_arena_strndup(a, why, strlen(why)), (int32_t)strlen(why)};
        }
        kiq_client_quota_store_clear(&next);
    }
    pthread_mutex_unlock(&b->quotas_mu);
}

void kiq_broker_quotas_describe(kiq_broker_t *b, const kiq_describe_client_quotas_request_t *req, kiq_arena_t *a,
                                kiq_describe_client_quotas_response_t *out)
{
    pthread_mutex_lock(&b->quotas_mu);
    kiq_client_quotas_describe(&b->quota_store, req, a, out);
    pthread_mutex_unlock(&b->quotas_mu);
}

void kiq_broker_quotas_pushed(kiq_broker_t *b, const kiq_update_metadata_request_t *req)
{
    pthread_mutex_lock(&b->quotas_mu);
    kiq_client_quota_store_clear(&b->quota_store);
    for (int32_t i = 0; i < req->kafkaiq_client_quotas_n; i++) {
        const kiq_update_metadata_request_kafkaiq_client_quotas_t *q = &req->kafkaiq_client_quotas[i];
        int key = q->key.p ? kiq_quota_key_of(q->key.p, (size_t)q->key.len) : -1;
        if (key < 0) continue; /* a key this build does not know */
        char *user = q->user.p ? strndup(q->user.p, (size_t)q->user.len) : NULL;
        char *client = q->client_id.p ? strndup(q->client_id.p, (size_t)q->client_id.len) : NULL;
        kiq_quota_entity_t e = {q->has_user, q->has_client_id, user, client};
        if ((q->user.p && !user) || (q->client_id.p && !client) ||
            kiq_client_quota_store_set(&b->quota_store, &e, key, q->value, false) != 0)
            KIQ_WARN_LIMITED("[KafkaIQ broker %d] a pushed client quota left out: out of memory", b->node_id);
        free(user);
        free(client);
    }
    pthread_mutex_unlock(&b->quotas_mu);
    atomic_fetch_add(&b->quota_version, 1);
}

static uint64_t version(void *ctx)
{
    kiq_broker_t *b = ctx;
    if (b->controller) return kiq_controller_quotas_version(b->controller);
    return atomic_load(&b->quota_version);
}

static int lookup(void *ctx, const char *user, const char *client_id, int key, double *bound, bool *by_user,
                  bool *by_client)
{
    kiq_broker_t *b = ctx;
    if (b->controller) return kiq_controller_client_quota(b->controller, user, client_id, key, bound, by_user, by_client);
    /* a standalone broker's own, or a cluster's as the controller pushed them */
    kiq_quota_entity_t match;
    pthread_mutex_lock(&b->quotas_mu);
    int found = kiq_client_quota_resolve(&b->quota_store, user, client_id, key, bound, &match);
    pthread_mutex_unlock(&b->quotas_mu);
    if (found) {
        *by_user = match.has_user;
        *by_client = match.has_client;
    }
    return found;
}

static bool sets(void *ctx, int key)
{
    kiq_broker_t *b = ctx;
    if (b->controller) return kiq_controller_quotas_set(b->controller, key);
    pthread_mutex_lock(&b->quotas_mu);
    bool any = kiq_client_quota_store_sets(&b->quota_store, key);
    pthread_mutex_unlock(&b->quotas_mu);
    return any;
}

const kiq_quota_source_ops_t kiq_broker_quota_source = {version, lookup, sets};
