/* The controller's metadata image; see metadata_image.h. */
#include "controller/metadata_image.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core/error.h"
#include "core/str_map.h"
#include "core/uuid.h"
#include "proto/errors.h"

/* Owned by the controller thread (see metadata_image.h). */
struct kiq_metadata_image {
    kiq_broker_registration_t *brokers; /* sorted by id */
    size_t nbrokers, brokers_cap;
    kiq_topic_image_t **topics; /* sorted by name */
    size_t ntopics, topics_cap;
    kiq_str_map_t *by_id; /* the 16 id bytes -> topic in topics */
    kiq_config_entry_t *configs;
    size_t nconfigs, configs_cap;
    int64_t offset;
    int64_t next_producer_id; /* every producer id below is some broker's */
    kiq_features_t features;  /* the finalized levels (FeatureLevelRecord) */
    kiq_scram_store_t scram;  /* UserScramCredentialRecord */
    kiq_acl_store_t acls;     /* AccessControlEntryRecord */
    kiq_client_quota_store_t quotas; /* ClientQuotaRecord */
    kiq_dtoken_store_t tokens; /* DelegationTokenRecord */
};

kiq_metadata_image_t *kiq_metadata_image_new(void)
{
    kiq_metadata_image_t *img = calloc(1, sizeof *img);
    if (!img || !(img->by_id = kiq_str_map_new())) {
        free(img);
        kiq_error_set("out of memory");
        return NULL;
    }
    img->offset = -1;
    kiq_features_init(&img->features);
    return img;
}

static void broker_clear(kiq_broker_registration_t *b)
{
    for (int32_t i = 0; i < b->nendpoints; i++) {
        free(b->endpoints[i].name);
        free(b->endpoints[i].host);
    }
    free(b->endpoints);
    free(b->rack);
    free(b->log_dirs);
}

static void partition_clear(kiq_partition_registration_t *p)
{
    free(p->replicas);
    free(p->isr);
    free(p->removing_replicas);
    free(p->adding_replicas);
}

static void topic_free(kiq_topic_image_t *t)
{
    for (int32_t i = 0; i < t->npartitions; i++) partition_clear(&t->partitions[i]);
    free(t->partitions);
    free(t->name);
    free(t);
}

static void config_clear(kiq_config_entry_t *c)
{
    free(c->resource_name);
    free(c->name);
    free(c->value);
}

void kiq_metadata_image_free(kiq_metadata_image_t *img)
{
    if (!img) return;
    for (size_t i = 0; i < img->nbrokers; i++) broker_clear(&img->brokers[i]);
    free(img->brokers);
    for (size_t i = 0; i < img->ntopics; i++) topic_free(img->topics[i]);
    free(img->topics);
    kiq_str_map_free(img->by_id);
    for (size_t i = 0; i < img->nconfigs; i++) config_clear(&img->configs[i]);
    free(img->configs);
    kiq_scram_store_clear(&img->scram);
    kiq_acl_store_clear(&img->acls);
    kiq_client_quota_store_clear(&img->quotas);
    kiq_dtoken_store_clear(&img->tokens);
    free(img);
}

/* ---- copies out of decoded records (which live only during the apply) ---- */

static char *dup_str(kiq_str_t s, bool *ok)
{
    if (!s.p) return NULL;
    char *c = malloc((size_t)s.len + 1);
    if (!c) {
        *ok = false;
        return NULL;
    }
    memcpy(c, s.p, (size_t)s.len);
    c[s.len] = '\0';
    return c;
}

/* A copy of ids[0..n) (NULL for none); *ok false when out of memory. */
static int32_t *dup_ids(const int32_t *ids, int32_t n, bool *ok)
{
    if (n <= 0) return NULL;
    int32_t *c = malloc((size_t)n * sizeof *c);
    if (!c) {
        *ok = false;
        return NULL;
    }
    memcpy(c, ids, (size_t)n * sizeof *c);
    return c;
}

/* Grows *arr (element size elem) to hold at least need elements. */
static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 8;
    while (nc < need) nc *= 2;
    void *na = realloc(*arr, nc * elem);
    if (!na) return kiq_error_set("out of memory");
    *arr = na;
    *cap = nc;
    return 0;
}

static void uuid_text(const kiq_uuid_t *id, char out[23]) { kiq_uuid_to_base64(id, out); }

/* ---- brokers ---- */

/* The index of broker id, or where it would go (*found false). */
static size_t broker_index(const kiq_metadata_image_t *img, int32_t id, bool *found)
{
    size_t lo = 0, hi = img->nbrokers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (img->brokers[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < img->nbrokers && img->brokers[lo].id == id;
    return lo;
}

int kiq_metadata_image_apply_register_broker(kiq_metadata_image_t *img, const kiq_register_broker_record_t *r)
{
    kiq_broker_registration_t b = {
        .id = r->broker_id,
        .incarnation_id = r->incarnation_id,
        .epoch = r->broker_epoch,
        .fenced = r->fenced,
        .in_controlled_shutdown = r->in_controlled_shutdown,
    };
    bool ok = true;
    b.rack = dup_str(r->rack, &ok);
    if (r->end_points_n > 0) {
        b.endpoints = calloc((size_t)r->end_points_n, sizeof *b.endpoints);
        if (!b.endpoints) ok = false;
        for (int32_t i = 0; ok && i < r->end_points_n; i++) {
            const kiq_register_broker_record_end_points_t *e = &r->end_points[i];
            b.nendpoints = i + 1;
            b.endpoints[i].name = dup_str(e->name, &ok);
            b.endpoints[i].host = dup_str(e->host, &ok);
            b.endpoints[i].port = e->port;
            b.endpoints[i].security_protocol = e->security_protocol;
        }
    }
    if (ok && r->log_dirs_n > 0) {
        b.log_dirs = malloc((size_t)r->log_dirs_n * sizeof *b.log_dirs);
        if (b.log_dirs) {
            memcpy(b.log_dirs, r->log_dirs, (size_t)r->log_dirs_n * sizeof *b.log_dirs);
            b.nlog_dirs = r->log_dirs_n;
        } else {
            ok = false;
        }
    }
    bool found;
    size_t at = broker_index(img, b.id, &found);
    if (!ok || (!found && grow((void **)&img->brokers, &img->brokers_cap, img->nbrokers + 1, sizeof b) != 0)) {
        broker_clear(&b);
        return kiq_error_set("out of memory registering broker %d", (int)r->broker_id);
    }
    if (found) {
        broker_clear(&img->brokers[at]);
    } else {
        memmove(&img->brokers[at + 1], &img->brokers[at], (img->nbrokers - at) * sizeof b);
        img->nbrokers++;
    }
    img->brokers[at] = b;
    return 0;
}

static int set_fenced(kiq_metadata_image_t *img, int32_t id, int64_t epoch, bool fenced)
{
    bool found;
    size_t at = broker_index(img, id, &found);
    const char *what = fenced ? "fence" : "unfence";
    if (!found) return kiq_error_set("cannot %s broker %d: not registered", what, (int)id);
    kiq_broker_registration_t *b = &img->brokers[at];
    if (b->epoch != epoch)
        return kiq_error_set("cannot %s broker %d with epoch %lld: its epoch is %lld", what, (int)id,
                             (long long)epoch, (long long)b->epoch);
    b->fenced = fenced;
    return 0;
}

int kiq_metadata_image_apply_unregister_broker(kiq_metadata_image_t *img, const kiq_unregister_broker_record_t *r)
{
    bool found;
    size_t at = broker_index(img, r->broker_id, &found);
    if (!found) return kiq_error_set("cannot unregister broker %d: not registered", (int)r->broker_id);
    if (img->brokers[at].epoch != r->broker_epoch)
        return kiq_error_set("cannot unregister broker %d with epoch %lld: its epoch is %lld", (int)r->broker_id,
                             (long long)r->broker_epoch, (long long)img->brokers[at].epoch);
    broker_clear(&img->brokers[at]);
    memmove(&img->brokers[at], &img->brokers[at + 1], (img->nbrokers - at - 1) * sizeof img->brokers[at]);
    img->nbrokers--;
    return 0;
}

int kiq_metadata_image_apply_fence_broker(kiq_metadata_image_t *img, const kiq_fence_broker_record_t *r)
{
    return set_fenced(img, r->id, r->epoch, true);
}

int kiq_metadata_image_apply_unfence_broker(kiq_metadata_image_t *img, const kiq_unfence_broker_record_t *r)
{
    return set_fenced(img, r->id, r->epoch, false);
}

size_t kiq_metadata_image_broker_count(const kiq_metadata_image_t *img) { return img->nbrokers; }

const kiq_broker_registration_t *kiq_metadata_image_broker_at(const kiq_metadata_image_t *img, size_t i)
{
    return i < img->nbrokers ? &img->brokers[i] : NULL;
}

const kiq_broker_registration_t *kiq_metadata_image_broker(const kiq_metadata_image_t *img, int32_t id)
{
    bool found;
    size_t at = broker_index(img, id, &found);
    return found ? &img->brokers[at] : NULL;
}

size_t kiq_metadata_image_live_brokers(const kiq_metadata_image_t *img, int32_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < img->nbrokers; i++) {
        if (img->brokers[i].fenced) continue;
        if (n < max) out[n] = img->brokers[i].id;
        n++;
    }
    return n;
}

/* ---- topics and partitions ---- */

static int name_cmp(const char *a, const char *b, size_t blen)
{
    size_t alen = strlen(a);
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c) return c;
    return alen < blen ? -1 : alen > blen;
}

static size_t topic_index(const kiq_metadata_image_t *img, const char *name, size_t len, bool *found)
{
    size_t lo = 0, hi = img->ntopics;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (name_cmp(img->topics[mid]->name, name, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < img->ntopics && name_cmp(img->topics[lo]->name, name, len) == 0;
    return lo;
}

static kiq_topic_image_t *topic_by_id(const kiq_metadata_image_t *img, const kiq_uuid_t *id)
{
    return kiq_str_map_get(img->by_id, id->b, sizeof id->b);
}

int kiq_metadata_image_apply_topic(kiq_metadata_image_t *img, const kiq_topic_record_t *r)
{
    char idt[23];
    uuid_text(&r->topic_id, idt);
    if (!r->name.p || r->name.len == 0) return kiq_error_set("topic %s without a name", idt);
    if (kiq_uuid_is_zero(&r->topic_id)) return kiq_error_set("topic " KIQ_STR_FMT " without an id", KIQ_STR_ARG(r->name));
    bool found;
    size_t at = topic_index(img, r->name.p, (size_t)r->name.len, &found);
    if (found) return kiq_error_set("topic " KIQ_STR_FMT " exists already", KIQ_STR_ARG(r->name));
    if (topic_by_id(img, &r->topic_id))
        return kiq_error_set("topic id %s of " KIQ_STR_FMT " is taken", idt, KIQ_STR_ARG(r->name));
    bool ok = true;
    kiq_topic_image_t *t = calloc(1, sizeof *t);
    if (!t) return kiq_error_set("out of memory");
    t->id = r->topic_id;
    t->name = dup_str(r->name, &ok);
    if (!ok || grow((void **)&img->topics, &img->topics_cap, img->ntopics + 1, sizeof *img->topics) != 0 ||
        kiq_str_map_put(img->by_id, t->id.b, sizeof t->id.b, t) != 0) {
        topic_free(t);
        return kiq_error_set("out of memory");
    }
    memmove(&img->topics[at + 1], &img->topics[at], (img->ntopics - at) * sizeof *img->topics);
    img->topics[at] = t;
    img->ntopics++;
    return 0;
}

/* The topic and partition a record names, or -1 with the reason. */
static int find_partition(kiq_metadata_image_t *img, const kiq_uuid_t *topic_id, int32_t partition,
                          kiq_topic_image_t **t)
{
    char idt[23];
    *t = topic_by_id(img, topic_id);
    if (!*t) {
        uuid_text(topic_id, idt);
        return kiq_error_set("no topic with id %s", idt);
    }
    if (partition < 0 || partition >= (*t)->npartitions)
        return kiq_error_set("topic %s has no partition %d", (*t)->name, (int)partition);
    return 0;
}

int kiq_metadata_image_apply_partition(kiq_metadata_image_t *img, const kiq_partition_record_t *r)
{
    kiq_topic_image_t *t = topic_by_id(img, &r->topic_id);
    if (!t) {
        char idt[23];
        uuid_text(&r->topic_id, idt);
        return kiq_error_set("partition %d of unknown topic id %s", (int)r->partition_id, idt);
    }
    if (r->partition_id < 0 || r->partition_id > t->npartitions)
        return kiq_error_set("partition %d of topic %s would leave a gap after partition %d", (int)r->partition_id,
                             t->name, (int)t->npartitions - 1);
    bool ok = true;
    kiq_partition_registration_t p = {
        .replicas = dup_ids(r->replicas, r->replicas_n, &ok),
        .nreplicas = r->replicas_n > 0 ? r->replicas_n : 0,
        .isr = dup_ids(r->isr, r->isr_n, &ok),
        .nisr = r->isr_n > 0 ? r->isr_n : 0,
        .removing_replicas = dup_ids(r->removing_replicas, r->removing_replicas_n, &ok),
        .nremoving = r->removing_replicas_n > 0 ? r->removing_replicas_n : 0,
        .adding_replicas = dup_ids(r->adding_replicas, r->adding_replicas_n, &ok),
        .nadding = r->adding_replicas_n > 0 ? r->adding_replicas_n : 0,
        .leader = r->leader,
        .leader_epoch = r->leader_epoch,
        .partition_epoch = r->partition_epoch,
        .leader_recovery_state = r->leader_recovery_state,
        .leader_offset = -1,
    };
    if (ok && r->partition_id == t->npartitions) {
        kiq_partition_registration_t *np = realloc(t->partitions, ((size_t)t->npartitions + 1) * sizeof *np);
        if (np) {
            t->partitions = np;
            t->npartitions++;
        } else {
            ok = false;
        }
    } else if (ok) {
        partition_clear(&t->partitions[r->partition_id]);
    }
    if (!ok) {
        partition_clear(&p);
        return kiq_error_set("out of memory");
    }
    t->partitions[r->partition_id] = p;
    return 0;
}

/* Replaces *ids / *n by a copy of the record's array when it is present
 * (n >= 0); the copies are made by the caller first, so this cannot fail. */
static void replace_ids(int32_t **ids, int32_t *n, int32_t *copy, int32_t rec_n)
{
    if (rec_n < 0) return;
    free(*ids);
    *ids = copy;
    *n = rec_n;
}

int kiq_metadata_image_apply_partition_change(kiq_metadata_image_t *img, const kiq_partition_change_record_t *r)
{
    kiq_topic_image_t *t;
    if (find_partition(img, &r->topic_id, r->partition_id, &t) != 0) return -1;
    kiq_partition_registration_t *p = &t->partitions[r->partition_id];
    bool ok = true;
    int32_t *isr = dup_ids(r->isr, r->isr_n, &ok);
    int32_t *replicas = dup_ids(r->replicas, r->replicas_n, &ok);
    int32_t *removing = dup_ids(r->removing_replicas, r->removing_replicas_n, &ok);
    int32_t *adding = dup_ids(r->adding_replicas, r->adding_replicas_n, &ok);
    if (!ok) {
        free(isr);
        free(replicas);
        free(removing);
        free(adding);
        return kiq_error_set("out of memory");
    }
    replace_ids(&p->isr, &p->nisr, isr, r->isr_n);
    replace_ids(&p->replicas, &p->nreplicas, replicas, r->replicas_n);
    replace_ids(&p->removing_replicas, &p->nremoving, removing, r->removing_replicas_n);
    replace_ids(&p->adding_replicas, &p->nadding, adding, r->adding_replicas_n);
    if (r->leader != KIQ_NO_LEADER_CHANGE) {
        p->leader = r->leader;
        p->leader_epoch++;
    }
    if (r->leader_recovery_state != -1) p->leader_recovery_state = r->leader_recovery_state;
    p->partition_epoch++;
    return 0;
}

static void config_remove_at(kiq_metadata_image_t *img, size_t i)
{
    config_clear(&img->configs[i]);
    memmove(&img->configs[i], &img->configs[i + 1], (img->nconfigs - i - 1) * sizeof *img->configs);
    img->nconfigs--;
}

int64_t kiq_metadata_image_next_producer_id(const kiq_metadata_image_t *img) { return img->next_producer_id; }

int kiq_metadata_image_apply_remove_topic(kiq_metadata_image_t *img, const kiq_remove_topic_record_t *r)
{
    kiq_topic_image_t *t = topic_by_id(img, &r->topic_id);
    if (!t) {
        char idt[23];
        uuid_text(&r->topic_id, idt);
        return kiq_error_set("cannot remove topic id %s: no such topic", idt);
    }
    bool found;
    size_t at = topic_index(img, t->name, strlen(t->name), &found);
    kiq_str_map_remove(img->by_id, t->id.b, sizeof t->id.b);
    memmove(&img->topics[at], &img->topics[at + 1], (img->ntopics - at - 1) * sizeof *img->topics);
    img->ntopics--;
    for (size_t i = img->nconfigs; i-- > 0;) {
        const kiq_config_entry_t *c = &img->configs[i];
        if (c->resource_type == KIQ_CONFIG_RESOURCE_TOPIC && strcmp(c->resource_name, t->name) == 0)
            config_remove_at(img, i);
    }
    topic_free(t);
    return 0;
}

size_t kiq_metadata_image_topic_count(const kiq_metadata_image_t *img) { return img->ntopics; }

const kiq_topic_image_t *kiq_metadata_image_topic_at(const kiq_metadata_image_t *img, size_t i)
{
    return i < img->ntopics ? img->topics[i] : NULL;
}

const kiq_topic_image_t *kiq_metadata_image_topic(const kiq_metadata_image_t *img, const char *name, size_t len)
{
    bool found;
    size_t at = topic_index(img, name, len, &found);
    return found ? img->topics[at] : NULL;
}

const kiq_topic_image_t *kiq_metadata_image_topic_by_id(const kiq_metadata_image_t *img, const kiq_uuid_t *id)
{
    return topic_by_id(img, id);
}

const kiq_partition_registration_t *kiq_metadata_image_partition(const kiq_metadata_image_t *img,
                                                                 const kiq_uuid_t *topic_id, int32_t partition)
{
    const kiq_topic_image_t *t = topic_by_id(img, topic_id);
    if (!t || partition < 0 || partition >= t->npartitions) return NULL;
    return &t->partitions[partition];
}

/* ---- configs ---- */

static bool str_is(kiq_str_t s, const char *c) { return kiq_str_eq(s, c); }

int kiq_metadata_image_apply_config(kiq_metadata_image_t *img, const kiq_config_record_t *r)
{
    if (!r->resource_name.p || !r->name.p) return kiq_error_set("config record without a resource or a name");
    size_t i = 0;
    while (i < img->nconfigs &&
           !(img->configs[i].resource_type == r->resource_type && str_is(r->resource_name, img->configs[i].resource_name) &&
             str_is(r->name, img->configs[i].name)))
        i++;
    if (!r->value.p) {
        if (i < img->nconfigs) config_remove_at(img, i);
        return 0;
    }
    bool ok = true;
    char *value = dup_str(r->value, &ok);
    if (!ok) return kiq_error_set("out of memory");
    if (i < img->nconfigs) {
        free(img->configs[i].value);
        img->configs[i].value = value;
        return 0;
    }
    kiq_config_entry_t c = {
        .resource_type = r->resource_type,
        .resource_name = dup_str(r->resource_name, &ok),
        .name = dup_str(r->name, &ok),
        .value = value,
    };
    if (!ok || grow((void **)&img->configs, &img->configs_cap, img->nconfigs + 1, sizeof c) != 0) {
        config_clear(&c);
        return kiq_error_set("out of memory");
    }
    img->configs[img->nconfigs++] = c;
    return 0;
}

size_t kiq_metadata_image_config_count(const kiq_metadata_image_t *img) { return img->nconfigs; }

const kiq_config_entry_t *kiq_metadata_image_config_at(const kiq_metadata_image_t *img, size_t i)
{
    return i < img->nconfigs ? &img->configs[i] : NULL;
}

const char *kiq_metadata_image_config(const kiq_metadata_image_t *img, int8_t resource_type,
                                      const char *resource_name, const char *name)
{
    for (size_t i = 0; i < img->nconfigs; i++) {
        const kiq_config_entry_t *c = &img->configs[i];
        if (c->resource_type == resource_type && strcmp(c->resource_name, resource_name) == 0 &&
            strcmp(c->name, name) == 0)
            return c->value;
    }
    return NULL;
}

/* ---- dispatch ---- */

static void stamp_leader(kiq_metadata_image_t *img, const kiq_uuid_t *topic_id, int32_t partition, int64_t offset)
{
    kiq_topic_image_t *t;
    if (find_partition(img, topic_id, partition, &t) == 0) t->partitions[partition].leader_offset = offset;
}

/* A credential a record carries, its sizes checked: a malformed one is
 * refused like any record that does not apply. */
static int apply_scram(kiq_metadata_image_t *img, const kiq_user_scram_credential_record_t *r)
{
    int m = kiq_scram_mech_of_wire(r->mechanism);
    if (m < 0) return kiq_error_set("UserScramCredentialRecord: unknown mechanism %d", r->mechanism);
    size_t kl = kiq_scram_key_len((enum kiq_scram_mech)m);
    if (!r->name.p || r->salt.len <= 0 || (size_t)r->salt.len > KIQ_SCRAM_MAX_SALT ||
        r->stored_key.len != (int32_t)kl || r->server_key.len != (int32_t)kl)
        return kiq_error_set("UserScramCredentialRecord: malformed credential");
    kiq_scram_credential_t c = {.iterations = r->iterations, .salt_len = (size_t)r->salt.len};
    memcpy(c.salt, r->salt.p, c.salt_len);
    memcpy(c.stored_key, r->stored_key.p, kl);
    memcpy(c.server_key, r->server_key.p, kl);
    if (kiq_scram_store_put(&img->scram, r->name.p, (size_t)r->name.len, r->mechanism, &c) != 0)
        return kiq_error_set("out of memory");
    return 0;
}

/* A binding as the record carries it, checked as a creation is: a
 * malformed one is refused like any record that does not apply. */
static int apply_acl(kiq_metadata_image_t *img, const kiq_access_control_entry_record_t *r)
{
    const char *bad = kiq_acl_invalid(r->resource_type, r->resource_name, r->pattern_type, r->principal, r->host,
                                      r->operation, r->permission_type);
    if (bad) return kiq_error_set("AccessControlEntryRecord: %s", bad);
    kiq_acl_t a = {r->id, r->resource_type, r->pattern_type, r->operation, r->permission_type,
                   strndup(r->resource_name.p, (size_t)r->resource_name.len),
                   strndup(r->principal.p, (size_t)r->principal.len), strndup(r->host.p, (size_t)r->host.len)};
    kiq_acl_store_remove(&img->acls, &r->id); /* a replayed record replaces its binding */
    int rc = a.resource_name && a.principal && a.host && kiq_acl_store_add(&img->acls, &a) == 0
                 ? 0
                 : kiq_error_set("out of memory");
    free(a.resource_name);
    free(a.principal);
    free(a.host);
    return rc;
}

int kiq_client_quota_entity_of(const kiq_client_quota_record_entity_t *parts, int32_t n, kiq_arena_t *a,
                               kiq_quota_entity_t *e)
{
    *e = (kiq_quota_entity_t){0};
    if (n <= 0) return kiq_error_set("a client quota entity names no entity type");
    for (int32_t i = 0; i < n; i++) {
        kiq_str_t t = parts[i].entity_type, name = parts[i].entity_name;
        bool user = t.len == 4 && memcmp(t.p, "user", 4) == 0;
        bool client = t.len == 9 && memcmp(t.p, "client-id", 9) == 0;
        if (!user && !client) return kiq_error_set("Unsupported quota entity type: %.*s", (int)t.len, t.p ? t.p : "");
        bool *has = user ? &e->has_user : &e->has_client;
        if (*has) return kiq_error_set("Duplicate quota entity type: %.*s", (int)t.len, t.p);
        *has = true;
        /* in the arena: the store copies what it keeps */
        char *copy = name.p ? kiq_arena_strndup(a, name.p, (size_t)name.len) : NULL;
        if (name.p && !copy) return kiq_error_set("out of memory");
        if (user) e->user = copy;
        else e->client_id = copy;
    }
    return 0;
}

int kiq_metadata_image_apply(kiq_metadata_image_t *img, int64_t offset, const kiq_metadata_record_t *r)
{
    int rc;
    switch (r->type) {
    case KIQ_MR_REGISTER_BROKER: rc = kiq_metadata_image_apply_register_broker(img, &r->m.register_broker); break;
    case KIQ_MR_TOPIC: rc = kiq_metadata_image_apply_topic(img, &r->m.topic); break;
    case KIQ_MR_PARTITION: rc = kiq_metadata_image_apply_partition(img, &r->m.partition); break;
    case KIQ_MR_CONFIG: rc = kiq_metadata_image_apply_config(img, &r->m.config); break;
    case KIQ_MR_PARTITION_CHANGE: rc = kiq_metadata_image_apply_partition_change(img, &r->m.partition_change); break;
    case KIQ_MR_UNREGISTER_BROKER:
        rc = kiq_metadata_image_apply_unregister_broker(img, &r->m.unregister_broker);
        break;
    case KIQ_MR_FENCE_BROKER: rc = kiq_metadata_image_apply_fence_broker(img, &r->m.fence_broker); break;
    case KIQ_MR_UNFENCE_BROKER: rc = kiq_metadata_image_apply_unfence_broker(img, &r->m.unfence_broker); break;
    case KIQ_MR_REMOVE_TOPIC: rc = kiq_metadata_image_apply_remove_topic(img, &r->m.remove_topic); break;
    case KIQ_MR_PRODUCER_IDS:
        /* blocks only move up: a replayed older one changes nothing */
        if (r->m.producer_ids.next_producer_id > img->next_producer_id)
            img->next_producer_id = r->m.producer_ids.next_producer_id;
        rc = 0;
        break;
    case KIQ_MR_FEATURE_LEVEL: {
        /* a feature this build does not know is a newer writer's: kept
         * out of the image, which answers only for the ones it serves */
        int f = kiq_feature_find(r->m.feature_level.name);
        if (f >= 0) {
            img->features.level[f] = r->m.feature_level.feature_level;
            img->features.epoch = offset;
        }
        rc = 0;
        break;
    }
    case KIQ_MR_USER_SCRAM_CREDENTIAL: rc = apply_scram(img, &r->m.user_scram_credential); break;
    case KIQ_MR_CLIENT_QUOTA: {
        const kiq_client_quota_record_t *q = &r->m.client_quota;
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_quota_entity_t e;
        int key = q->key.p ? kiq_quota_key_of(q->key.p, (size_t)q->key.len) : -1;
        rc = kiq_client_quota_entity_of(q->entity, q->entity_n, &a, &e);
        if (rc == 0 && key < 0) rc = kiq_error_set("ClientQuotaRecord: unknown quota key");
        if (rc == 0 && kiq_client_quota_store_set(&img->quotas, &e, key, q->value, q->remove) != 0)
            rc = kiq_error_set("out of memory");
        kiq_arena_reset(&a);
        break;
    }
    case KIQ_MR_REMOVE_USER_SCRAM_CREDENTIAL: {
        const kiq_remove_user_scram_credential_record_t *d = &r->m.remove_user_scram_credential;
        kiq_scram_store_remove(&img->scram, d->name.p ? d->name.p : "", d->name.p ? (size_t)d->name.len : 0,
                               d->mechanism);
        rc = 0;
        break;
    }
    case KIQ_MR_ACCESS_CONTROL_ENTRY: rc = apply_acl(img, &r->m.access_control_entry); break;
    case KIQ_MR_REMOVE_ACCESS_CONTROL_ENTRY:
        kiq_acl_store_remove(&img->acls, &r->m.remove_access_control_entry.id);
        rc = 0;
        break;
    case KIQ_MR_DELEGATION_TOKEN: rc = kiq_dtoken_store_put(&img->tokens, &r->m.delegation_token); break;
    case KIQ_MR_REMOVE_DELEGATION_TOKEN: {
        const kiq_str_t *id = &r->m.remove_delegation_token.token_id;
        kiq_dtoken_store_remove(&img->tokens, id->p ? id->p : "", id->p ? (size_t)id->len : 0);
        rc = 0;
        break;
    }
    default: return kiq_error_set("metadata record type %d cannot be applied", r->type);
    }
    if (rc == 0) img->offset = offset;
    /* a new partition's leader too: named to clients only once it took
     * the record (a produce it gets before would be refused) */
    if (rc == 0 && r->type == KIQ_MR_PARTITION_CHANGE && r->m.partition_change.leader != KIQ_NO_LEADER_CHANGE)
        stamp_leader(img, &r->m.partition_change.topic_id, r->m.partition_change.partition_id, offset);
    else if (rc == 0 && r->type == KIQ_MR_PARTITION)
        stamp_leader(img, &r->m.partition.topic_id, r->m.partition.partition_id, offset);
    return rc;
}

int64_t kiq_metadata_image_offset(const kiq_metadata_image_t *img) { return img->offset; }

const kiq_features_t *kiq_metadata_image_features(const kiq_metadata_image_t *img) { return &img->features; }

const kiq_scram_store_t *kiq_metadata_image_scram(const kiq_metadata_image_t *img) { return &img->scram; }

const kiq_acl_store_t *kiq_metadata_image_acls(const kiq_metadata_image_t *img) { return &img->acls; }
const kiq_client_quota_store_t *kiq_metadata_image_quotas(const kiq_metadata_image_t *img) { return &img->quotas; }
const kiq_dtoken_store_t *kiq_metadata_image_tokens(const kiq_metadata_image_t *img) { return &img->tokens; }

/* ---- the image as records (a snapshot) ---- */

static kiq_str_t str_of(const char *s) { return s ? (kiq_str_t){(char *)s, (int32_t)strlen(s)} : KIQ_STR_NULL; }

static kiq_metadata_record_t *next_record(kiq_metadata_record_t *out, size_t *n, int16_t type)
{
    kiq_metadata_record_t *r = &out[(*n)++];
    kiq_metadata_record_init(r, type);
    return r;
}

int kiq_metadata_image_records(const kiq_metadata_image_t *img, kiq_arena_t *arena, kiq_metadata_record_t **out,
                               size_t *n)
{
    size_t cap = img->nbrokers + img->nconfigs + 1 + KIQ_FEATURE__COUNT + img->scram.n + img->acls.n +
                 img->quotas.n * KIQ_QUOTA__COUNT + img->tokens.n;
    for (size_t t = 0; t < img->ntopics; t++) cap += 1 + (size_t)img->topics[t]->npartitions;
    kiq_metadata_record_t *rs = kiq_arena_calloc(arena, cap, sizeof *rs);
    *n = 0;
    /* metadata.version first, as in Kafka's logs and snapshots: it says
     * which record versions follow */
    for (int f = 0; f < KIQ_FEATURE__COUNT; f++) {
        if (img->features.level[f] == 0) continue;
        kiq_feature_level_record_t *r = &next_record(rs, n, KIQ_MR_FEATURE_LEVEL)->m.feature_level;
        r->name = str_of(kiq_feature_defs[f].name);
        r->feature_level = img->features.level[f];
    }
    for (size_t i = 0; i < img->nbrokers; i++) {
        const kiq_broker_registration_t *b = &img->brokers[i];
        kiq_register_broker_record_t *r = &next_record(rs, n, KIQ_MR_REGISTER_BROKER)->m.register_broker;
        r->broker_id = b->id;
        r->incarnation_id = b->incarnation_id;
        r->broker_epoch = b->epoch;
        r->end_points_n = b->nendpoints;
        r->end_points = kiq_arena_calloc(arena, (size_t)b->nendpoints + 1, sizeof *r->end_points);
        for (int32_t e = 0; e < b->nendpoints; e++) {
            kiq_register_broker_record_end_points_init(&r->end_points[e]);
            r->end_points[e].name = str_of(b->endpoints[e].name);
            r->end_points[e].host = str_of(b->endpoints[e].host);
            r->end_points[e].port = b->endpoints[e].port;
            r->end_points[e].security_protocol = b->endpoints[e].security_protocol;
        }
        r->rack = str_of(b->rack);
        r->fenced = b->fenced;
        r->in_controlled_shutdown = b->in_controlled_shutdown;
        r->log_dirs_n = b->nlog_dirs;
        r->log_dirs = b->log_dirs;
    }
    for (size_t t = 0; t < img->ntopics; t++) {
        const kiq_topic_image_t *ti = img->topics[t];
        kiq_topic_record_t *tr = &next_record(rs, n, KIQ_MR_TOPIC)->m.topic;
        tr->name = str_of(ti->name);
        tr->topic_id = ti->id;
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            kiq_partition_record_t *r = &next_record(rs, n, KIQ_MR_PARTITION)->m.partition;
            r->partition_id = p;
            r->topic_id = ti->id;
            r->replicas = pr->replicas;
            r->replicas_n = pr->nreplicas;
            r->isr = pr->isr;
            r->isr_n = pr->nisr;
            r->removing_replicas = pr->removing_replicas;
            r->removing_replicas_n = pr->nremoving;
            r->adding_replicas = pr->adding_replicas;
            r->adding_replicas_n = pr->nadding;
            r->leader = pr->leader;
            r->leader_epoch = pr->leader_epoch;
            r->partition_epoch = pr->partition_epoch;
            r->leader_recovery_state = pr->leader_recovery_state;
        }
    }
    for (size_t i = 0; i < img->nconfigs; i++) {
        const kiq_config_entry_t *c = &img->configs[i];
        kiq_config_record_t *r = &next_record(rs, n, KIQ_MR_CONFIG)->m.config;
        r->resource_type = c->resource_type;
        r->resource_name = str_of(c->resource_name);
        r->name = str_of(c->name);
        r->value = str_of(c->value);
    }
    for (size_t i = 0; i < img->scram.n; i++) {
        const kiq_scram_entry_t *e = &img->scram.entries[i];
        kiq_user_scram_credential_record_t *r = &next_record(rs, n, KIQ_MR_USER_SCRAM_CREDENTIAL)->m.user_scram_credential;
        size_t kl = kiq_scram_key_len((enum kiq_scram_mech)kiq_scram_mech_of_wire(e->mechanism));
        r->name = str_of(e->user);
        r->mechanism = e->mechanism;
        r->salt = (kiq_bytes_t){e->cred.salt, (int32_t)e->cred.salt_len};
        r->stored_key = (kiq_bytes_t){e->cred.stored_key, (int32_t)kl};
        r->server_key = (kiq_bytes_t){e->cred.server_key, (int32_t)kl};
        r->iterations = e->cred.iterations;
    }
    for (size_t i = 0; i < img->acls.n; i++) {
        const kiq_acl_t *a = &img->acls.acls[i];
        kiq_access_control_entry_record_t *r = &next_record(rs, n, KIQ_MR_ACCESS_CONTROL_ENTRY)->m.access_control_entry;
        r->id = a->id;
        r->resource_type = a->resource_type;
        r->resource_name = str_of(a->resource_name);
        r->pattern_type = a->pattern_type;
        r->principal = str_of(a->principal);
        r->host = str_of(a->host);
        r->operation = a->operation;
        r->permission_type = a->permission;
    }
    for (size_t i = 0; i < img->quotas.n; i++) {
        const kiq_client_quota_entry_t *q = &img->quotas.entries[i];
        for (int k = 0; k < KIQ_QUOTA__COUNT; k++) {
            if (!(q->set & (1u << k))) continue;
            kiq_client_quota_record_t *r = &next_record(rs, n, KIQ_MR_CLIENT_QUOTA)->m.client_quota;
            r->entity = kiq_arena_calloc(arena, 2, sizeof *r->entity);
            r->entity_n = 0;
            if (q->entity.has_user) {
                kiq_client_quota_record_entity_init(&r->entity[r->entity_n]);
                r->entity[r->entity_n].entity_type = str_of("user");
                r->entity[r->entity_n++].entity_name = str_of(q->entity.user);
            }
            if (q->entity.has_client) {
                kiq_client_quota_record_entity_init(&r->entity[r->entity_n]);
                r->entity[r->entity_n].entity_type = str_of("client-id");
                r->entity[r->entity_n++].entity_name = str_of(q->entity.client_id);
            }
            r->key = str_of(kiq_quota_key_names[k]);
            r->value = q->value[k];
        }
    }
    for (size_t i = 0; i < img->tokens.n; i++) {
        const kiq_dtoken_t *t = &img->tokens.tokens[i];
        kiq_delegation_token_record_t *r = &next_record(rs, n, KIQ_MR_DELEGATION_TOKEN)->m.delegation_token;
        r->owner = str_of(t->owner);
        r->requester = str_of(t->requester);
        r->renewers = kiq_arena_calloc(arena, (size_t)t->nrenewers + 1, sizeof *r->renewers);
        for (int j = 0; j < t->nrenewers; j++) r->renewers[j] = str_of(t->renewers[j]);
        r->renewers_n = t->nrenewers;
        r->issue_timestamp = t->issue_ms;
        r->max_timestamp = t->max_ms;
        r->expiration_timestamp = t->expiry_ms;
        r->token_id = str_of(t->id);
    }
    if (img->next_producer_id > 0) {
        kiq_producer_ids_record_t *r = &next_record(rs, n, KIQ_MR_PRODUCER_IDS)->m.producer_ids;
        r->broker_id = -1;
        r->broker_epoch = -1;
        r->next_producer_id = img->next_producer_id;
    }
    *out = rs;
    return 0;
}

/* ---- placement and election ---- */

int kiq_assign_replicas_rack_unaware(const int32_t *brokers, int32_t nbrokers, int32_t first_partition,
                                     int32_t partitions, int32_t replication_factor, int32_t start_index,
                                     int32_t replica_shift, int32_t *out)
{
    if (partitions < 1) {
        kiq_error_set("number of partitions must be larger than 0, not %d", (int)partitions);
        return KIQ_ERR_INVALID_PARTITIONS;
    }
    if (replication_factor < 1) {
        kiq_error_set("replication factor must be larger than 0, not %d", (int)replication_factor);
        return KIQ_ERR_INVALID_REPLICATION_FACTOR;
    }
    if (start_index < 0 || replica_shift < 0)
        return kiq_error_set("start index %d and replica shift %d must not be negative", (int)start_index,
                             (int)replica_shift);
    if (replication_factor > nbrokers) {
        kiq_error_set("replication factor %d larger than the %d available brokers", (int)replication_factor,
                      (int)nbrokers);
        return KIQ_ERR_INVALID_REPLICATION_FACTOR;
    }
    int64_t n = nbrokers;
    int64_t shift = replica_shift;
    int64_t p = first_partition > 0 ? first_partition : 0;
    for (int32_t i = 0; i < partitions; i++, p++) {
        /* a new round over the brokers: followers start one further away */
        if (p > 0 && p % n == 0) shift++;
        int64_t first = (p + start_index) % n;
        int32_t *row = &out[(size_t)i * (size_t)replication_factor];
        row[0] = brokers[first];
        for (int32_t j = 0; j < replication_factor - 1; j++)
            row[j + 1] = brokers[(first + 1 + (shift + j) % (n - 1)) % n];
    }
    return 0;
}

int kiq_metadata_image_assign_replicas(const kiq_metadata_image_t *img, int32_t first_partition,
                                       int32_t partitions, int32_t replication_factor, int32_t start_index,
                                       int32_t *out)
{
    size_t n = kiq_metadata_image_live_brokers(img, NULL, 0);
    int32_t *live = malloc((n ? n : 1) * sizeof *live);
    if (!live) return kiq_error_set("out of memory");
    kiq_metadata_image_live_brokers(img, live, n);
    int32_t start = start_index, shift = start_index;
    if (start_index < 0 && n > 0) {
        uint32_t r[2];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            free(live);
            return kiq_error_errno("getrandom");
        }
        start = (int32_t)(r[0] % n);
        shift = (int32_t)(r[1] % n);
    }
    int rc = kiq_assign_replicas_rack_unaware(live, (int32_t)n, first_partition, partitions, replication_factor,
                                              start, shift, out);
    free(live);
    return rc;
}

static bool contains(const int32_t *ids, size_t n, int32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

int32_t kiq_metadata_image_elect_leader(const kiq_partition_registration_t *p, const int32_t *live, size_t nlive,
                                        bool unclean_allowed, bool *unclean)
{
    if (unclean) *unclean = false;
    for (int32_t i = 0; i < p->nreplicas; i++) {
        int32_t r = p->replicas[i];
        if (contains(p->isr, (size_t)p->nisr, r) && contains(live, nlive, r)) return r;
    }
    if (!unclean_allowed) return KIQ_NO_LEADER;
    for (int32_t i = 0; i < p->nreplicas; i++) {
        if (contains(live, nlive, p->replicas[i])) {
            if (unclean) *unclean = true;
            return p->replicas[i];
        }
    }
    return KIQ_NO_LEADER;
}
