/* Loading groups and offsets from __consumer_offsets (group_coordinator.h):
 * on start, and in a cluster as its partitions come to be led here. */
#include "group/coordinator_internal.h"

#include "core/coordinator_key.h"

/* ---- loading ---- */

static kiq_group_t *load_group_for(kiq_group_coordinator_t *gc, kiq_str_t id, int32_t partitions)
{
    kiq_group_t *g = kiq_gc_find_group(gc, id);
    if (!g && (g = kiq_group_new(id.p, (size_t)id.len, kiq_coordinator_partition(id.p, (size_t)id.len, partitions))) &&
        kiq_str_map_put(gc->groups, id.p, (size_t)id.len, g) != 0) {
        kiq_group_free(g);
        g = NULL;
    }
    return g;
}

typedef struct load_state {
    kiq_group_coordinator_t *gc;
    int32_t partitions;
} load_state_t;

static void load_offset(void *ctx, kiq_str_t group, kiq_str_t topic, int32_t partition,
                        const kiq_offset_commit_value_t *v, int64_t txn_producer)
{
    load_state_t *ls = ctx;
    if (!group.p || !topic.p) return;
    kiq_group_t *g = load_group_for(ls->gc, group, ls->partitions);
    if (!g) return;
    if (!v) {
        if (txn_producer < 0) kiq_group_remove_offset(g, topic.p, (size_t)topic.len, partition);
        return;
    }
    kiq_group_offset_t *o = calloc(1, sizeof *o);
    if (!o || !(o->topic = kiq_gc_dup_str(topic))) {
        free(o);
        return;
    }
    o->partition = partition;
    o->offset = v->offset;
    o->leader_epoch = v->leader_epoch;
    o->metadata = kiq_gc_copy_str(v->metadata);
    o->commit_ts_ms = v->commit_timestamp;
    o->expire_ts_ms = v->expire_timestamp;
    int rc = txn_producer >= 0 ? kiq_group_add_txn_offset(g, txn_producer, o) : kiq_group_put_offset(g, o);
    if (rc != 0) kiq_group_offset_free(o);
}

/* A transaction's marker in the partition being loaded: its offsets are
 * committed or dropped in every group of the partition. */
static void load_marker(void *ctx, int64_t producer_id, bool commit)
{
    load_state_t *ls = ctx;
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, ls->gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) kiq_group_end_txn(val, producer_id, commit);
}

static void clear_members(kiq_group_t *g)
{
    for (kiq_group_member_t *m = g->members, *next; m; m = next) {
        next = m->next;
        kiq_group_member_free(m);
    }
    g->members = NULL;
    g->nmembers = 0;
}

/* A group's last stored metadata: its generation, protocol and members as
 * of its last rebalance; the members keep their ids and assignments and
 * have a session timeout from now to show they are still there. */
static void load_group(void *ctx, kiq_str_t group, const kiq_group_metadata_value_t *v)
{
    load_state_t *ls = ctx;
    if (!group.p) return;
    kiq_group_t *g = load_group_for(ls->gc, group, ls->partitions);
    if (!g) return;
    clear_members(g);
    free(g->protocol_type);
    free(g->protocol);
    free(g->leader);
    g->protocol_type = g->protocol = g->leader = NULL;
    if (!v) {
        g->generation = 0;
        g->state = KIQ_GROUP_EMPTY;
        return;
    }
    g->protocol_type = v->protocol_type.len > 0 ? kiq_gc_dup_str(v->protocol_type) : NULL;
    g->protocol = kiq_gc_dup_str(v->protocol);
    g->leader = kiq_gc_dup_str(v->leader);
    g->generation = v->generation;
    g->state_ts_ms = v->current_state_timestamp >= 0 ? v->current_state_timestamp : kiq_clock_wall_ms();
    kiq_group_member_t **tail = &g->members;
    for (int32_t i = 0; g->protocol && i < v->members_n; i++) {
        const kiq_group_metadata_value_members_t *mv = &v->members[i];
        kiq_group_member_t *m = calloc(1, sizeof *m);
        if (!m) break;
        m->id = kiq_gc_dup_str(mv->member_id);
        m->instance_id = kiq_gc_dup_str(mv->group_instance_id);
        m->client_id = kiq_gc_dup_str(mv->client_id.p ? mv->client_id : KIQ_STR(""));
        m->client_host = kiq_gc_dup_str(mv->client_host.p ? mv->client_host : KIQ_STR(""));
        m->session_timeout_ms = mv->session_timeout;
        m->rebalance_timeout_ms = mv->rebalance_timeout > 0 ? mv->rebalance_timeout : mv->session_timeout;
        kiq_group_protocol_t p = {g->protocol, (uint8_t *)mv->subscription.p, mv->subscription.p ? mv->subscription.len : 0};
        if (!m->id || kiq_group_member_set_protocols(m, &p, 1) != 0) {
            kiq_group_member_free(m);
            break;
        }
        if (mv->assignment.p && (m->assignment = malloc((size_t)(mv->assignment.len ? mv->assignment.len : 1)))) {
            memcpy(m->assignment, mv->assignment.p, (size_t)mv->assignment.len);
            m->assignment_len = mv->assignment.len;
        }
        *tail = m;
        tail = &m->next;
        g->nmembers++;
    }
    g->state = g->members ? KIQ_GROUP_STABLE : KIQ_GROUP_EMPTY;
}

static void load_consumer(void *ctx, int16_t type, kiq_str_t group, kiq_str_t member, const void *v)
{
    load_state_t *ls = ctx;
    kiq_gc_consumer_load(ls->gc, type, group, member, v);
}

/* Under mu: the groups and offsets of one partition of __consumer_offsets
 * (only < 0: of all of them). */
int kiq_gc_load_partitions(kiq_group_coordinator_t *gc, int32_t only)
{
    kiq_topic_t *t = kiq_topics_get(gc->b.topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    if (!t) return 0;
    load_state_t ls = {gc, t->npartitions};
    kiq_offsets_loader_t ld = {.ctx = &ls, .offset = load_offset, .group = load_group, .consumer = load_consumer,
                            .marker = load_marker};
    int records = 0, rc = 0;
    for (int32_t p = 0; p < t->npartitions; p++) {
        kiq_partition_log_t *log = t->partitions[p]->log;
        if ((only >= 0 && p != only) || !log || kiq_partition_log_offline(log)) continue;
        int n = kiq_offsets_topic_load(log, &ld);
        if (n < 0) {
            KIQ_ERROR("cannot load " KIQ_OFFSETS_TOPIC "-%d: %s", p, kiq_error_get());
            rc = -1;
            continue;
        }
        records += n;
    }
    kiq_topic_unref(t);
    /* groups loaded only to be deleted later in the log are dropped */
    kiq_group_t **drop = calloc(kiq_str_map_count(gc->groups) + 1, sizeof *drop);
    size_t nd = 0, ngroups = 0;
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_t *g = val;
        if (only >= 0 && g->offsets_partition != only) continue;
        for (kiq_group_member_t *m = g->members; m; m = m->next) kiq_gc_touch(m);
        if (g->consumer) kiq_gc_consumer_loaded(gc, g);
        if (!g->protocol_type && kiq_str_map_count(g->offsets) == 0 && drop) drop[nd++] = g;
        else ngroups++;
    }
    for (size_t i = 0; i < nd; i++) kiq_gc_remove_group(gc, drop[i]);
    free(drop);
    if (only >= 0)
        KIQ_INFO("loaded %zu groups from %d records of " KIQ_OFFSETS_TOPIC "-%d", ngroups, records, only);
    else
        KIQ_INFO("loaded %zu groups from %d records of " KIQ_OFFSETS_TOPIC, ngroups, records);
    return rc;
}

/* Under mu: the groups of a partition no longer led here go; their parked
 * requests learn to look for the new coordinator. */
static void drop_partition(kiq_group_coordinator_t *gc, int32_t partition)
{
    size_t n = kiq_str_map_count(gc->groups), nd = 0;
    kiq_group_t **drop = calloc(n + 1, sizeof *drop);
    if (!drop) return;
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val))
        if (((kiq_group_t *)val)->offsets_partition == partition) drop[nd++] = val;
    for (size_t i = 0; i < nd; i++) {
        for (kiq_group_member_t *m = drop[i]->members; m; m = m->next) {
            kiq_gc_answer_join(drop[i], m, KIQ_ERR_NOT_COORDINATOR);
            kiq_gc_answer_sync(drop[i], m, KIQ_ERR_NOT_COORDINATOR);
        }
        kiq_gc_remove_group(gc, drop[i]);
    }
    free(drop);
}

void kiq_group_coordinator_partition_led(kiq_group_coordinator_t *gc, int32_t partition, bool led)
{
    if (!gc || partition < 0) return;
    pthread_mutex_lock(&gc->mu);
    if (led && !kiq_gc_leads(gc, partition)) {
        if (partition >= gc->nled) {
            bool *grown = realloc(gc->led, (size_t)(partition + 1) * sizeof *grown);
            if (!grown) {
                pthread_mutex_unlock(&gc->mu);
                KIQ_ERROR("cannot coordinate " KIQ_OFFSETS_TOPIC "-%d: out of memory", partition);
                return;
            }
            memset(grown + gc->nled, 0, (size_t)(partition + 1 - gc->nled) * sizeof *grown);
            gc->led = grown;
            gc->nled = partition + 1;
        }
        /* whatever an earlier term left here is stale: the log has it all */
        drop_partition(gc, partition);
        gc->led[partition] = true;
        kiq_gc_load_partitions(gc, partition);
        kiq_gc_deadline_moved(gc);
    } else if (!led && kiq_gc_leads(gc, partition)) {
        gc->led[partition] = false;
        drop_partition(gc, partition);
        KIQ_INFO("no longer coordinating the groups of " KIQ_OFFSETS_TOPIC "-%d", partition);
    }
    pthread_mutex_unlock(&gc->mu);
}
