/* The registry of topics and partitions (log/topics.h): topics by name
 * and id, reference-counted, deleted once unused; their partition slots
 * and dynamic configs. */
#include "log/topics_internal.h"

int kiq_lm_find_index(kiq_topics_t *t, kiq_str_t name, bool *found)
{
    int lo = 0, hi = t->count;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const char *n = t->topics[mid]->name;
        size_t nl = strlen(n);
        int c = memcmp(n, name.p, nl < (size_t)name.len ? nl : (size_t)name.len);
        if (c == 0) c = nl < (size_t)name.len ? -1 : nl > (size_t)name.len ? 1 : 0;
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    *found = false;
    return lo;
}

void kiq_lm_topic_destroy(kiq_topic_t *topic)
{
    bool remove = atomic_load(&topic->deleted);
    kiq_lm_free_retired(topic, remove);
    int32_t n = topic->npartitions;
    for (int32_t i = 0; i < n; i++) {
        kiq_partition_log_t *l = atomic_load(&topic->partitions[i]->log);
        if (!l) continue;
        if (remove) {
            if (kiq_partition_log_delete(l) != 0)
                KIQ_ERROR("deleting %s-%d: %s", topic->name, i, kiq_error_get());
        } else {
            kiq_partition_log_free(l);
        }
    }
    if (remove) KIQ_INFO("deleted the files of topic %s", topic->name);
    kiq_topics_t *t = topic->doomed_in;
    if (t) {
        pthread_rwlock_wrlock(&t->lock);
        kiq_topic_t **pp = &t->doomed;
        while (*pp != topic) pp = &(*pp)->next_doomed;
        *pp = topic->next_doomed;
        pthread_rwlock_unlock(&t->lock);
    }
    kiq_topic_configs_clear(&topic->configs);
    pthread_mutex_destroy(&topic->config_mu);
    pthread_mutex_destroy(&topic->host_mu);
    for (int32_t i = 0; i < n; i++) {
        free(topic->partitions[i]->dir);
        if (topic->partitions[i]->replica) topic->states.destroy(topic->states.ctx, topic->partitions[i]->replica);
        free(topic->partitions[i]);
    }
    while (topic->slots) {
        struct kiq_partition_slots *older = topic->slots->older;
        free(topic->slots);
        topic->slots = older;
    }
    free(topic->name);
    free(topic);
}

void kiq_topic_unref(kiq_topic_t *topic)
{
    if (topic && atomic_fetch_sub(&topic->refs, 1) == 1) kiq_lm_topic_destroy(topic);
}

/* The partitions get their directories with kiq_lm_place_partition. */
/* Partition slots from..n-1 of topic, new and unplaced, into slots->p
 * (whose first `from` entries the caller fills). -1 when out of memory,
 * with nothing allocated. */
struct kiq_partition_slots *kiq_lm_slots_alloc(const kiq_topics_t *t, kiq_topic_t *topic, int32_t from, int32_t n)
{
    struct kiq_partition_slots *slots = calloc(1, sizeof *slots + (size_t)n * sizeof slots->p[0]);
    if (!slots) return NULL;
    for (int32_t i = from; i < n; i++) {
        kiq_partition_t *p = calloc(1, sizeof *p);
        if (!p) {
            for (int32_t j = from; j < i; j++) {
                if (slots->p[j]->replica) t->states.destroy(t->states.ctx, slots->p[j]->replica);
                free(slots->p[j]);
            }
            free(slots);
            return NULL;
        }
        p->topic = topic;
        p->index = i;
        atomic_init(&p->log, NULL);
        atomic_init(&p->dir_index, -1);
        slots->p[i] = p;
        if (t->states.create && !(p->replica = t->states.create(t->states.ctx, p))) {
            free(p);
            for (int32_t j = from; j < i; j++) {
                t->states.destroy(t->states.ctx, slots->p[j]->replica);
                free(slots->p[j]);
            }
            free(slots);
            return NULL;
        }
    }
    return slots;
}

kiq_topic_t *kiq_lm_topic_alloc(const kiq_topics_t *t, const char *name, int32_t npartitions)
{
    kiq_topic_t *topic = calloc(1, sizeof *topic);
    if (!topic) return NULL;
    topic->name = strdup(name);
    topic->slots = topic->name ? kiq_lm_slots_alloc(t, topic, 0, npartitions) : NULL;
    if (!topic->slots) {
        free(topic->name);
        free(topic);
        return NULL;
    }
    atomic_init(&topic->partitions, topic->slots->p);
    atomic_init(&topic->npartitions, npartitions);
    topic->replication_factor = 1;
    atomic_init(&topic->refs, 1);
    atomic_init(&topic->deleted, false);
    pthread_mutex_init(&topic->config_mu, NULL);
    pthread_mutex_init(&topic->host_mu, NULL);
    atomic_init(&topic->max_message_bytes, -1);
    atomic_init(&topic->log_append_time, -1);
    atomic_init(&topic->timestamp_before_max_ms, -1);
    atomic_init(&topic->timestamp_after_max_ms, -1);
    atomic_init(&topic->min_insync_replicas, -1);
    atomic_init(&topic->max_decompressed_message_bytes, -1);
    atomic_init(&topic->compacted, -1);
    topic->states = t->states;
    return topic;
}

int kiq_lm_insert_topic(kiq_topics_t *t, kiq_topic_t *topic, int at)
{
    if (t->count == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        kiq_topic_t **n = realloc(t->topics, (size_t)cap * sizeof *n);
        if (!n) return kiq_error_set("out of memory");
        t->topics = n;
        t->cap = cap;
    }
    memmove(&t->topics[at + 1], &t->topics[at], (size_t)(t->count - at) * sizeof *t->topics);
    t->topics[at] = topic;
    t->count++;
    return 0;
}

int kiq_topics_set_partition_states(kiq_topics_t *t, const kiq_partition_state_ops_t *ops)
{
    t->states = *ops;
    for (int i = 0; i < t->count; i++) {
        kiq_topic_t *topic = t->topics[i];
        topic->states = *ops;
        for (int32_t p = 0; p < topic->npartitions; p++)
            if (!(topic->partitions[p]->replica = ops->create(ops->ctx, topic->partitions[p])))
                return kiq_error_set("out of memory");
    }
    return 0;
}

kiq_topic_t *kiq_topics_get(kiq_topics_t *t, kiq_str_t name)
{
    if (!name.p) return NULL;
    pthread_rwlock_rdlock(&t->lock);
    bool found;
    int i = kiq_lm_find_index(t, name, &found);
    kiq_topic_t *topic = found ? t->topics[i] : NULL;
    if (topic) atomic_fetch_add(&topic->refs, 1);
    pthread_rwlock_unlock(&t->lock);
    return topic;
}

kiq_topic_t *kiq_topics_get_by_id(kiq_topics_t *t, const kiq_uuid_t *id)
{
    kiq_topic_t *topic = NULL;
    pthread_rwlock_rdlock(&t->lock);
    for (int i = 0; i < t->count && !topic; i++)
        if (memcmp(t->topics[i]->id.b, id->b, 16) == 0) topic = t->topics[i];
    if (topic) atomic_fetch_add(&topic->refs, 1);
    pthread_rwlock_unlock(&t->lock);
    return topic;
}

/* Under the registry lock. */
static bool is_doomed(kiq_topics_t *t, kiq_str_t name)
{
    for (kiq_topic_t *d = t->doomed; d; d = d->next_doomed)
        if (kiq_str_eq(name, d->name)) return true;
    return false;
}

int kiq_topics_create(kiq_topics_t *t, kiq_str_t name, int32_t partitions,
                      int16_t replication_factor, bool validate_only)
{
    return kiq_topics_create_with_configs(t, name, partitions, replication_factor, NULL, validate_only);
}

/* Creates a topic with npartitions slots, the logs of those hosted (all
 * when hosted is NULL), its id given or random (id NULL). */
static int create_topic(kiq_topics_t *t, kiq_str_t name, const kiq_uuid_t *id, int32_t partitions,
                        int16_t replication_factor, const bool *hosted, const kiq_topic_configs_t *configs,
                        bool validate_only)
{
    const char *why;
    if (!kiq_topic_name_valid(name, &why)) {
        kiq_error_set("%s", why);
        return KIQ_ERR_INVALID_TOPIC_EXCEPTION;
    }
    bool any_hosted = false;
    for (int32_t i = 0; i < partitions && !any_hosted; i++) any_hosted = !hosted || hosted[i];
    pthread_rwlock_wrlock(&t->lock);
    bool found;
    int at = kiq_lm_find_index(t, name, &found);
    int rc = KIQ_ERR_NONE;
    if (found) {
        kiq_error_set("Topic '%.*s' already exists.", name.len, name.p);
        rc = KIQ_ERR_TOPIC_ALREADY_EXISTS;
    } else if (is_doomed(t, name)) {
        kiq_error_set("Topic '%.*s' is marked for deletion.", name.len, name.p);
        rc = KIQ_ERR_TOPIC_ALREADY_EXISTS;
    } else if (any_hosted && kiq_lm_pick_dir(t) < 0) {
        if (t->ndirs == 1) kiq_error_set("Log directory %s is offline", t->dirs[0].path);
        else kiq_error_set("Every log directory is offline");
        rc = KIQ_ERR_KAFKA_STORAGE_ERROR;
    } else if (!validate_only) {
        char cname[256];
        snprintf(cname, sizeof cname, "%.*s", name.len, name.p);
        kiq_topic_t *topic = kiq_lm_topic_alloc(t, cname, partitions);
        bool placed = topic != NULL;
        for (int32_t i = 0; placed && i < partitions; i++)
            if (!hosted || hosted[i]) placed = kiq_lm_place_partition(t, topic->partitions[i], kiq_lm_pick_dir(t)) == 0;
        if (placed && id) topic->id = *id;
        /* saved even when empty: that clears what a lost delete left */
        if (!placed || (!id && kiq_uuid_random(&topic->id) != 0) ||
            (configs && kiq_topic_configs_copy(&topic->configs, configs) != 0) ||
            kiq_topic_config_store_save(t->store, cname, &topic->configs) != 0 ||
            kiq_lm_open_partition_logs(t, topic, true) != 0 ||
            kiq_lm_insert_topic(t, topic, at) != 0) {
            KIQ_ERROR("cannot create topic %s: %s", cname, kiq_error_get());
            if (topic) {
                kiq_topic_config_store_remove(t->store, cname);
                kiq_lm_unplace_topic(t, topic);
                atomic_store(&topic->deleted, true);
                kiq_lm_topic_destroy(topic);
            }
            rc = KIQ_ERR_KAFKA_STORAGE_ERROR;
        } else {
            topic->replication_factor = replication_factor;
            for (int d = 0; d < t->ndirs; d++)
                for (int32_t i = 0; i < partitions; i++)
                    if (topic->partitions[i]->dir_index == d) {
                        kiq_fsync_dir(t->dirs[d].path);
                        break;
                    }
            KIQ_INFO("created topic %s with %d partition(s)", cname, partitions);
        }
    }
    pthread_rwlock_unlock(&t->lock);
    return rc;
}

int kiq_topics_create_with_configs(kiq_topics_t *t, kiq_str_t name, int32_t partitions,
                                   int16_t replication_factor, const kiq_topic_configs_t *configs,
                                   bool validate_only)
{
    return create_topic(t, name, NULL, partitions, replication_factor, NULL, configs, validate_only);
}

int kiq_topics_create_hosted(kiq_topics_t *t, kiq_str_t name, const kiq_uuid_t *id, int32_t npartitions,
                             int16_t replication_factor, const bool *hosted, const kiq_topic_configs_t *configs)
{
    if (npartitions < 1) {
        kiq_error_set("Number of partitions must be at least 1, not %d", npartitions);
        return KIQ_ERR_INVALID_PARTITIONS;
    }
    return create_topic(t, name, id, npartitions, replication_factor, hosted, configs, false);
}

/* Under host_mu: whether any partition log of the topic has files. */
static bool holds_files(kiq_topic_t *topic)
{
    for (int32_t i = 0; i < topic->npartitions; i++)
        if (atomic_load(&topic->partitions[i]->log)) return true;
    for (const kiq_retired_log_t *e = topic->retired; e; e = e->next)
        if (!e->deleted) return true;
    return false;
}

bool kiq_topic_hosts_any(kiq_topic_t *topic)
{
    int32_t n = atomic_load(&topic->npartitions);
    for (int32_t i = 0; i < n; i++)
        if (atomic_load(&topic->partitions[i]->log)) return true;
    return false;
}

int kiq_topics_delete(kiq_topics_t *t, kiq_topic_t *topic)
{
    /* host_mu: hosting and the reaping of retired logs see a steady
     * deleted flag */
    pthread_mutex_lock(&topic->host_mu);
    pthread_rwlock_wrlock(&t->lock);
    bool found;
    int i = kiq_lm_find_index(t, KIQ_STR(topic->name), &found);
    if (!found || t->topics[i] != topic) {
        pthread_rwlock_unlock(&t->lock);
        pthread_mutex_unlock(&topic->host_mu);
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    memmove(&t->topics[i], &t->topics[i + 1], (size_t)(t->count - i - 1) * sizeof *t->topics);
    t->count--;
    kiq_lm_unplace_topic(t, topic);
    atomic_store(&topic->deleted, true);
    /* Doomed (its name taken until its files are gone) only while it holds
     * files: a topic whose partitions were all deleted one by one (a
     * cluster's StopReplica) leaves its name free for a new topic at once. */
    if (holds_files(topic)) {
        topic->doomed_in = t;
        topic->next_doomed = t->doomed;
        t->doomed = topic;
    }
    pthread_rwlock_unlock(&t->lock);
    pthread_mutex_unlock(&topic->host_mu);
    /* after `deleted` is set, so no config change can save it again */
    pthread_mutex_lock(&topic->config_mu);
    if (kiq_topic_config_store_remove(t->store, topic->name) != 0)
        KIQ_ERROR("removing the configs of topic %s: %s", topic->name, kiq_error_get());
    pthread_mutex_unlock(&topic->config_mu);
    KIQ_INFO("deleted topic %s", topic->name);
    kiq_topic_unref(topic); /* the registry's reference */
    return KIQ_ERR_NONE;
}

kiq_topic_t **kiq_topics_list(kiq_topics_t *t, int *count)
{
    pthread_rwlock_rdlock(&t->lock);
    kiq_topic_t **list = malloc((size_t)(t->count ? t->count : 1) * sizeof *list);
    *count = 0;
    if (list) {
        for (int i = 0; i < t->count; i++) {
            list[i] = t->topics[i];
            atomic_fetch_add(&list[i]->refs, 1);
        }
        *count = t->count;
    }
    pthread_rwlock_unlock(&t->lock);
    return list;
}

void kiq_topics_list_free(kiq_topic_t **list, int count)
{
    for (int i = 0; i < count; i++) kiq_topic_unref(list[i]);
    free(list);
}

void kiq_topics_set_observers(kiq_topics_t *t, const kiq_observers_t *observers, int32_t broker)
{
    t->observers = observers;
    t->broker = broker;
}

const kiq_observers_t *kiq_topics_observers(const kiq_topics_t *t, int32_t *broker)
{
    *broker = t->broker;
    return t->observers;
}

void kiq_topics_set_append_listener(kiq_topics_t *t, void (*fn)(void *ctx, const char *topic, int32_t partition),
                                    void *ctx)
{
    t->on_append = fn;
    t->on_append_ctx = ctx;
}

void kiq_topics_notify_append(kiq_topics_t *t, const char *topic, int32_t partition)
{
    if (t->on_append) t->on_append(t->on_append_ctx, topic, partition);
}

int kiq_topic_configs_snapshot(kiq_topic_t *topic, kiq_topic_configs_t *out)
{
    pthread_mutex_lock(&topic->config_mu);
    int rc = kiq_topic_configs_copy(out, &topic->configs);
    pthread_mutex_unlock(&topic->config_mu);
    return rc;
}

void kiq_topics_set_log_config(kiq_topics_t *t, const kiq_log_config_t *cfg)
{
    pthread_mutex_lock(&t->log_cfg_mu);
    bool clean = t->log_cfg.clean_shutdown;
    t->log_cfg = *cfg;
    t->log_cfg.clean_shutdown = clean;
    pthread_mutex_unlock(&t->log_cfg_mu);
    int count;
    kiq_topic_t **list = kiq_topics_list(t, &count);
    for (int i = 0; i < count; i++) {
        kiq_topic_t *topic = list[i];
        /* config_mu: a log hosted meanwhile reads the new settings */
        pthread_mutex_lock(&topic->config_mu);
        kiq_log_config_t lc;
        kiq_lm_topic_log_config(t, &topic->configs, &lc);
        int32_t n = topic->npartitions;
        for (int32_t p = 0; p < n; p++) {
            kiq_partition_log_t *l = atomic_load(&topic->partitions[p]->log);
            if (l) kiq_partition_log_set_config(l, &lc);
        }
        pthread_mutex_unlock(&topic->config_mu);
    }
    kiq_topics_list_free(list, count);
}

int kiq_topics_update_configs(kiq_topics_t *t, kiq_topic_t *topic,
                              int (*edit)(kiq_topic_configs_t *cfg, void *ctx), void *ctx,
                              bool validate_only)
{
    kiq_topic_configs_t next = {0};
    pthread_mutex_lock(&topic->config_mu);
    int rc = KIQ_ERR_NONE;
    if (atomic_load(&topic->deleted)) {
        kiq_error_set("Topic %s does not exist", topic->name);
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    } else if (kiq_topic_configs_copy(&next, &topic->configs) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    } else {
        rc = edit(&next, ctx);
    }
    if (rc == KIQ_ERR_NONE && !validate_only) {
        if (kiq_topic_config_store_save(t->store, topic->name, &next) != 0) {
            KIQ_ERROR("cannot save the configs of topic %s: %s", topic->name, kiq_error_get());
            rc = KIQ_ERR_KAFKA_STORAGE_ERROR;
        } else {
            kiq_topic_configs_t old = topic->configs;
            topic->configs = next;
            next = old;
            kiq_lm_apply_hot_configs(topic);
            kiq_log_config_t cfg;
            kiq_lm_topic_log_config(t, &topic->configs, &cfg);
            /* a log hosted meanwhile read the configs under this lock */
            for (int32_t i = 0; i < topic->npartitions; i++) {
                kiq_partition_log_t *l = atomic_load(&topic->partitions[i]->log);
                if (l) kiq_partition_log_set_config(l, &cfg);
            }
            KIQ_INFO("changed the configs of topic %s", topic->name);
        }
    }
    pthread_mutex_unlock(&topic->config_mu);
    kiq_topic_configs_clear(&next);
    return rc;
}
