/* The group coordinator; see group_coordinator.h. The rules follow Kafka's
 * GroupCoordinator: who may join, when a rebalance starts and ends, which
 * errors a stale or unknown member gets. This file: the state both share,
 * the internal topic, the timer thread, lifecycle and inspection. */
#include "group/coordinator_internal.h"

#include <strings.h>

#include "core/coordinator_key.h"
#include "core/worker.h"

/* ---- helpers ---- */

kiq_str_t kiq_gc_astr(kiq_request_t *r, const char *s) { return s ? kiq_request_str(r, s) : KIQ_STR_NULL; }

bool kiq_gc_str_eq(const char *s, kiq_str_t k)
{
    return s && k.p && strlen(s) == (size_t)k.len && memcmp(s, k.p, (size_t)k.len) == 0;
}

bool kiq_gc_str_empty(kiq_str_t s) { return !s.p || s.len == 0; }

char *kiq_gc_dup_str(kiq_str_t s) { return s.p ? strndup(s.p, (size_t)s.len) : NULL; }

/* A copy of all of s's bytes, NULs included (commit metadata is bytes with
 * a length); KIQ_STR_NULL for null, or when out of memory. */
kiq_str_t kiq_gc_copy_str(kiq_str_t s)
{
    if (!s.p) return KIQ_STR_NULL;
    char *p = malloc((size_t)s.len + 1);
    if (!p) return KIQ_STR_NULL;
    memcpy(p, s.p, (size_t)s.len);
    p[s.len] = '\0';
    return (kiq_str_t){p, s.len};
}

kiq_group_t *kiq_gc_find_group(kiq_group_coordinator_t *gc, kiq_str_t id)
{
    return id.p ? kiq_str_map_get(gc->groups, id.p, (size_t)id.len) : NULL;
}

static int32_t offsets_partitions(kiq_group_coordinator_t *gc)
{
    kiq_topic_t *t = kiq_topics_get(gc->b.topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    int32_t n = t ? t->npartitions : (int32_t)kiq_config_int(gc->b.config, KIQ_CFG_OFFSETS_TOPIC_NUM_PARTITIONS);
    kiq_topic_unref(t);
    return n;
}

bool kiq_gc_leads(const kiq_group_coordinator_t *gc, int32_t partition)
{
    return partition >= 0 && partition < gc->nled && gc->led[partition];
}

/* Under mu: whether a request for the group gets NOT_COORDINATOR: the
 * coordinator stopped, or (cluster mode) another broker leads the group's
 * partition. A missing id is left to the operation's own checks. */
bool kiq_gc_refused(kiq_group_coordinator_t *gc, kiq_str_t id)
{
    if (gc->closed) return true;
    if (!gc->cluster || !id.p) return false;
    return !kiq_gc_leads(gc, kiq_coordinator_partition(id.p, (size_t)id.len, offsets_partitions(gc)));
}

kiq_group_t *kiq_gc_create_group(kiq_group_coordinator_t *gc, kiq_str_t id)
{
    kiq_group_t *g = kiq_group_new(id.p, (size_t)id.len,
                                   kiq_coordinator_partition(id.p, (size_t)id.len, offsets_partitions(gc)));
    if (!g) return NULL;
    g->state_ts_ms = kiq_clock_wall_ms();
    if (kiq_str_map_put(gc->groups, id.p, (size_t)id.len, g) != 0) {
        kiq_group_free(g);
        return NULL;
    }
    return g;
}

void kiq_gc_remove_group(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    kiq_str_map_remove(gc->groups, g->id, strlen(g->id));
    kiq_group_free(g);
}

void kiq_gc_set_state(kiq_group_t *g, enum kiq_group_state s)
{
    if (g->state != s) KIQ_DEBUG("group %s: %s -> %s", g->id, kiq_group_state_name(g->state), kiq_group_state_name(s));
    g->state = s;
    g->state_ts_ms = kiq_clock_wall_ms();
}

/* Kafka's form: the client id, a dash and a random UUID. */
char *kiq_gc_new_member_id(kiq_str_t client_id)
{
    kiq_uuid_t u;
    kiq_uuid_random(&u);
    char buf[64];
    const uint8_t *b = u.b;
    snprintf(buf, sizeof buf,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
             b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
    size_t cl = client_id.p ? (size_t)client_id.len : 0;
    char *id = malloc(cl + 1 + strlen(buf) + 1);
    if (!id) return NULL;
    if (cl) memcpy(id, client_id.p, cl);
    id[cl] = '-';
    strcpy(id + cl + 1, buf);
    return id;
}

/* Appends records to the group's partition of __consumer_offsets. */
int kiq_gc_append_records(kiq_group_coordinator_t *gc, const kiq_group_t *g, kiq_offsets_records_t *rs)
{
    if (rs->k.count == 0) return 0;
    /* a client that skipped FindCoordinator still gets its group stored */
    if (kiq_group_coordinator_ensure_topic(gc) != KIQ_ERR_NONE) return -1;
    kiq_topic_t *t = kiq_topics_get(gc->b.topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    if (!t) return kiq_error_set(KIQ_OFFSETS_TOPIC " does not exist");
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    int rc;
    int16_t err = kiq_replica_led_partition(t, g->offsets_partition, -1, &p, &log);
    kiq_wr_t w;
    if (err == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION || (err == KIQ_ERR_NOT_LEADER_OR_FOLLOWER && !log)) {
        rc = kiq_error_set(KIQ_OFFSETS_TOPIC " has no partition %d here", g->offsets_partition);
    } else if (err == KIQ_ERR_KAFKA_STORAGE_ERROR) {
        rc = kiq_error_set("the log directory of " KIQ_OFFSETS_TOPIC "-%d is offline", p->index);
    } else if (err) {
        rc = kiq_error_set("this broker no longer leads " KIQ_OFFSETS_TOPIC "-%d", p->index);
    } else if ((rc = kiq_offsets_records_build(rs, &w)) == 0) {
        kiq_log_append_result_t res;
        rc = kiq_replica_append_as_leader(p, log, w.buf, w.len, NULL, 0, &res);
        kiq_wr_free(&w);
        if (rc == 0) rs->last_offset = res.last_offset;
        /* followers waiting to fetch them, and (alone in the ISR: committed
         * at once) whoever waits for the commit */
        if (rc == 0) kiq_topics_notify_append(gc->b.topics, KIQ_OFFSETS_TOPIC, p->index);
    }
    kiq_topic_unref(t);
    return rc;
}

/* Writes the group's metadata; a failure is logged: the group goes on in
 * memory and its next change writes it again. */
void kiq_gc_store_group(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    if (kiq_offsets_records_add_group(&rs, g) != 0 || kiq_gc_append_records(gc, g, &rs) != 0)
        KIQ_ERROR_LIMITED("group %s: cannot store its metadata (generation %d): %s", g->id, g->generation, kiq_error_get());
    kiq_offsets_records_free(&rs);
}

/* ---- the internal topic ---- */

int kiq_group_coordinator_ensure_topic(kiq_group_coordinator_t *gc)
{
    kiq_topic_t *t = kiq_topics_get(gc->b.topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    if (t) {
        kiq_topic_unref(t);
        return KIQ_ERR_NONE;
    }
    /* the controller creates it and places its replicas: a topic made here
     * alone would be this broker's only */
    if (gc->cluster) {
        kiq_error_set(KIQ_OFFSETS_TOPIC " is not hosted here");
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    kiq_topic_configs_t cfg = {0};
    char seg[32];
    snprintf(seg, sizeof seg, "%" PRId64, kiq_config_int(gc->b.config, KIQ_CFG_OFFSETS_TOPIC_SEGMENT_BYTES));
    int rc = KIQ_ERR_NONE;
    if (kiq_topic_configs_set(&cfg, "cleanup.policy", 14, "compact", 7) != 0 ||
        kiq_topic_configs_set(&cfg, "segment.bytes", 13, seg, (int)strlen(seg)) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    } else {
        rc = kiq_topics_create_with_configs(
            gc->b.topics, KIQ_STR(KIQ_OFFSETS_TOPIC),
            (int32_t)kiq_config_int(gc->b.config, KIQ_CFG_OFFSETS_TOPIC_NUM_PARTITIONS),
            (int16_t)kiq_config_int(gc->b.config, KIQ_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR), &cfg, false);
        if (rc == KIQ_ERR_TOPIC_ALREADY_EXISTS) rc = KIQ_ERR_NONE; /* another thread was first */
        if (rc == KIQ_ERR_NONE) KIQ_INFO("created " KIQ_OFFSETS_TOPIC);
        else KIQ_ERROR_LIMITED("cannot create " KIQ_OFFSETS_TOPIC ": %s", kiq_error_get());
    }
    kiq_topic_configs_clear(&cfg);
    return rc;
}

/* ---- the timer thread ---- */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* One pass over the deadlines; returns the next one. */
static int64_t run_timers(kiq_group_coordinator_t *gc, int64_t now)
{
    int64_t next = now + 1000000000LL;
    if (now >= gc->next_retention_ns) {
        kiq_gc_expire_offsets(gc, kiq_clock_wall_ms());
        gc->next_retention_ns = now + gc->retention_check_ms * 1000000;
    }
    next = min64(next, gc->next_retention_ns);
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_t *g = val;
        for (kiq_group_pending_t **pp = &g->pending; *pp;) {
            kiq_group_pending_t *p = *pp;
            if (now >= p->deadline_ns) {
                *pp = p->next;
                free(p->id);
                free(p);
            } else {
                next = min64(next, p->deadline_ns);
                pp = &p->next;
            }
        }
        /* a member waiting in a join or sync is alive; the others must heartbeat */
        for (kiq_group_member_t *m = g->members, *nm; m; m = nm) {
            nm = m->next;
            if (m->join_r || m->sync_r) continue;
            if (now >= m->heartbeat_deadline_ns) {
                kiq_gc_remove_member(gc, g, m, "session timed out");
                nm = g->members; /* the list may have changed wholesale; restart */
                continue;
            }
            next = min64(next, m->heartbeat_deadline_ns);
        }
        if (g->consumer) next = min64(next, kiq_gc_consumer_timers(gc, g, now));
        if (g->share) next = min64(next, kiq_gc_share_timers(gc, g, now));
        if (g->state == KIQ_GROUP_PREPARING_REBALANCE) {
            if (now >= g->join_deadline_ns) kiq_gc_join_deadline(gc, g);
            else if (!g->initial_delay) kiq_gc_try_complete_join(gc, g);
            if (g->state == KIQ_GROUP_PREPARING_REBALANCE) next = min64(next, g->join_deadline_ns);
        }
    }
    return next;
}

/* The timers' round: what is due now, then the time until the next. */
static int64_t timers_round(void *arg)
{
    kiq_group_coordinator_t *gc = arg;
    pthread_mutex_lock(&gc->mu);
    int64_t now = kiq_clock_mono_ns();
    int64_t next = gc->closed ? -1 : run_timers(gc, now);
    pthread_mutex_unlock(&gc->mu);
    return next < 0 ? -1 : (next - now) / 1000000 + 1;
}

void kiq_gc_deadline_moved(kiq_group_coordinator_t *gc)
{
    if (gc->timers) kiq_worker_poke(gc->timers);
}

/* ---- lifecycle ---- */

kiq_group_coordinator_t *kiq_group_coordinator_new(const kiq_group_context_t *b)
{
    kiq_group_coordinator_t *gc = calloc(1, sizeof *gc);
    if (!gc) return NULL;
    gc->b = *b;
    gc->cluster = b->cluster;
    gc->groups = kiq_str_map_new();
    pthread_mutex_init(&gc->mu, NULL);
    if (!gc->groups) {
        kiq_group_coordinator_free(gc);
        return NULL;
    }
    const kiq_config_t *c = b->config;
    gc->initial_delay_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_INITIAL_REBALANCE_DELAY_MS);
    gc->min_session_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_MIN_SESSION_TIMEOUT_MS);
    gc->max_session_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_MAX_SESSION_TIMEOUT_MS);
    gc->max_size = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_MAX_SIZE);
    gc->consumer_heartbeat_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS);
    gc->consumer_session_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_CONSUMER_SESSION_TIMEOUT_MS);
    gc->consumer_max_size = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_CONSUMER_MAX_SIZE);
    const char *policy = kiq_config_str(c, KIQ_CFG_GROUP_CONSUMER_MIGRATION_POLICY);
    gc->migration_upgrade = strcasecmp(policy, "upgrade") == 0 || strcasecmp(policy, "bidirectional") == 0;
    gc->migration_downgrade = strcasecmp(policy, "downgrade") == 0 || strcasecmp(policy, "bidirectional") == 0;
    gc->share_heartbeat_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_SHARE_HEARTBEAT_INTERVAL_MS);
    gc->share_session_ms = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_SHARE_SESSION_TIMEOUT_MS);
    gc->share_max_size = (int32_t)kiq_config_int(c, KIQ_CFG_GROUP_SHARE_MAX_SIZE);
    gc->metadata_max = (int32_t)kiq_config_int(c, KIQ_CFG_OFFSET_METADATA_MAX_BYTES);
    gc->retention_ms = kiq_config_int(c, KIQ_CFG_OFFSETS_RETENTION_MINUTES) * 60000;
    gc->retention_check_ms = kiq_config_int(c, KIQ_CFG_OFFSETS_RETENTION_CHECK_INTERVAL_MS);
    gc->closed = true;
    return gc;
}

int kiq_group_coordinator_start(kiq_group_coordinator_t *gc)
{
    pthread_mutex_lock(&gc->mu);
    /* in a cluster, groups come with the partitions led (partition_led) */
    int rc = gc->cluster ? 0 : kiq_gc_load_partitions(gc, -1);
    gc->closed = false;
    gc->next_retention_ns = kiq_clock_mono_ns() + gc->retention_check_ms * 1000000;
    pthread_mutex_unlock(&gc->mu);
    if (rc != 0) return -1;
    kiq_worker_config_t wc = {.name = "group-coordinator", .round = timers_round, .ctx = gc};
    kiq_worker_t *w = kiq_worker_start(&wc);
    if (!w) return -1;
    pthread_mutex_lock(&gc->mu);
    gc->timers = w;
    pthread_mutex_unlock(&gc->mu);
    return 0;
}

void kiq_group_coordinator_stop(kiq_group_coordinator_t *gc)
{
    if (!gc) return;
    pthread_mutex_lock(&gc->mu);
    gc->closed = true;
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_t *g = val;
        for (kiq_group_member_t *m = g->members; m; m = m->next) {
            kiq_gc_answer_join(g, m, KIQ_ERR_NOT_COORDINATOR);
            kiq_gc_answer_sync(g, m, KIQ_ERR_NOT_COORDINATOR);
        }
    }
    kiq_worker_t *w = gc->timers;
    gc->timers = NULL;
    pthread_mutex_unlock(&gc->mu);
    kiq_worker_stop(w);
}

void kiq_group_coordinator_free(kiq_group_coordinator_t *gc)
{
    if (!gc) return;
    kiq_group_coordinator_stop(gc);
    if (gc->groups) {
        kiq_str_map_iter_t it;
        void *val;
        kiq_str_map_iter_init(&it, gc->groups);
        while (kiq_str_map_next(&it, NULL, NULL, &val)) kiq_group_free(val);
        kiq_str_map_free(gc->groups);
    }
    free(gc->led);
    pthread_mutex_destroy(&gc->mu);
    free(gc);
}

/* ---- inspection ---- */

static const char *adup(kiq_arena_t *a, const char *s) { return s ? kiq_arena_strndup(a, s, strlen(s)) : NULL; }

static int cmp_info(const void *x, const void *y)
{
    return strcmp(((const kiq_group_info_t *)x)->id, ((const kiq_group_info_t *)y)->id);
}

int kiq_group_coordinator_snapshot(kiq_group_coordinator_t *gc, kiq_arena_t *a, kiq_group_info_t **out)
{
    pthread_mutex_lock(&gc->mu);
    size_t n = kiq_str_map_count(gc->groups);
    kiq_group_info_t *gi = kiq_arena_calloc(a, n ? n : 1, sizeof *gi);
    kiq_str_map_iter_t it;
    void *val;
    size_t k = 0;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        const kiq_group_t *g = val;
        kiq_group_info_t *e = &gi[k++];
        e->id = adup(a, g->id);
        e->state = kiq_group_state_name(g->state);
        e->protocol_type = adup(a, g->protocol_type);
        e->protocol = adup(a, g->protocol);
        e->leader = adup(a, g->leader);
        e->generation = g->generation;
        e->offsets_partition = g->offsets_partition;
        e->members = kiq_arena_calloc(a, (size_t)(g->nmembers ? g->nmembers : 1), sizeof *e->members);
        for (const kiq_group_member_t *m = g->members; m; m = m->next) {
            kiq_group_info_member_t *mi = &e->members[e->nmembers++];
            mi->id = adup(a, m->id);
            mi->instance_id = adup(a, m->instance_id);
            mi->client_id = adup(a, m->client_id);
            mi->client_host = adup(a, m->client_host);
            mi->session_timeout_ms = m->session_timeout_ms;
            mi->rebalance_timeout_ms = m->rebalance_timeout_ms;
            if (m->assignment) {
                uint8_t *as = kiq_arena_alloc(a, (size_t)(m->assignment_len ? m->assignment_len : 1));
                memcpy(as, m->assignment, (size_t)m->assignment_len);
                mi->assignment = as;
                mi->assignment_len = m->assignment_len;
            }
        }
        size_t no = kiq_str_map_count(g->offsets);
        e->offsets = kiq_arena_calloc(a, no ? no : 1, sizeof *e->offsets);
        kiq_str_map_iter_t oi;
        kiq_str_map_iter_init(&oi, g->offsets);
        while (kiq_str_map_next(&oi, NULL, NULL, &val)) {
            const kiq_group_offset_t *o = val;
            kiq_group_info_offset_t *oe = &e->offsets[e->noffsets++];
            oe->topic = adup(a, o->topic);
            oe->partition = o->partition;
            oe->offset = o->offset;
            oe->leader_epoch = o->leader_epoch;
            oe->metadata = o->metadata.p ? kiq_arena_strndup(a, o->metadata.p, (size_t)o->metadata.len) : NULL;
            oe->metadata_len = o->metadata.len;
            oe->commit_ts_ms = o->commit_ts_ms;
        }
    }
    pthread_mutex_unlock(&gc->mu);
    qsort(gi, k, sizeof *gi, cmp_info);
    *out = gi;
    return (int)k;
}
