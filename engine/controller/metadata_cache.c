#include "controller/metadata_cache.h"
#include "proto/errors.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"

/* Partition indexes beyond this are refused as nonsense rather than
 * allocated for. */
#define MAX_PARTITION_INDEX 1000000

typedef struct mc_endpoint {
    const char *listener, *host;
    int port;
} mc_endpoint_t;

typedef struct mc_broker {
    int32_t id;
    const char *rack;
    int nendpoints;
    mc_endpoint_t *endpoints;
} mc_broker_t;

/* A dynamic config of a topic, as the controller pushed it. */
typedef struct mc_config {
    const char *name, *value;
    struct mc_config *next;
} mc_config_t;

typedef struct mc_topic {
    const char *name;
    size_t len;
    kiq_uuid_t id;
    int32_t npartitions;
    kiq_cached_partition_t *partitions;
    mc_config_t *configs;
} mc_topic_t;

/* One immutable view, built whole by an update and swapped in; all of it
 * lives in its arena. */
typedef struct mc_token {
    const char *id, *owner;
    int64_t expiry_ms;
} mc_token_t;

typedef struct mc_view {
    kiq_arena_t arena;
    int32_t controller_id;
    int nbrokers;
    mc_broker_t *brokers;
    int ntopics;
    mc_topic_t *topics; /* sorted by name */
    kiq_features_t features; /* the finalized levels, as the controller keeps them */
    kiq_scram_store_t scram; /* the SCRAM credentials, as the controller keeps them */
    int ntokens;
    mc_token_t *tokens; /* the delegation tokens, in the arena */
} mc_view_t;

/* lock guards view; wait_mu guards version and orders it after the swap,
 * so a waiter that checks under wait_mu cannot miss the wake-up. Lock
 * order: wait_mu, then lock. */
struct kiq_metadata_cache {
    pthread_rwlock_t lock;
    mc_view_t *view;
    pthread_mutex_t wait_mu;
    pthread_cond_t changed; /* CLOCK_MONOTONIC */
    uint64_t version;
    int32_t controller_epoch; /* the newest controller heard, under lock */
    kiq_acl_published_t acls; /* the last update's bindings, republished under lock; read without it */
};

static mc_view_t *view_new(void)
{
    mc_view_t *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    kiq_arena_init(&v->arena);
    v->controller_id = -1;
    kiq_features_init(&v->features);
    return v;
}

static void view_free(mc_view_t *v)
{
    if (!v) return;
    kiq_arena_reset(&v->arena);
    kiq_scram_store_clear(&v->scram);
    free(v);
}

kiq_metadata_cache_t *kiq_metadata_cache_new(void)
{
    kiq_metadata_cache_t *mc = calloc(1, sizeof *mc);
    if (!mc) return NULL;
    mc->view = view_new();
    bool ok = mc->view && pthread_rwlock_init(&mc->lock, NULL) == 0;
    ok = ok && pthread_mutex_init(&mc->wait_mu, NULL) == 0;
    ok = ok && kiq_acl_published_init(&mc->acls) == 0;
    if (ok) kiq_cond_init_monotonic(&mc->changed);
    if (!ok) {
        view_free(mc->view);
        free(mc);
        kiq_error_set("out of memory");
        return NULL;
    }
    return mc;
}

void kiq_metadata_cache_free(kiq_metadata_cache_t *mc)
{
    if (!mc) return;
    view_free(mc->view);
    kiq_acl_published_destroy(&mc->acls);
    pthread_rwlock_destroy(&mc->lock);
    pthread_mutex_destroy(&mc->wait_mu);
    pthread_cond_destroy(&mc->changed);
    free(mc);
}

/* ---- building a view ---------------------------------------------------- */

/* One partition state of either UpdateMetadata layout. */
typedef struct pstate {
    kiq_str_t topic;
    const kiq_uuid_t *topic_id; /* NULL: none given (v0-6) */
    int32_t index, leader, leader_epoch, partition_epoch;
    int32_t nreplicas, nisr, noffline;
    const int32_t *replicas, *isr, *offline;
} pstate_t;

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

static int pstate_cmp(const void *x, const void *y)
{
    const pstate_t *a = x, *b = y;
    int c = name_cmp(a->topic.p, (size_t)a->topic.len, b->topic.p, (size_t)b->topic.len);
    if (c) return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int copy_ids(int32_t *dst, const int32_t *src, int32_t n)
{
    if (n < 0 || !src) return 0;
    if (n > KIQ_MAX_REPLICAS) n = KIQ_MAX_REPLICAS;
    memcpy(dst, src, (size_t)n * sizeof *dst);
    return n;
}

static void leaderless(kiq_cached_partition_t *p)
{
    memset(p, 0, sizeof *p);
    p->leader = p->leader_epoch = p->partition_epoch = -1;
}

static int collect_states(const kiq_update_metadata_request_t *req, pstate_t **out)
{
    size_t n = req->ungrouped_partition_states_n > 0 ? (size_t)req->ungrouped_partition_states_n : 0;
    for (int32_t i = 0; i < req->topic_states_n; i++)
        if (req->topic_states[i].partition_states_n > 0) n += (size_t)req->topic_states[i].partition_states_n;
    pstate_t *s = calloc(n ? n : 1, sizeof *s);
    if (!s) return -1;
    size_t k = 0;
    for (int32_t i = 0; i < req->ungrouped_partition_states_n; i++) {
        const kiq_update_metadata_request_ungrouped_partition_states_t *p = &req->ungrouped_partition_states[i];
        s[k++] = (pstate_t){p->topic_name, NULL, p->partition_index, p->leader, p->leader_epoch,
                            p->partition_epoch, p->replicas_n, p->isr_n, p->offline_replicas_n,
                            p->replicas, p->isr, p->offline_replicas};
    }
    for (int32_t i = 0; i < req->topic_states_n; i++) {
        const kiq_update_metadata_request_topic_states_t *t = &req->topic_states[i];
        for (int32_t j = 0; j < t->partition_states_n; j++) {
            const kiq_update_metadata_request_topic_states_partition_states_t *p = &t->partition_states[j];
            s[k++] = (pstate_t){t->topic_name, &t->topic_id, p->partition_index, p->leader, p->leader_epoch,
                                p->partition_epoch, p->replicas_n, p->isr_n, p->offline_replicas_n,
                                p->replicas, p->isr, p->offline_replicas};
        }
    }
    /* drop what cannot be placed: nameless topics, absurd indexes */
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (s[i].topic.p && s[i].topic.len > 0 && s[i].index >= 0 && s[i].index < MAX_PARTITION_INDEX) s[m++] = s[i];
    qsort(s, m, sizeof *s, pstate_cmp);
    *out = s;
    return (int)m;
}

static void build_topics(mc_view_t *v, const pstate_t *s, int n)
{
    int ntopics = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || name_cmp(s[i - 1].topic.p, (size_t)s[i - 1].topic.len, s[i].topic.p, (size_t)s[i].topic.len))
            ntopics++;
    v->topics = kiq_arena_calloc(&v->arena, (size_t)(ntopics ? ntopics : 1), sizeof *v->topics);
    int i = 0;
    while (i < n) {
        int j = i;
        while (j < n && s[j].topic.len == s[i].topic.len &&
               memcmp(s[j].topic.p, s[i].topic.p, (size_t)s[i].topic.len) == 0)
            j++;
        mc_topic_t *t = &v->topics[v->ntopics++];
        t->name = kiq_arena_strndup(&v->arena, s[i].topic.p, (size_t)s[i].topic.len);
        t->len = (size_t)s[i].topic.len;
        for (int k = i; k < j; k++)
            if (s[k].topic_id) t->id = *s[k].topic_id;
        t->npartitions = s[j - 1].index + 1; /* sorted: the last is the highest */
        t->partitions = kiq_arena_calloc(&v->arena, (size_t)t->npartitions, sizeof *t->partitions);
        for (int32_t p = 0; p < t->npartitions; p++) leaderless(&t->partitions[p]);
        for (int k = i; k < j; k++) {
            kiq_cached_partition_t *p = &t->partitions[s[k].index];
            p->leader = s[k].leader;
            p->leader_epoch = s[k].leader_epoch;
            p->partition_epoch = s[k].partition_epoch;
            p->nreplicas = copy_ids(p->replicas, s[k].replicas, s[k].nreplicas);
            p->nisr = copy_ids(p->isr, s[k].isr, s[k].nisr);
            p->noffline = copy_ids(p->offline, s[k].offline, s[k].noffline);
        }
        i = j;
    }
}

static const char *arena_str(kiq_arena_t *a, kiq_str_t s)
{
    return s.p ? kiq_arena_strndup(a, s.p, (size_t)(s.len > 0 ? s.len : 0)) : NULL;
}

static void build_brokers(mc_view_t *v, const kiq_update_metadata_request_t *req)
{
    int n = req->live_brokers_n > 0 ? req->live_brokers_n : 0;
    v->brokers = kiq_arena_calloc(&v->arena, (size_t)(n ? n : 1), sizeof *v->brokers);
    for (int i = 0; i < n; i++) {
        const kiq_update_metadata_request_live_brokers_t *lb = &req->live_brokers[i];
        mc_broker_t *b = &v->brokers[v->nbrokers++];
        b->id = lb->id;
        b->rack = arena_str(&v->arena, lb->rack);
        if (lb->endpoints_n <= 0) {
            /* v0: one plaintext host and port */
            if (!lb->v0_host.p) continue;
            b->endpoints = kiq_arena_alloc(&v->arena, sizeof *b->endpoints);
            b->endpoints[0] = (mc_endpoint_t){KIQ_METADATA_CLIENT_LISTENER, arena_str(&v->arena, lb->v0_host),
                                              lb->v0_port};
            b->nendpoints = 1;
            continue;
        }
        b->endpoints = kiq_arena_calloc(&v->arena, (size_t)lb->endpoints_n, sizeof *b->endpoints);
        for (int32_t j = 0; j < lb->endpoints_n; j++) {
            const kiq_update_metadata_request_live_brokers_endpoints_t *e = &lb->endpoints[j];
            if (!e->host.p) continue;
            mc_endpoint_t *d = &b->endpoints[b->nendpoints++];
            /* v1-2 name no listener: security protocol 0 is PLAINTEXT */
            d->listener = e->listener.p ? arena_str(&v->arena, e->listener)
                          : e->security_protocol == 0 ? KIQ_METADATA_CLIENT_LISTENER
                                                      : "";
            d->host = arena_str(&v->arena, e->host);
            d->port = e->port;
        }
    }
}

static const mc_topic_t *find_topic(const mc_view_t *v, const char *name, size_t len);

/* The topics' configs among the controller's dynamic configs. */
static void build_configs(mc_view_t *v, const kiq_update_metadata_request_t *req)
{
    for (int32_t i = 0; i < req->kafkaiq_configs_n; i++) {
        const kiq_update_metadata_request_kafkaiq_configs_t *e = &req->kafkaiq_configs[i];
        if (e->resource_type != KIQ_CONFIG_RESOURCE_TOPIC || !e->resource_name.p || !e->name.p || !e->value.p)
            continue;
        mc_topic_t *t = (mc_topic_t *)find_topic(v, e->resource_name.p, (size_t)e->resource_name.len);
        if (!t) continue;
        mc_config_t *c = kiq_arena_alloc(&v->arena, sizeof *c);
        *c = (mc_config_t){arena_str(&v->arena, e->name), arena_str(&v->arena, e->value), t->configs};
        t->configs = c;
    }
}

/* The finalized levels of the features this build knows. */
static void build_features(mc_view_t *v, const kiq_update_metadata_request_t *req)
{
    v->features.epoch = req->kafkaiq_features_epoch;
    for (int32_t i = 0; i < req->kafkaiq_features_n; i++) {
        int f = kiq_feature_find(req->kafkaiq_features[i].name);
        if (f >= 0) v->features.level[f] = req->kafkaiq_features[i].level;
    }
}

/* The SCRAM credentials, each checked for its mechanism and sizes. -1
 * when out of memory. */
static int build_scram(mc_view_t *v, const kiq_update_metadata_request_t *req)
{
    for (int32_t i = 0; i < req->kafkaiq_scram_credentials_n; i++) {
        const kiq_update_metadata_request_kafkaiq_scram_credentials_t *e = &req->kafkaiq_scram_credentials[i];
        int m = kiq_scram_mech_of_wire(e->mechanism);
        if (m < 0 || !e->name.p || !e->salt.p || !e->stored_key.p || !e->server_key.p) continue;
        size_t kl = kiq_scram_key_len((enum kiq_scram_mech)m);
        if (e->salt.len <= 0 || e->salt.len > KIQ_SCRAM_MAX_SALT || (size_t)e->stored_key.len != kl ||
            (size_t)e->server_key.len != kl)
            continue;
        kiq_scram_credential_t cred = {.iterations = e->iterations, .salt_len = (size_t)e->salt.len};
        memcpy(cred.salt, e->salt.p, cred.salt_len);
        memcpy(cred.stored_key, e->stored_key.p, kl);
        memcpy(cred.server_key, e->server_key.p, kl);
        if (kiq_scram_store_put(&v->scram, e->name.p, (size_t)e->name.len, e->mechanism, &cred) != 0) return -1;
    }
    return 0;
}

/* The ACL bindings, each checked as a controller checks a creation (a
 * malformed one left out). -1 when out of memory. */
static int build_acls(kiq_acl_store_t *s, const kiq_update_metadata_request_t *req)
{
    for (int32_t i = 0; i < req->kafkaiq_acls_n; i++) {
        const kiq_update_metadata_request_kafkaiq_acls_t *e = &req->kafkaiq_acls[i];
        if (!e->resource_name.p || !e->principal.p || !e->host.p ||
            kiq_acl_invalid(e->resource_type, e->resource_name, e->pattern_type, e->principal, e->host, e->operation,
                            e->permission_type))
            continue;
        char *name = strndup(e->resource_name.p, (size_t)e->resource_name.len);
        char *principal = strndup(e->principal.p, (size_t)e->principal.len);
        char *host = strndup(e->host.p, (size_t)e->host.len);
        kiq_acl_t a = {e->id, e->resource_type, e->pattern_type, e->operation, e->permission_type, name, principal,
                       host};
        int rc = name && principal && host ? kiq_acl_store_add(s, &a) : -1;
        free(name);
        free(principal);
        free(host);
        if (rc != 0) return -1;
    }
    return 0;
}

/* The delegation tokens, those without an id or owner left out. */
static void build_tokens(mc_view_t *v, const kiq_update_metadata_request_t *req)
{
    int n = req->kafkaiq_delegation_tokens_n > 0 ? req->kafkaiq_delegation_tokens_n : 0;
    v->tokens = kiq_arena_calloc(&v->arena, (size_t)n + 1, sizeof *v->tokens);
    for (int i = 0; i < n; i++) {
        const kiq_update_metadata_request_kafkaiq_delegation_tokens_t *e = &req->kafkaiq_delegation_tokens[i];
        if (!e->token_id.p || !e->owner.p) continue;
        v->tokens[v->ntokens++] = (mc_token_t){arena_str(&v->arena, e->token_id), arena_str(&v->arena, e->owner),
                                               e->expiry_timestamp_ms};
    }
}

static int update_view(kiq_metadata_cache_t *mc, const kiq_update_metadata_request_t *req, const kiq_acl_store_t *acls)
{
    mc_view_t *v = view_new();
    pstate_t *states = NULL;
    int n = v ? collect_states(req, &states) : -1;
    if (n < 0) {
        view_free(v);
        return kiq_error_set("metadata cache: out of memory");
    }
    v->controller_id = req->controller_id;
    build_topics(v, states, n);
    free(states);
    build_configs(v, req);
    build_brokers(v, req);
    build_features(v, req);
    build_tokens(v, req);
    if (build_scram(v, req) != 0) {
        view_free(v);
        return kiq_error_set("metadata cache: out of memory");
    }

    pthread_rwlock_wrlock(&mc->lock);
    if (req->controller_epoch < mc->controller_epoch) {
        pthread_rwlock_unlock(&mc->lock);
        view_free(v);
        kiq_error_set("controller %d's epoch %d is older than %d", req->controller_id, req->controller_epoch,
                      mc->controller_epoch);
        return KIQ_ERR_STALE_CONTROLLER_EPOCH;
    }
    mc->controller_epoch = req->controller_epoch;
    mc_view_t *old = mc->view;
    mc->view = v;
    int acl_rc = kiq_acl_published_set(&mc->acls, acls);
    pthread_rwlock_unlock(&mc->lock);
    view_free(old);

    pthread_mutex_lock(&mc->wait_mu);
    mc->version++;
    pthread_cond_broadcast(&mc->changed);
    pthread_mutex_unlock(&mc->wait_mu);
    return acl_rc == 0 ? 0 : kiq_error_set("metadata cache: out of memory");
}

int kiq_metadata_cache_update(kiq_metadata_cache_t *mc, const kiq_update_metadata_request_t *req)
{
    kiq_acl_store_t acls = {0};
    if (build_acls(&acls, req) != 0) {
        kiq_acl_store_clear(&acls);
        return kiq_error_set("metadata cache: out of memory");
    }
    int rc = update_view(mc, req, &acls);
    kiq_acl_store_clear(&acls);
    return rc;
}

/* ---- lookups (under the read lock) ------------------------------------- */

void kiq_metadata_cache_features(kiq_metadata_cache_t *mc, kiq_features_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    *out = mc->view->features;
    pthread_rwlock_unlock(&mc->lock);
}

int kiq_metadata_cache_token(kiq_metadata_cache_t *mc, const char *token_id, char *owner, size_t cap,
                             int64_t *expiry_ms)
{
    int rc = -1;
    pthread_rwlock_rdlock(&mc->lock);
    for (int i = 0; i < mc->view->ntokens && rc; i++) {
        const mc_token_t *t = &mc->view->tokens[i];
        if (strcmp(t->id, token_id) != 0) continue;
        snprintf(owner, cap, "%s", t->owner);
        *expiry_ms = t->expiry_ms;
        rc = 0;
    }
    pthread_rwlock_unlock(&mc->lock);
    return rc;
}

kiq_acl_snapshot_t *kiq_metadata_cache_acls(kiq_metadata_cache_t *mc) { return kiq_acl_published_get(&mc->acls); }

int kiq_metadata_cache_scram(kiq_metadata_cache_t *mc, enum kiq_scram_mech m, const char *user,
                             kiq_scram_credential_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const kiq_scram_entry_t *e = kiq_scram_store_get(&mc->view->scram, user, strlen(user),
                                                     m == KIQ_SCRAM_SHA_512 ? KIQ_SCRAM_WIRE_SHA_512
                                                                            : KIQ_SCRAM_WIRE_SHA_256);
    if (e) *out = e->cred;
    pthread_rwlock_unlock(&mc->lock);
    return e ? 0 : -1;
}

static const mc_topic_t *find_topic(const mc_view_t *v, const char *name, size_t len)
{
    int lo = 0, hi = v->ntopics - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = name_cmp(v->topics[mid].name, v->topics[mid].len, name, len);
        if (c == 0) return &v->topics[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

static const mc_broker_t *find_broker(const mc_view_t *v, int32_t id)
{
    for (int i = 0; i < v->nbrokers; i++)
        if (v->brokers[i].id == id) return &v->brokers[i];
    return NULL;
}

static const mc_endpoint_t *find_endpoint(const mc_broker_t *b, const char *listener)
{
    const char *want = listener ? listener : KIQ_METADATA_CLIENT_LISTENER;
    for (int i = 0; i < b->nendpoints; i++)
        if (strcmp(b->endpoints[i].listener, want) == 0) return &b->endpoints[i];
    return !listener && b->nendpoints > 0 ? &b->endpoints[0] : NULL;
}

bool kiq_metadata_cache_partition(kiq_metadata_cache_t *mc, const char *topic, size_t len, int32_t partition,
                                  kiq_cached_partition_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_topic_t *t = find_topic(mc->view, topic, len);
    bool ok = t && partition >= 0 && partition < t->npartitions;
    if (ok) *out = t->partitions[partition];
    pthread_rwlock_unlock(&mc->lock);
    return ok;
}

int32_t kiq_metadata_cache_partition_count(kiq_metadata_cache_t *mc, const char *topic, size_t len)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_topic_t *t = find_topic(mc->view, topic, len);
    int32_t n = t ? t->npartitions : -1;
    pthread_rwlock_unlock(&mc->lock);
    return n;
}

bool kiq_metadata_cache_topic_id(kiq_metadata_cache_t *mc, const char *topic, size_t len, kiq_uuid_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_topic_t *t = find_topic(mc->view, topic, len);
    if (t) *out = t->id;
    pthread_rwlock_unlock(&mc->lock);
    return t != NULL;
}

int kiq_metadata_cache_topic_configs(kiq_metadata_cache_t *mc, const char *topic, size_t len,
                                    kiq_topic_configs_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_topic_t *t = find_topic(mc->view, topic, len);
    int rc = t ? 0 : kiq_error_set("Topic %.*s does not exist", (int)len, topic);
    /* checked by the controller already: a value refused here is one this
     * broker does not take, left to its default */
    for (const mc_config_t *c = t ? t->configs : NULL; c; c = c->next)
        kiq_topic_configs_set(out, c->name, (int)strlen(c->name), c->value, (int)strlen(c->value));
    pthread_rwlock_unlock(&mc->lock);
    return rc;
}

bool kiq_metadata_cache_broker(kiq_metadata_cache_t *mc, int32_t id, const char *listener, char *host, size_t n,
                               int *port)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_broker_t *b = find_broker(mc->view, id);
    const mc_endpoint_t *e = b ? find_endpoint(b, listener) : NULL;
    if (e) {
        if (n) snprintf(host, n, "%s", e->host);
        *port = e->port;
    }
    pthread_rwlock_unlock(&mc->lock);
    return e != NULL;
}

int32_t kiq_metadata_cache_controller(kiq_metadata_cache_t *mc)
{
    pthread_rwlock_rdlock(&mc->lock);
    int32_t id = mc->view->controller_id;
    pthread_rwlock_unlock(&mc->lock);
    return id;
}

int kiq_metadata_cache_brokers(kiq_metadata_cache_t *mc, const char *listener, kiq_arena_t *arena,
                               kiq_cached_broker_t **out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_view_t *v = mc->view;
    kiq_cached_broker_t *list = kiq_arena_calloc(arena, (size_t)(v->nbrokers ? v->nbrokers : 1), sizeof *list);
    int n = 0;
    for (int i = 0; i < v->nbrokers; i++) {
        const mc_endpoint_t *e = find_endpoint(&v->brokers[i], listener);
        if (!e) continue;
        list[n].id = v->brokers[i].id;
        list[n].host = kiq_arena_strndup(arena, e->host, strlen(e->host));
        list[n].port = e->port;
        list[n].rack = v->brokers[i].rack ? kiq_arena_strndup(arena, v->brokers[i].rack, strlen(v->brokers[i].rack))
                                          : NULL;
        n++;
    }
    pthread_rwlock_unlock(&mc->lock);
    *out = list;
    return n;
}

int kiq_metadata_cache_broker_count(kiq_metadata_cache_t *mc)
{
    pthread_rwlock_rdlock(&mc->lock);
    int n = mc->view->nbrokers;
    pthread_rwlock_unlock(&mc->lock);
    return n;
}

static void copy_topic(const mc_topic_t *t, kiq_arena_t *arena, kiq_cached_topic_t *out)
{
    out->name = kiq_arena_strndup(arena, t->name, t->len);
    out->len = t->len;
    out->id = t->id;
    out->npartitions = t->npartitions;
    out->partitions = kiq_arena_calloc(arena, (size_t)(t->npartitions ? t->npartitions : 1), sizeof *out->partitions);
    memcpy(out->partitions, t->partitions, (size_t)t->npartitions * sizeof *out->partitions);
}

bool kiq_metadata_cache_topic(kiq_metadata_cache_t *mc, const char *topic, size_t len, kiq_arena_t *arena,
                              kiq_cached_topic_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_topic_t *t = find_topic(mc->view, topic, len);
    if (t) copy_topic(t, arena, out);
    pthread_rwlock_unlock(&mc->lock);
    return t != NULL;
}

bool kiq_metadata_cache_topic_by_id(kiq_metadata_cache_t *mc, const kiq_uuid_t *id, kiq_arena_t *arena,
                                    kiq_cached_topic_t *out)
{
    pthread_rwlock_rdlock(&mc->lock);
    const mc_topic_t *t = NULL;
    if (!kiq_uuid_is_zero(id))
        for (int i = 0; i < mc->view->ntopics && !t; i++)
            if (memcmp(&mc->view->topics[i].id, id, sizeof *id) == 0) t = &mc->view->topics[i];
    if (t) copy_topic(t, arena, out);
    pthread_rwlock_unlock(&mc->lock);
    return t != NULL;
}

int kiq_metadata_cache_topics(kiq_metadata_cache_t *mc, kiq_arena_t *arena, kiq_cached_topic_t **out)
{
    pthread_rwlock_rdlock(&mc->lock);
    int n = mc->view->ntopics;
    kiq_cached_topic_t *list = kiq_arena_calloc(arena, (size_t)(n ? n : 1), sizeof *list);
    for (int i = 0; i < n; i++) copy_topic(&mc->view->topics[i], arena, &list[i]);
    pthread_rwlock_unlock(&mc->lock);
    *out = list;
    return n;
}

/* ---- waiting ------------------------------------------------------------ */

uint64_t kiq_metadata_cache_version(kiq_metadata_cache_t *mc)
{
    pthread_mutex_lock(&mc->wait_mu);
    uint64_t v = mc->version;
    pthread_mutex_unlock(&mc->wait_mu);
    return v;
}

typedef bool (*wait_cond_fn)(kiq_metadata_cache_t *mc, const void *arg);

/* Checks cond under wait_mu after every version change until it holds or
 * the deadline passes. */
static bool wait_until(kiq_metadata_cache_t *mc, wait_cond_fn cond, const void *arg, int timeout_ms)
{
    int64_t deadline = kiq_clock_mono_ns() + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
    pthread_mutex_lock(&mc->wait_mu);
    bool ok;
    while (!(ok = cond(mc, arg))) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&mc->changed, &mc->wait_mu);
        } else if (timeout_ms == 0 || !kiq_cond_wait_until(&mc->changed, &mc->wait_mu, deadline)) {
            ok = cond(mc, arg);
            break;
        }
    }
    pthread_mutex_unlock(&mc->wait_mu);
    return ok;
}

static bool version_reached(kiq_metadata_cache_t *mc, const void *arg)
{
    return mc->version >= *(const uint64_t *)arg;
}

bool kiq_metadata_cache_wait_version(kiq_metadata_cache_t *mc, uint64_t min_version, int timeout_ms)
{
    return wait_until(mc, version_reached, &min_version, timeout_ms);
}

static bool enough_brokers(kiq_metadata_cache_t *mc, const void *arg)
{
    return kiq_metadata_cache_broker_count(mc) >= *(const int *)arg;
}

bool kiq_metadata_cache_wait_brokers(kiq_metadata_cache_t *mc, int n, int timeout_ms)
{
    return wait_until(mc, enough_brokers, &n, timeout_ms);
}
