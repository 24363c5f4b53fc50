/* The group coordinator; see group_coordinator.h. The rules follow Kafka's
 * GroupCoordinator: who may join, when a rebalance starts and ends, which
 * errors a stale or unknown member gets. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/metadata_cache.h"
#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"
#include "core/uuid.h"
#include "group/group_coordinator.h"
#include "proto/acl_operations.h"
#include "replica/leader.h"
#include "replica/partition_replica.h"

struct kiq_group_coordinator {
    kiq_group_context_t b; /* fixed */
    pthread_mutex_t mu; /* guards everything below and every group */
    pthread_cond_t wake; /* the timer thread's: a deadline moved or stop */
    pthread_t thread;
    bool thread_started;
    bool closed; /* stopped: answer NOT_COORDINATOR */
    /* Cluster mode: only the groups of the __consumer_offsets partitions
     * this broker leads are here (led[p], grown as needed); others are
     * answered NOT_COORDINATOR. */
    bool cluster;
    bool *led;
    int32_t nled;
    kiq_str_map_t *groups; /* id -> kiq_group_t */
    int32_t initial_delay_ms, min_session_ms, max_session_ms, max_size, metadata_max;
    int64_t retention_ms, retention_check_ms;
    int64_t next_retention_ns;
};

/* ---- helpers ---- */

static kiq_str_t astr(kiq_request_t *r, const char *s) { return s ? kiq_request_str(r, s) : KIQ_STR_NULL; }

static bool str_eq(const char *s, kiq_str_t k)
{
    return s && k.p && strlen(s) == (size_t)k.len && memcmp(s, k.p, (size_t)k.len) == 0;
}

static bool str_empty(kiq_str_t s) { return !s.p || s.len == 0; }

static char *dup_str(kiq_str_t s) { return s.p ? strndup(s.p, (size_t)s.len) : NULL; }

/* A copy of all of s's bytes, NULs included (commit metadata is bytes with
 * a length); KIQ_STR_NULL for null, or when out of memory. */
static kiq_str_t copy_str(kiq_str_t s)
{
    if (!s.p) return KIQ_STR_NULL;
    char *p = malloc((size_t)s.len + 1);
    if (!p) return KIQ_STR_NULL;
    memcpy(p, s.p, (size_t)s.len);
    p[s.len] = '\0';
    return (kiq_str_t){p, s.len};
}

static kiq_group_t *find_group(kiq_group_coordinator_t *gc, kiq_str_t id)
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

static bool leads(const kiq_group_coordinator_t *gc, int32_t partition)
{
    return partition >= 0 && partition < gc->nled && gc->led[partition];
}

/* Under mu: whether a request for the group gets NOT_COORDINATOR: the
 * coordinator stopped, or (cluster mode) another broker leads the group's
 * partition. A missing id is left to the operation's own checks. */
static bool refused(kiq_group_coordinator_t *gc, kiq_str_t id)
{
    if (gc->closed) return true;
    if (!gc->cluster || !id.p) return false;
    return !leads(gc, kiq_group_partition_for(id.p, (size_t)id.len, offsets_partitions(gc)));
}

static kiq_group_t *create_group(kiq_group_coordinator_t *gc, kiq_str_t id)
{
    kiq_group_t *g = kiq_group_new(id.p, (size_t)id.len,
                                   kiq_group_partition_for(id.p, (size_t)id.len, offsets_partitions(gc)));
    if (!g) return NULL;
    g->state_ts_ms = kiq_clock_wall_ms();
    if (kiq_str_map_put(gc->groups, id.p, (size_t)id.len, g) != 0) {
        kiq_group_free(g);
        return NULL;
    }
    return g;
}

static void remove_group(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    kiq_str_map_remove(gc->groups, g->id, strlen(g->id));
    kiq_group_free(g);
}

static void set_state(kiq_group_t *g, enum kiq_group_state s)
{
    if (g->state != s) KIQ_DEBUG("group %s: %s -> %s", g->id, kiq_group_state_name(g->state), kiq_group_state_name(s));
    g->state = s;
    g->state_ts_ms = kiq_clock_wall_ms();
}

/* Kafka's form: the client id, a dash and a random UUID. */
static char *new_member_id(kiq_str_t client_id)
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
static int append_records(kiq_group_coordinator_t *gc, const kiq_group_t *g, kiq_offsets_records_t *rs)
{
    if (rs->count == 0) return 0;
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
        bool moved;
        rc = kiq_replica_append_as_leader(p, log, w.buf, w.len, NULL, &res, &moved) == 0 ? 0 : -1;
        kiq_wr_free(&w);
        if (rc == 0) rs->last_offset = res.last_offset;
        /* alone in the ISR the records are committed at once; else when
         * the followers have them */
        if (moved) kiq_topics_notify_append(gc->b.topics, KIQ_OFFSETS_TOPIC, p->index);
    }
    kiq_topic_unref(t);
    return rc;
}

/* Writes the group's metadata; a failure is logged: the group goes on in
 * memory and its next change writes it again. */
static void store_group(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    if (kiq_offsets_records_add_group(&rs, g) != 0 || append_records(gc, g, &rs) != 0)
        KIQ_ERROR("group %s: cannot store its metadata (generation %d): %s", g->id, g->generation, kiq_error_get());
    kiq_offsets_records_free(&rs);
}

/* ---- answering parked requests ---- */

/* The JoinGroup answer for member m of the current generation: the leader
 * also gets every member's metadata for the chosen protocol. */
static void fill_join(kiq_group_t *g, kiq_group_member_t *m, kiq_request_t *r, kiq_join_group_response_t *resp)
{
    resp->error_code = KIQ_ERR_NONE;
    resp->generation_id = g->generation;
    resp->protocol_type = astr(r, g->protocol_type);
    resp->protocol_name = astr(r, g->protocol);
    resp->leader = astr(r, g->leader ? g->leader : "");
    resp->member_id = kiq_request_str(r, m->id);
    resp->members_n = 0;
    if (!g->leader || strcmp(g->leader, m->id) != 0) return;
    resp->members = kiq_arena_calloc(&r->arena, (size_t)g->nmembers, sizeof *resp->members);
    int i = 0;
    for (kiq_group_member_t *o = g->members; o; o = o->next) {
        kiq_join_group_response_members_t *e = &resp->members[i++];
        kiq_join_group_response_members_init(e);
        e->member_id = kiq_request_str(r, o->id);
        e->group_instance_id = astr(r, o->instance_id);
        const kiq_group_protocol_t *p = kiq_group_member_protocol(o, g->protocol);
        uint8_t *copy = kiq_arena_alloc(&r->arena, (size_t)(p && p->metadata_len > 0 ? p->metadata_len : 1));
        if (p && p->metadata_len > 0) memcpy(copy, p->metadata, (size_t)p->metadata_len);
        e->metadata = (kiq_bytes_t){copy, p ? p->metadata_len : 0};
    }
    resp->members_n = i;
}

static void fill_sync(kiq_group_t *g, kiq_group_member_t *m, kiq_request_t *r, kiq_sync_group_response_t *resp)
{
    resp->error_code = KIQ_ERR_NONE;
    resp->protocol_type = astr(r, g->protocol_type);
    resp->protocol_name = astr(r, g->protocol);
    uint8_t *copy = kiq_arena_alloc(&r->arena, (size_t)(m->assignment_len > 0 ? m->assignment_len : 1));
    if (m->assignment_len > 0) memcpy(copy, m->assignment, (size_t)m->assignment_len);
    resp->assignment = (kiq_bytes_t){copy, m->assignment ? m->assignment_len : 0};
}

static void touch(kiq_group_member_t *m)
{
    m->heartbeat_deadline_ns = kiq_clock_mono_ns() + (int64_t)m->session_timeout_ms * 1000000;
}

/* Answers m's parked JoinGroup: with the current generation when error is
 * 0, else with the error. */
static void answer_join(kiq_group_t *g, kiq_group_member_t *m, int16_t error)
{
    if (!m->join_r) return;
    kiq_request_t *r = m->join_r;
    kiq_join_group_response_t *resp = m->join_resp;
    m->join_r = NULL;
    m->join_resp = NULL;
    if (error) {
        resp->error_code = error;
        resp->member_id = kiq_request_str(r, m->id);
    } else {
        touch(m);
        fill_join(g, m, r, resp);
    }
    kiq_request_respond(r, resp);
}

/* Answers m's parked SyncGroup: its assignment when error is 0. */
static void answer_sync(kiq_group_t *g, kiq_group_member_t *m, int16_t error)
{
    if (!m->sync_r) return;
    kiq_request_t *r = m->sync_r;
    kiq_sync_group_response_t *resp = m->sync_resp;
    m->sync_r = NULL;
    m->sync_resp = NULL;
    if (error) {
        resp->error_code = error;
    } else {
        touch(m);
        fill_sync(g, m, r, resp);
    }
    kiq_request_respond(r, resp);
}

/* ---- the rebalance ---- */

static void complete_join(kiq_group_coordinator_t *gc, kiq_group_t *g);

static bool all_joined(const kiq_group_t *g)
{
    if (g->pending) return false;
    for (kiq_group_member_t *m = g->members; m; m = m->next)
        if (!m->join_r) return false;
    return true;
}

static void try_complete_join(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    if (g->state == KIQ_GROUP_PREPARING_REBALANCE && !g->initial_delay && all_joined(g)) complete_join(gc, g);
}

static int32_t max_rebalance_timeout(const kiq_group_t *g)
{
    int32_t t = 0;
    for (kiq_group_member_t *m = g->members; m; m = m->next)
        if (m->rebalance_timeout_ms > t) t = m->rebalance_timeout_ms;
    return t;
}

static void prepare_rebalance(kiq_group_coordinator_t *gc, kiq_group_t *g, const char *why)
{
    if (g->state == KIQ_GROUP_COMPLETING_REBALANCE) {
        for (kiq_group_member_t *m = g->members; m; m = m->next) {
            answer_sync(g, m, KIQ_ERR_REBALANCE_IN_PROGRESS);
            free(m->assignment);
            m->assignment = NULL;
            m->assignment_len = 0;
        }
    }
    bool initial = g->state == KIQ_GROUP_EMPTY;
    int64_t now = kiq_clock_mono_ns();
    int32_t rt = max_rebalance_timeout(g);
    KIQ_INFO("group %s: preparing to rebalance (generation %d, %s)", g->id, g->generation, why);
    set_state(g, KIQ_GROUP_PREPARING_REBALANCE);
    if (initial) {
        int32_t delay = gc->initial_delay_ms < rt ? gc->initial_delay_ms : rt;
        g->initial_delay = true;
        g->new_member_added = false;
        g->initial_remaining_ms = rt - delay;
        g->join_deadline_ns = now + (int64_t)delay * 1000000;
    } else {
        g->initial_delay = false;
        g->join_deadline_ns = now + (int64_t)rt * 1000000;
    }
    pthread_cond_signal(&gc->wake);
    try_complete_join(gc, g);
}

static void remove_member(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_group_member_t *m, const char *why)
{
    KIQ_INFO("group %s: member %s %s", g->id, m->id, why);
    answer_join(g, m, KIQ_ERR_UNKNOWN_MEMBER_ID);
    answer_sync(g, m, KIQ_ERR_UNKNOWN_MEMBER_ID);
    kiq_group_unlink_member(g, m);
    kiq_group_member_free(m);
    if (g->state == KIQ_GROUP_STABLE || g->state == KIQ_GROUP_COMPLETING_REBALANCE)
        prepare_rebalance(gc, g, why);
    else
        try_complete_join(gc, g);
}

static void complete_join(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    /* members that did not rejoin in time are out */
    for (kiq_group_member_t *m = g->members, *next; m; m = next) {
        next = m->next;
        if (!m->join_r) {
            KIQ_INFO("group %s: member %s did not rejoin in time; removed", g->id, m->id);
            answer_sync(g, m, KIQ_ERR_UNKNOWN_MEMBER_ID);
            kiq_group_unlink_member(g, m);
            kiq_group_member_free(m);
        }
    }
    g->initial_delay = false;
    g->generation++;
    free(g->protocol);
    g->protocol = NULL;
    if (!g->members) {
        free(g->leader);
        g->leader = NULL;
        set_state(g, KIQ_GROUP_EMPTY);
        KIQ_INFO("group %s: empty at generation %d", g->id, g->generation);
        store_group(gc, g);
        return;
    }
    const char *p = kiq_group_select_protocol(g);
    g->protocol = p ? strdup(p) : NULL;
    if (!g->leader || !kiq_group_find_member(g, KIQ_STR(g->leader))) {
        free(g->leader);
        g->leader = strdup(g->members->id);
    }
    set_state(g, KIQ_GROUP_COMPLETING_REBALANCE);
    KIQ_INFO("group %s: generation %d with %d members, protocol %s, leader %s", g->id, g->generation, g->nmembers,
             g->protocol ? g->protocol : "(none)", g->leader);
    for (kiq_group_member_t *m = g->members; m; m = m->next) answer_join(g, m, KIQ_ERR_NONE);
}

/* The join phase's deadline passed (timer thread). */
static void join_deadline(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    if (g->initial_delay && g->new_member_added && g->initial_remaining_ms > 0) {
        /* more members came during the delay: wait another round for more */
        int32_t d = gc->initial_delay_ms < g->initial_remaining_ms ? gc->initial_delay_ms
                                                                    : (int32_t)g->initial_remaining_ms;
        g->new_member_added = false;
        g->initial_remaining_ms -= d;
        g->join_deadline_ns = kiq_clock_mono_ns() + (int64_t)d * 1000000;
        return;
    }
    complete_join(gc, g);
}

/* ---- JoinGroup ---- */

static bool park_join(kiq_group_t *g, kiq_group_member_t *m, kiq_request_t *r, kiq_join_group_response_t *resp)
{
    if (m->join_r && m->join_r != r) answer_join(g, m, KIQ_ERR_REBALANCE_IN_PROGRESS); /* a duplicate join */
    r->t.handled = kiq_clock_mono_ns();
    m->join_r = r;
    m->join_resp = resp;
    return true;
}

static bool same_protocols(const kiq_group_member_t *m, const kiq_group_protocol_t *p, int n)
{
    if (m->nprotocols != n) return false;
    for (int i = 0; i < n; i++) {
        if (strcmp(m->protocols[i].name, p[i].name) != 0 || m->protocols[i].metadata_len != p[i].metadata_len ||
            (p[i].metadata_len > 0 && memcmp(m->protocols[i].metadata, p[i].metadata, (size_t)p[i].metadata_len)))
            return false;
    }
    return true;
}

typedef struct join_args {
    const kiq_join_group_request_t *req;
    kiq_group_protocol_t *protos;
    int nprotos;
    int32_t rebalance_ms;
} join_args_t;

static void update_member(kiq_group_member_t *m, const join_args_t *a)
{
    kiq_group_member_set_protocols(m, a->protos, a->nprotos);
    m->session_timeout_ms = a->req->session_timeout_ms;
    m->rebalance_timeout_ms = a->rebalance_ms;
}

/* Kafka shows a member's address as "/host", without the port. */
static char *client_host(const char *peer)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    char *h = malloc(n + 2);
    if (!h) return NULL;
    h[0] = '/';
    memcpy(h + 1, peer, n);
    h[n + 1] = 0;
    return h;
}

static bool add_member(kiq_group_coordinator_t *gc, kiq_group_t *g, char *id, kiq_request_t *r,
                      const join_args_t *a, kiq_join_group_response_t *resp)
{
    kiq_group_member_t *m = calloc(1, sizeof *m);
    if (!m || (m->id = id, !m->id)) {
        free(m);
        free(id);
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return false;
    }
    m->instance_id = dup_str(a->req->group_instance_id);
    m->client_id = dup_str(r->header.client_id.p ? r->header.client_id : KIQ_STR(""));
    m->client_host = client_host(r->peer);
    if (!m->client_id || !m->client_host || kiq_group_member_set_protocols(m, a->protos, a->nprotos) != 0) {
        kiq_group_member_free(m);
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return false;
    }
    update_member(m, a);
    if (!g->protocol_type) g->protocol_type = dup_str(a->req->protocol_type);
    kiq_group_member_t **tail = &g->members;
    while (*tail) tail = &(*tail)->next;
    *tail = m;
    g->nmembers++;
    g->new_member_added = true;
    touch(m);
    bool rc = park_join(g, m, r, resp);
    if (g->state == KIQ_GROUP_PREPARING_REBALANCE)
        try_complete_join(gc, g);
    else
        prepare_rebalance(gc, g, "a member joined");
    return rc;
}

static bool take_pending(kiq_group_t *g, kiq_str_t id)
{
    for (kiq_group_pending_t **pp = &g->pending; *pp; pp = &(*pp)->next) {
        if (str_eq((*pp)->id, id)) {
            kiq_group_pending_t *p = *pp;
            *pp = p->next;
            free(p->id);
            free(p);
            return true;
        }
    }
    return false;
}

/* A static member (group.instance.id) coming back with a new member id:
 * it takes over its old identity; a stable group keeps its assignment. */
static bool static_rejoin(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_group_member_t *m, kiq_request_t *r,
                         const join_args_t *a, kiq_join_group_response_t *resp)
{
    char *id = new_member_id(r->header.client_id);
    if (!id) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return false;
    }
    KIQ_INFO("group %s: static member %s rejoins as %s", g->id, m->instance_id, id);
    answer_join(g, m, KIQ_ERR_FENCED_INSTANCE_ID);
    answer_sync(g, m, KIQ_ERR_FENCED_INSTANCE_ID);
    bool was_leader = g->leader && strcmp(g->leader, m->id) == 0;
    bool changed = !same_protocols(m, a->protos, a->nprotos);
    free(m->id);
    m->id = id;
    if (was_leader) {
        free(g->leader);
        g->leader = strdup(id);
    }
    update_member(m, a);
    touch(m);
    if (g->state == KIQ_GROUP_STABLE && !changed) {
        store_group(gc, g);
        fill_join(g, m, r, resp);
        /* JoinGroup v9: the returning leader keeps the assignment as it is */
        resp->skip_assignment = was_leader && r->header.api_version >= 9;
        return false;
    }
    bool rc = park_join(g, m, r, resp);
    if (g->state == KIQ_GROUP_PREPARING_REBALANCE)
        try_complete_join(gc, g);
    else
        prepare_rebalance(gc, g, "a static member rejoined with other metadata");
    return rc;
}

static bool join_locked(kiq_group_coordinator_t *gc, kiq_request_t *r, const join_args_t *a,
                       kiq_join_group_response_t *resp)
{
    const kiq_join_group_request_t *req = a->req;
    kiq_group_t *g = find_group(gc, req->group_id);
    bool unknown_member = str_empty(req->member_id);
    if (!g) {
        if (!unknown_member) return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
        if (!(g = create_group(gc, req->group_id)))
            return resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR, false;
    }
    if (g->state == KIQ_GROUP_DEAD) return resp->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE, false;
    if (g->nmembers > 0 && (!str_eq(g->protocol_type, req->protocol_type) ||
                            !kiq_group_supports(g, a->protos, a->nprotos)))
        return resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL, false;

    if (unknown_member) {
        kiq_group_member_t *old = kiq_group_find_instance(g, req->group_instance_id);
        if (old) return static_rejoin(gc, g, old, r, a, resp);
        if (g->nmembers >= gc->max_size) return resp->error_code = KIQ_ERR_GROUP_MAX_SIZE_REACHED, false;
        char *id = new_member_id(r->header.client_id);
        if (!id) return resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR, false;
        if (r->header.api_version >= 4 && !req->group_instance_id.p) {
            /* the client must come back with this id: a retried join then
             * cannot leave a ghost member behind */
            kiq_group_pending_t *p = calloc(1, sizeof *p);
            if (!p) {
                free(id);
                return resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR, false;
            }
            p->id = id;
            p->deadline_ns = kiq_clock_mono_ns() + (int64_t)req->session_timeout_ms * 1000000;
            p->next = g->pending;
            g->pending = p;
            pthread_cond_signal(&gc->wake);
            resp->error_code = KIQ_ERR_MEMBER_ID_REQUIRED;
            resp->member_id = kiq_request_str(r, id);
            return false;
        }
        return add_member(gc, g, id, r, a, resp);
    }

    kiq_group_member_t *m = kiq_group_find_member(g, req->member_id);
    if (!m) {
        if (take_pending(g, req->member_id)) {
            if (g->nmembers >= gc->max_size)
                return resp->error_code = KIQ_ERR_GROUP_MAX_SIZE_REACHED, false;
            return add_member(gc, g, dup_str(req->member_id), r, a, resp);
        }
        return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
    }
    if (req->group_instance_id.p && !str_eq(m->instance_id, req->group_instance_id))
        return resp->error_code = KIQ_ERR_FENCED_INSTANCE_ID, false;
    touch(m);
    switch (g->state) {
    case KIQ_GROUP_PREPARING_REBALANCE: {
        update_member(m, a);
        bool rc = park_join(g, m, r, resp);
        try_complete_join(gc, g);
        return rc;
    }
    case KIQ_GROUP_COMPLETING_REBALANCE:
    case KIQ_GROUP_STABLE: {
        bool leader = g->leader && strcmp(g->leader, m->id) == 0;
        bool changed = !same_protocols(m, a->protos, a->nprotos);
        if (!changed && (g->state == KIQ_GROUP_COMPLETING_REBALANCE || !leader)) {
            /* nothing new: the answer of the current generation */
            fill_join(g, m, r, resp);
            return false;
        }
        update_member(m, a);
        bool rc = park_join(g, m, r, resp);
        prepare_rebalance(gc, g, leader ? "the leader rejoined" : "a member changed its metadata");
        return rc;
    }
    default: return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
    }
}

bool kiq_group_join(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_join_group_request_t *req,
                   kiq_join_group_response_t *resp)
{
    resp->member_id = req->member_id.p ? req->member_id : KIQ_STR("");
    resp->protocol_name = r->header.api_version >= 7 ? KIQ_STR_NULL : KIQ_STR("");
    if (str_empty(req->group_id)) return resp->error_code = KIQ_ERR_INVALID_GROUP_ID, false;
    if (req->session_timeout_ms < gc->min_session_ms || req->session_timeout_ms > gc->max_session_ms)
        return resp->error_code = KIQ_ERR_INVALID_SESSION_TIMEOUT, false;
    if (str_empty(req->protocol_type) || req->protocols_n <= 0)
        return resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL, false;
    join_args_t a = {.req = req, .nprotos = req->protocols_n};
    a.rebalance_ms = r->header.api_version >= 1 && req->rebalance_timeout_ms > 0 ? req->rebalance_timeout_ms
                                                                                 : req->session_timeout_ms;
    a.protos = kiq_arena_calloc(&r->arena, (size_t)req->protocols_n, sizeof *a.protos);
    for (int32_t i = 0; i < req->protocols_n; i++) {
        kiq_str_t n = req->protocols[i].name;
        a.protos[i].name = kiq_arena_strndup(&r->arena, n.p ? n.p : "", n.p ? (size_t)n.len : 0);
        a.protos[i].metadata = (uint8_t *)req->protocols[i].metadata.p;
        a.protos[i].metadata_len = req->protocols[i].metadata.p ? req->protocols[i].metadata.len : 0;
    }
    pthread_mutex_lock(&gc->mu);
    bool rc = refused(gc, req->group_id) ? (resp->error_code = KIQ_ERR_NOT_COORDINATOR, false)
                                        : join_locked(gc, r, &a, resp);
    pthread_mutex_unlock(&gc->mu);
    return rc;
}

/* ---- SyncGroup, Heartbeat, LeaveGroup ---- */

/* The checks SyncGroup, Heartbeat and OffsetCommit share: 0 with *out, or
 * the Kafka error. */
static int16_t check_member(kiq_group_t *g, kiq_str_t member_id, kiq_str_t instance_id, int32_t generation,
                            kiq_group_member_t **out)
{
    if (!g) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    if (g->state == KIQ_GROUP_DEAD) return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    kiq_group_member_t *inst = kiq_group_find_instance(g, instance_id);
    if (inst && !str_eq(inst->id, member_id)) return KIQ_ERR_FENCED_INSTANCE_ID;
    kiq_group_member_t *m = kiq_group_find_member(g, member_id);
    if (!m) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    if (generation != g->generation) return KIQ_ERR_ILLEGAL_GENERATION;
    *out = m;
    return KIQ_ERR_NONE;
}

static bool sync_locked(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_sync_group_request_t *req,
                       kiq_sync_group_response_t *resp)
{
    kiq_group_t *g = find_group(gc, req->group_id);
    kiq_group_member_t *m = NULL;
    int16_t err = check_member(g, req->member_id, req->group_instance_id, req->generation_id, &m);
    if (err) return resp->error_code = err, false;
    if ((req->protocol_type.p && !str_eq(g->protocol_type, req->protocol_type)) ||
        (req->protocol_name.p && !str_eq(g->protocol, req->protocol_name)))
        return resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL, false;
    switch (g->state) {
    case KIQ_GROUP_PREPARING_REBALANCE: return resp->error_code = KIQ_ERR_REBALANCE_IN_PROGRESS, false;
    case KIQ_GROUP_STABLE:
        touch(m);
        fill_sync(g, m, r, resp);
        return false;
    case KIQ_GROUP_COMPLETING_REBALANCE: break;
    default: return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
    }
    if (m->sync_r) answer_sync(g, m, KIQ_ERR_REBALANCE_IN_PROGRESS); /* a duplicate sync */
    r->t.handled = kiq_clock_mono_ns();
    m->sync_r = r;
    m->sync_resp = resp;
    touch(m);
    if (!g->leader || strcmp(g->leader, m->id) != 0) return true;
    /* the leader's assignment completes the rebalance */
    for (kiq_group_member_t *o = g->members; o; o = o->next) {
        free(o->assignment);
        o->assignment = NULL;
        o->assignment_len = 0;
        for (int32_t i = 0; i < req->assignments_n; i++) {
            const kiq_sync_group_request_assignments_t *as = &req->assignments[i];
            if (!str_eq(o->id, as->member_id) || !as->assignment.p) continue;
            o->assignment = malloc((size_t)(as->assignment.len > 0 ? as->assignment.len : 1));
            if (o->assignment) {
                memcpy(o->assignment, as->assignment.p, (size_t)as->assignment.len);
                o->assignment_len = as->assignment.len;
            }
            break;
        }
    }
    set_state(g, KIQ_GROUP_STABLE);
    store_group(gc, g);
    for (kiq_group_member_t *o = g->members; o; o = o->next) answer_sync(g, o, KIQ_ERR_NONE);
    return true;
}

bool kiq_group_sync(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_sync_group_request_t *req,
                   kiq_sync_group_response_t *resp)
{
    resp->assignment = (kiq_bytes_t){(const uint8_t *)"", 0};
    if (str_empty(req->group_id)) return resp->error_code = KIQ_ERR_INVALID_GROUP_ID, false;
    pthread_mutex_lock(&gc->mu);
    bool rc = refused(gc, req->group_id) ? (resp->error_code = KIQ_ERR_NOT_COORDINATOR, false)
                                        : sync_locked(gc, r, req, resp);
    pthread_mutex_unlock(&gc->mu);
    return rc;
}

void kiq_group_heartbeat(kiq_group_coordinator_t *gc, const kiq_heartbeat_request_t *req,
                         kiq_heartbeat_response_t *resp)
{
    if (str_empty(req->group_id)) {
        resp->error_code = KIQ_ERR_INVALID_GROUP_ID;
        return;
    }
    pthread_mutex_lock(&gc->mu);
    if (refused(gc, req->group_id)) {
        resp->error_code = KIQ_ERR_NOT_COORDINATOR;
    } else {
        kiq_group_t *g = find_group(gc, req->group_id);
        kiq_group_member_t *m = NULL;
        resp->error_code = check_member(g, req->member_id, req->group_instance_id, req->generation_id, &m);
        if (!resp->error_code) {
            if (g->state == KIQ_GROUP_EMPTY) {
                resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID;
            } else {
                touch(m);
                if (g->state == KIQ_GROUP_PREPARING_REBALANCE) resp->error_code = KIQ_ERR_REBALANCE_IN_PROGRESS;
            }
        }
    }
    pthread_mutex_unlock(&gc->mu);
}

/* One leaving member: by instance id when given (static), else by id. */
static int16_t leave_one(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_str_t member_id, kiq_str_t instance_id)
{
    kiq_group_member_t *m;
    if (instance_id.p) {
        m = kiq_group_find_instance(g, instance_id);
        if (m && !str_empty(member_id) && !str_eq(m->id, member_id)) return KIQ_ERR_FENCED_INSTANCE_ID;
    } else {
        m = kiq_group_find_member(g, member_id);
    }
    if (!m) {
        if (!instance_id.p && take_pending(g, member_id)) return KIQ_ERR_NONE;
        return KIQ_ERR_UNKNOWN_MEMBER_ID;
    }
    remove_member(gc, g, m, "left the group");
    return KIQ_ERR_NONE;
}

void kiq_group_leave(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_leave_group_request_t *req,
                     kiq_leave_group_response_t *resp)
{
    bool batch = r->header.api_version >= 3;
    if (batch) {
        resp->members_n = req->members_n > 0 ? req->members_n : 0;
        resp->members = kiq_arena_calloc(&r->arena, (size_t)(resp->members_n ? resp->members_n : 1),
                                         sizeof *resp->members);
        for (int32_t i = 0; i < resp->members_n; i++) {
            kiq_leave_group_response_members_init(&resp->members[i]);
            resp->members[i].member_id = req->members[i].member_id;
            resp->members[i].group_instance_id = req->members[i].group_instance_id;
        }
    }
    if (str_empty(req->group_id)) {
        resp->error_code = KIQ_ERR_INVALID_GROUP_ID;
        return;
    }
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = find_group(gc, req->group_id);
    if (refused(gc, req->group_id)) {
        resp->error_code = KIQ_ERR_NOT_COORDINATOR;
    } else if (!g) {
        resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID;
    } else if (g->state == KIQ_GROUP_DEAD) {
        resp->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    } else if (!batch) {
        resp->error_code = leave_one(gc, g, req->member_id, KIQ_STR_NULL);
    } else {
        for (int32_t i = 0; i < resp->members_n; i++)
            resp->members[i].error_code =
                leave_one(gc, g, req->members[i].member_id, req->members[i].group_instance_id);
    }
    pthread_mutex_unlock(&gc->mu);
}

/* ---- offsets ---- */

/* Kafka's rules for who may commit: a plain commit (generation < 0) only
 * to a group without members; otherwise the member of the current
 * generation (a commit during a rebalance's join phase still counts: the
 * member is giving up its partitions). */
static int16_t commit_allowed(kiq_group_t *g, const kiq_offset_commit_request_t *req, int16_t version)
{
    int32_t gen = version >= 1 ? req->generation_id_or_member_epoch : -1;
    /* a commit naming a generation of a group that does not exist */
    if (!g) return gen < 0 ? KIQ_ERR_NONE : version >= 9 ? KIQ_ERR_GROUP_ID_NOT_FOUND : KIQ_ERR_ILLEGAL_GENERATION;
    if (g->state == KIQ_GROUP_DEAD) return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    if (gen < 0 && g->state == KIQ_GROUP_EMPTY) return KIQ_ERR_NONE;
    if (g->state == KIQ_GROUP_COMPLETING_REBALANCE) return KIQ_ERR_REBALANCE_IN_PROGRESS;
    kiq_group_member_t *m;
    return check_member(g, req->member_id, req->group_instance_id, gen, &m);
}

/* How many partitions the cluster says the topic has (-1: no such topic).
 * In cluster mode that is the metadata cache: a coordinator need not host
 * a replica of every topic its groups commit offsets for. */
static int32_t topic_partition_count(kiq_group_coordinator_t *gc, kiq_str_t name)
{
    if (!name.p) return -1;
    if (gc->b.cluster) return kiq_metadata_cache_partition_count(gc->b.metadata, name.p, (size_t)name.len);
    kiq_topic_t *topic = kiq_topics_get(gc->b.topics, name);
    int32_t n = topic ? topic->npartitions : -1;
    kiq_topic_unref(topic);
    return n;
}

void kiq_group_commit_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_offset_commit_request_t *req, kiq_offset_commit_response_t *resp,
                              int32_t *partition, int64_t *replicated_at)
{
    *replicated_at = -1;
    int16_t v = r->header.api_version;
    int64_t now = kiq_clock_wall_ms();
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(&r->arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    for (int32_t i = 0; i < resp->topics_n; i++) {
        kiq_offset_commit_response_topics_t *t = &resp->topics[i];
        kiq_offset_commit_response_topics_init(t);
        t->name = req->topics[i].name;
        t->partitions_n = req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            kiq_offset_commit_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = req->topics[i].partitions[j].partition_index;
        }
    }
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = find_group(gc, req->group_id);
    int16_t err = refused(gc, req->group_id) ? KIQ_ERR_NOT_COORDINATOR
                  : !req->group_id.p ? KIQ_ERR_INVALID_GROUP_ID
                                     : commit_allowed(g, req, v);
    if (!err && !g && !(g = create_group(gc, req->group_id))) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (err) {
        KIQ_DEBUG("OffsetCommit to group " KIQ_STR_FMT " by member " KIQ_STR_FMT " generation %d refused: error %d",
                  KIQ_STR_ARG(req->group_id), KIQ_STR_ARG(req->member_id), req->generation_id_or_member_epoch, err);
        for (int32_t i = 0; i < resp->topics_n; i++)
            for (int32_t j = 0; j < resp->topics[i].partitions_n; j++) resp->topics[i].partitions[j].error_code = err;
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    /* the new offsets, then one append, then the cache */
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, now);
    int total = 0;
    for (int32_t i = 0; i < req->topics_n; i++) total += req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
    kiq_group_offset_t **fresh = kiq_arena_calloc(&r->arena, (size_t)(total ? total : 1), sizeof *fresh);
    int k = 0;
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_offset_commit_request_topics_t *tin = &req->topics[i];
        int32_t npartitions = topic_partition_count(gc, tin->name);
        for (int32_t j = 0; j < tin->partitions_n; j++, k++) {
            const kiq_offset_commit_request_topics_partitions_t *p = &tin->partitions[j];
            int16_t *perr = &resp->topics[i].partitions[j].error_code;
            if (p->partition_index < 0 || p->partition_index >= npartitions) {
                *perr = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (p->committed_metadata.p && p->committed_metadata.len > gc->metadata_max) {
                *perr = KIQ_ERR_OFFSET_METADATA_TOO_LARGE;
                continue;
            }
            kiq_group_offset_t *o = calloc(1, sizeof *o);
            if (!o || !(o->topic = dup_str(tin->name))) {
                free(o);
                *perr = KIQ_ERR_UNKNOWN_SERVER_ERROR;
                continue;
            }
            o->partition = p->partition_index;
            o->offset = p->committed_offset;
            o->leader_epoch = p->committed_leader_epoch;
            o->metadata = copy_str(p->committed_metadata);
            o->commit_ts_ms = v == 1 && p->commit_timestamp >= 0 ? p->commit_timestamp : now;
            o->expire_ts_ms = v >= 2 && v <= 4 && req->retention_time_ms >= 0 ? o->commit_ts_ms + req->retention_time_ms : -1;
            if (kiq_offsets_records_add_commit(&rs, g->id, o) != 0) {
                kiq_group_offset_free(o);
                *perr = KIQ_ERR_UNKNOWN_SERVER_ERROR;
                continue;
            }
            fresh[k] = o;
        }
    }
    int rc = append_records(gc, g, &rs);
    if (rc == 0 && rs.last_offset >= 0) {
        *partition = g->offsets_partition;
        *replicated_at = rs.last_offset + 1;
    }
    kiq_offsets_records_free(&rs);
    if (rc != 0)
        KIQ_ERROR("group %s: cannot store committed offsets: %s", g->id, kiq_error_get());
    k = 0;
    for (int32_t i = 0; i < req->topics_n; i++) {
        for (int32_t j = 0; j < req->topics[i].partitions_n; j++, k++) {
            if (!fresh[k]) continue;
            if (rc != 0) {
                resp->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
                kiq_group_offset_free(fresh[k]);
            } else if (kiq_group_put_offset(g, fresh[k]) != 0) {
                kiq_group_offset_free(fresh[k]);
                resp->topics[i].partitions[j].error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            }
        }
    }
    pthread_mutex_unlock(&gc->mu);
}

static void fill_fetched(kiq_request_t *r, const kiq_group_offset_t *o, int32_t partition,
                         kiq_offset_fetch_response_topics_partitions_t *out)
{
    kiq_offset_fetch_response_topics_partitions_init(out);
    out->partition_index = partition;
    out->committed_offset = o ? o->offset : -1;
    out->committed_leader_epoch = o ? o->leader_epoch : -1;
    out->metadata = KIQ_STR("");
    if (o && o->metadata.p)
        out->metadata = (kiq_str_t){kiq_arena_strndup(&r->arena, o->metadata.p, (size_t)o->metadata.len),
                                    o->metadata.len};
}

static int cmp_offsets(const void *a, const void *b)
{
    const kiq_group_offset_t *x = *(kiq_group_offset_t *const *)a, *y = *(kiq_group_offset_t *const *)b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* One group's committed offsets for the topics asked (NULL: all of them),
 * in the v0-7 layout (the v8 one has the same fields). */
static void fetch_group(kiq_group_coordinator_t *gc, kiq_request_t *r, kiq_str_t group_id,
                        const kiq_offset_fetch_request_topics_t *topics, int32_t ntopics,
                        kiq_offset_fetch_response_topics_t **out, int32_t *nout)
{
    kiq_group_t *g = find_group(gc, group_id);
    if (ntopics >= 0) {
        *nout = ntopics;
        *out = kiq_arena_calloc(&r->arena, (size_t)(ntopics ? ntopics : 1), sizeof **out);
        for (int32_t i = 0; i < ntopics; i++) {
            kiq_offset_fetch_response_topics_t *t = &(*out)[i];
            kiq_offset_fetch_response_topics_init(t);
            t->name = topics[i].name;
            t->partitions_n = topics[i].partition_indexes_n > 0 ? topics[i].partition_indexes_n : 0;
            t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
            for (int32_t j = 0; j < t->partitions_n; j++) {
                int32_t p = topics[i].partition_indexes[j];
                const kiq_group_offset_t *o =
                    g && topics[i].name.p ? kiq_group_get_offset(g, topics[i].name.p, (size_t)topics[i].name.len, p) : NULL;
                fill_fetched(r, o, p, &t->partitions[j]);
            }
        }
        return;
    }
    /* every committed offset, by topic */
    size_t n = g ? kiq_str_map_count(g->offsets) : 0;
    kiq_group_offset_t **all = kiq_arena_calloc(&r->arena, n ? n : 1, sizeof *all);
    kiq_str_map_iter_t it;
    void *val;
    size_t k = 0;
    if (g) {
        kiq_str_map_iter_init(&it, g->offsets);
        while (kiq_str_map_next(&it, NULL, NULL, &val)) all[k++] = val;
    }
    qsort(all, n, sizeof *all, cmp_offsets);
    int32_t nt = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(all[i]->topic, all[i - 1]->topic) != 0) nt++;
    *nout = nt;
    *out = kiq_arena_calloc(&r->arena, (size_t)(nt ? nt : 1), sizeof **out);
    int32_t t = -1;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(all[i]->topic, all[i - 1]->topic) != 0) {
            t++;
            kiq_offset_fetch_response_topics_init(&(*out)[t]);
            (*out)[t].name = kiq_request_str(r, all[i]->topic);
            size_t cnt = 0;
            while (i + cnt < n && strcmp(all[i + cnt]->topic, all[i]->topic) == 0) cnt++;
            (*out)[t].partitions = kiq_arena_calloc(&r->arena, cnt, sizeof *(*out)[t].partitions);
        }
        fill_fetched(r, all[i], all[i]->partition, &(*out)[t].partitions[(*out)[t].partitions_n++]);
    }
}

void kiq_group_fetch_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                             const kiq_offset_fetch_request_t *req, kiq_offset_fetch_response_t *resp)
{
    int16_t v = r->header.api_version;
    pthread_mutex_lock(&gc->mu);
    int16_t err = gc->closed ? KIQ_ERR_NOT_COORDINATOR : KIQ_ERR_NONE;
    if (v >= 8) {
        resp->groups_n = req->groups_n > 0 ? req->groups_n : 0;
        resp->groups = kiq_arena_calloc(&r->arena, (size_t)(resp->groups_n ? resp->groups_n : 1), sizeof *resp->groups);
        for (int32_t i = 0; i < resp->groups_n; i++) {
            kiq_offset_fetch_response_groups_t *og = &resp->groups[i];
            kiq_offset_fetch_response_groups_init(og);
            og->group_id = req->groups[i].group_id;
            og->error_code = err ? err : refused(gc, og->group_id) ? KIQ_ERR_NOT_COORDINATOR : KIQ_ERR_NONE;
            if (og->error_code) continue;
            /* the v8 structs have the v0-7 layout field for field */
            fetch_group(gc, r, req->groups[i].group_id,
                        (const kiq_offset_fetch_request_topics_t *)req->groups[i].topics, req->groups[i].topics_n,
                        (kiq_offset_fetch_response_topics_t **)&og->topics, &og->topics_n);
        }
    } else {
        if (!err && refused(gc, req->group_id)) err = KIQ_ERR_NOT_COORDINATOR;
        resp->error_code = err;
        if (!err)
            fetch_group(gc, r, req->group_id, req->topics, v >= 2 ? req->topics_n : (req->topics_n < 0 ? 0 : req->topics_n),
                        &resp->topics, &resp->topics_n);
        else
            resp->topics_n = 0;
    }
    pthread_mutex_unlock(&gc->mu);
}

_Static_assert(sizeof(kiq_offset_fetch_request_groups_topics_t) == sizeof(kiq_offset_fetch_request_topics_t) &&
                   sizeof(kiq_offset_fetch_response_groups_topics_t) == sizeof(kiq_offset_fetch_response_topics_t) &&
                   sizeof(kiq_offset_fetch_response_groups_topics_partitions_t) ==
                       sizeof(kiq_offset_fetch_response_topics_partitions_t),
               "OffsetFetch v8 group entries must keep the v0-7 layout");

/* Topics the members of a consumer group subscribe to (from their
 * ConsumerProtocolSubscription for the chosen protocol). */
static bool subscribed(kiq_group_t *g, kiq_str_t topic)
{
    if (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0) return false;
    for (kiq_group_member_t *m = g->members; m; m = m->next) {
        const kiq_group_protocol_t *p = kiq_group_member_protocol(m, g->protocol);
        if (!p || p->metadata_len < 2) continue;
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_rd_t rd;
        kiq_rd_init(&rd, p->metadata + 2, (size_t)p->metadata_len - 2);
        int16_t version = (int16_t)kiq_be16(p->metadata);
        kiq_consumer_protocol_subscription_t s;
        kiq_consumer_protocol_subscription_init(&s);
        /* newer versions only add fields at the end */
        bool found = false;
        if (version >= 0 && kiq_consumer_protocol_subscription_decode(&rd, version > 1 ? 1 : version, &a, &s) == 0)
            for (int32_t i = 0; i < s.topics_n && !found; i++)
                found = s.topics[i].len == topic.len && memcmp(s.topics[i].p, topic.p, (size_t)topic.len) == 0;
        kiq_arena_reset(&a);
        if (found) return true;
    }
    return false;
}

void kiq_group_delete_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_offset_delete_request_t *req, kiq_offset_delete_response_t *resp)
{
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = find_group(gc, req->group_id);
    if (refused(gc, req->group_id)) resp->error_code = KIQ_ERR_NOT_COORDINATOR;
    else if (!g || g->state == KIQ_GROUP_DEAD) resp->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
    else if (g->state != KIQ_GROUP_EMPTY && (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0))
        resp->error_code = KIQ_ERR_NON_EMPTY_GROUP;
    if (resp->error_code) {
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(&r->arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    for (int32_t i = 0; i < resp->topics_n; i++) {
        const kiq_offset_delete_request_topics_t *tin = &req->topics[i];
        kiq_offset_delete_response_topics_t *t = &resp->topics[i];
        kiq_offset_delete_response_topics_init(t);
        t->name = tin->name;
        t->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
        bool busy = g->state != KIQ_GROUP_EMPTY && subscribed(g, tin->name);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            int32_t p = tin->partitions[j].partition_index;
            kiq_offset_delete_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = p;
            if (busy) {
                t->partitions[j].error_code = KIQ_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
                continue;
            }
            if (!tin->name.p || !kiq_group_get_offset(g, tin->name.p, (size_t)tin->name.len, p)) continue;
            char *name = dup_str(tin->name);
            if (!name || kiq_offsets_records_add_commit_tombstone(&rs, g->id, name, p) != 0)
                t->partitions[j].error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            free(name);
        }
    }
    if (append_records(gc, g, &rs) != 0) {
        KIQ_ERROR("group %s: cannot delete offsets: %s", g->id, kiq_error_get());
        resp->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        for (int32_t i = 0; i < resp->topics_n; i++)
            for (int32_t j = 0; j < resp->topics[i].partitions_n; j++)
                if (!resp->topics[i].partitions[j].error_code && req->topics[i].name.p)
                    kiq_group_remove_offset(g, req->topics[i].name.p, (size_t)req->topics[i].name.len,
                                            resp->topics[i].partitions[j].partition_index);
    }
    kiq_offsets_records_free(&rs);
    pthread_mutex_unlock(&gc->mu);
}

static bool state_wanted(const kiq_list_groups_request_t *req, enum kiq_group_state s)
{
    if (req->states_filter_n <= 0) return true;
    const char *name = kiq_group_state_name(s);
    for (int32_t i = 0; i < req->states_filter_n; i++) {
        kiq_str_t f = req->states_filter[i];
        if (f.p && strlen(name) == (size_t)f.len && strncasecmp(name, f.p, (size_t)f.len) == 0) return true;
    }
    return false;
}

/* ListGroups v5's types: every group here is a "classic" one. */
static bool type_wanted(const kiq_list_groups_request_t *req)
{
    if (req->types_filter_n <= 0) return true;
    for (int32_t i = 0; i < req->types_filter_n; i++) {
        kiq_str_t f = req->types_filter[i];
        if (f.p && f.len == 7 && strncasecmp(f.p, "classic", 7) == 0) return true;
    }
    return false;
}

void kiq_group_list(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_list_groups_request_t *req,
                    kiq_list_groups_response_t *resp)
{
    pthread_mutex_lock(&gc->mu);
    if (gc->closed) {
        resp->error_code = KIQ_ERR_NOT_COORDINATOR;
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    size_t n = kiq_str_map_count(gc->groups);
    resp->groups = kiq_arena_calloc(&r->arena, n ? n : 1, sizeof *resp->groups);
    bool classic = type_wanted(req);
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_t *g = val;
        if (g->state == KIQ_GROUP_DEAD || !state_wanted(req, g->state) || !classic) continue;
        kiq_list_groups_response_groups_t *e = &resp->groups[resp->groups_n++];
        kiq_list_groups_response_groups_init(e);
        e->group_id = kiq_request_str(r, g->id);
        e->protocol_type = kiq_request_str(r, g->protocol_type ? g->protocol_type : "");
        e->group_state = kiq_request_str(r, kiq_group_state_name(g->state));
        e->group_type = KIQ_STR("classic");
    }
    pthread_mutex_unlock(&gc->mu);
}

static void describe_one(kiq_group_coordinator_t *gc, kiq_request_t *r, kiq_str_t id, bool include_operations,
                         kiq_describe_groups_response_groups_t *out)
{
    kiq_describe_groups_response_groups_init(out);
    out->group_id = id;
    kiq_group_t *g = find_group(gc, id);
    if (refused(gc, id)) {
        out->error_code = KIQ_ERR_NOT_COORDINATOR;
        return;
    }
    if (!g) {
        /* Kafka describes an unknown group as Dead, with an error from v6 */
        out->group_state = KIQ_STR("Dead");
        if (r->header.api_version >= 6) {
            out->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
            kiq_error_set("Group " KIQ_STR_FMT " not found.", KIQ_STR_ARG(id));
            out->error_message = kiq_request_error_message(r);
        }
        return;
    }
    if (include_operations) out->authorized_operations = KIQ_ACL_GROUP_OPERATIONS;
    out->group_state = kiq_request_str(r, kiq_group_state_name(g->state));
    out->protocol_type = kiq_request_str(r, g->protocol_type ? g->protocol_type : "");
    out->protocol_data = kiq_request_str(r, g->protocol ? g->protocol : "");
    out->members = kiq_arena_calloc(&r->arena, (size_t)(g->nmembers ? g->nmembers : 1), sizeof *out->members);
    bool stable = g->state == KIQ_GROUP_STABLE;
    for (kiq_group_member_t *m = g->members; m; m = m->next) {
        kiq_describe_groups_response_groups_members_t *e = &out->members[out->members_n++];
        kiq_describe_groups_response_groups_members_init(e);
        e->member_id = kiq_request_str(r, m->id);
        e->group_instance_id = astr(r, m->instance_id);
        e->client_id = kiq_request_str(r, m->client_id);
        e->client_host = kiq_request_str(r, m->client_host);
        /* metadata and assignment belong to a generation: only when stable */
        const kiq_group_protocol_t *p = stable ? kiq_group_member_protocol(m, g->protocol) : NULL;
        uint8_t *md = kiq_arena_alloc(&r->arena, (size_t)(p && p->metadata_len ? p->metadata_len : 1));
        if (p && p->metadata_len) memcpy(md, p->metadata, (size_t)p->metadata_len);
        e->member_metadata = (kiq_bytes_t){md, p ? p->metadata_len : 0};
        int32_t al = stable && m->assignment ? m->assignment_len : 0;
        uint8_t *as = kiq_arena_alloc(&r->arena, (size_t)(al ? al : 1));
        if (al) memcpy(as, m->assignment, (size_t)al);
        e->member_assignment = (kiq_bytes_t){as, al};
    }
}

void kiq_group_describe(kiq_group_coordinator_t *gc, kiq_request_t *r,
                        const kiq_describe_groups_request_t *req, kiq_describe_groups_response_t *resp)
{
    resp->groups_n = req->groups_n > 0 ? req->groups_n : 0;
    resp->groups = kiq_arena_calloc(&r->arena, (size_t)(resp->groups_n ? resp->groups_n : 1), sizeof *resp->groups);
    pthread_mutex_lock(&gc->mu);
    for (int32_t i = 0; i < resp->groups_n; i++)
        describe_one(gc, r, req->groups[i], req->include_authorized_operations, &resp->groups[i]);
    pthread_mutex_unlock(&gc->mu);
}

/* Tombstones for the group's offsets and metadata, then it is gone. */
static int delete_group(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, g->offsets);
    int rc = 0;
    while (rc == 0 && kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_offset_t *o = val;
        rc = kiq_offsets_records_add_commit_tombstone(&rs, g->id, o->topic, o->partition);
    }
    if (rc == 0) rc = kiq_offsets_records_add_group_tombstone(&rs, g->id);
    if (rc == 0) rc = append_records(gc, g, &rs);
    kiq_offsets_records_free(&rs);
    if (rc != 0) return KIQ_ERROR("group %s: cannot delete: %s", g->id, kiq_error_get()), -1;
    KIQ_INFO("group %s deleted", g->id);
    set_state(g, KIQ_GROUP_DEAD);
    remove_group(gc, g);
    return 0;
}

void kiq_group_delete(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_delete_groups_request_t *req,
                      kiq_delete_groups_response_t *resp)
{
    resp->results_n = req->groups_names_n > 0 ? req->groups_names_n : 0;
    resp->results = kiq_arena_calloc(&r->arena, (size_t)(resp->results_n ? resp->results_n : 1), sizeof *resp->results);
    pthread_mutex_lock(&gc->mu);
    for (int32_t i = 0; i < resp->results_n; i++) {
        kiq_delete_groups_response_results_t *e = &resp->results[i];
        kiq_delete_groups_response_results_init(e);
        e->group_id = req->groups_names[i];
        kiq_group_t *g = find_group(gc, e->group_id);
        if (refused(gc, e->group_id)) e->error_code = KIQ_ERR_NOT_COORDINATOR;
        else if (str_empty(e->group_id)) e->error_code = KIQ_ERR_INVALID_GROUP_ID;
        else if (!g || g->state == KIQ_GROUP_DEAD) e->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
        else if (g->state != KIQ_GROUP_EMPTY) e->error_code = KIQ_ERR_NON_EMPTY_GROUP;
        else if (delete_group(gc, g) != 0) e->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    pthread_mutex_unlock(&gc->mu);
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
        else KIQ_ERROR("cannot create " KIQ_OFFSETS_TOPIC ": %s", kiq_error_get());
    }
    kiq_topic_configs_clear(&cfg);
    return rc;
}

/* ---- loading ---- */

static kiq_group_t *load_group_for(kiq_group_coordinator_t *gc, kiq_str_t id, int32_t partitions)
{
    kiq_group_t *g = find_group(gc, id);
    if (!g && (g = kiq_group_new(id.p, (size_t)id.len, kiq_group_partition_for(id.p, (size_t)id.len, partitions))) &&
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
                        const kiq_offset_commit_value_t *v)
{
    load_state_t *ls = ctx;
    if (!group.p || !topic.p) return;
    kiq_group_t *g = load_group_for(ls->gc, group, ls->partitions);
    if (!g) return;
    if (!v) {
        kiq_group_remove_offset(g, topic.p, (size_t)topic.len, partition);
        return;
    }
    kiq_group_offset_t *o = calloc(1, sizeof *o);
    if (!o || !(o->topic = dup_str(topic))) {
        free(o);
        return;
    }
    o->partition = partition;
    o->offset = v->offset;
    o->leader_epoch = v->leader_epoch;
    o->metadata = copy_str(v->metadata);
    o->commit_ts_ms = v->commit_timestamp;
    o->expire_ts_ms = v->expire_timestamp;
    if (kiq_group_put_offset(g, o) != 0) kiq_group_offset_free(o);
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
    g->protocol_type = v->protocol_type.len > 0 ? dup_str(v->protocol_type) : NULL;
    g->protocol = dup_str(v->protocol);
    g->leader = dup_str(v->leader);
    g->generation = v->generation;
    g->state_ts_ms = v->current_state_timestamp >= 0 ? v->current_state_timestamp : kiq_clock_wall_ms();
    kiq_group_member_t **tail = &g->members;
    for (int32_t i = 0; g->protocol && i < v->members_n; i++) {
        const kiq_group_metadata_value_members_t *mv = &v->members[i];
        kiq_group_member_t *m = calloc(1, sizeof *m);
        if (!m) break;
        m->id = dup_str(mv->member_id);
        m->instance_id = dup_str(mv->group_instance_id);
        m->client_id = dup_str(mv->client_id.p ? mv->client_id : KIQ_STR(""));
        m->client_host = dup_str(mv->client_host.p ? mv->client_host : KIQ_STR(""));
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

/* Under mu: the groups and offsets of one partition of __consumer_offsets
 * (only < 0: of all of them). */
static int load_partitions(kiq_group_coordinator_t *gc, int32_t only)
{
    kiq_topic_t *t = kiq_topics_get(gc->b.topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    if (!t) return 0;
    load_state_t ls = {gc, t->npartitions};
    kiq_offsets_loader_t ld = {.ctx = &ls, .offset = load_offset, .group = load_group};
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
        for (kiq_group_member_t *m = g->members; m; m = m->next) touch(m);
        if (!g->protocol_type && kiq_str_map_count(g->offsets) == 0 && drop) drop[nd++] = g;
        else ngroups++;
    }
    for (size_t i = 0; i < nd; i++) remove_group(gc, drop[i]);
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
            answer_join(drop[i], m, KIQ_ERR_NOT_COORDINATOR);
            answer_sync(drop[i], m, KIQ_ERR_NOT_COORDINATOR);
        }
        remove_group(gc, drop[i]);
    }
    free(drop);
}

void kiq_group_coordinator_partition_led(kiq_group_coordinator_t *gc, int32_t partition, bool led)
{
    if (!gc || partition < 0) return;
    pthread_mutex_lock(&gc->mu);
    if (led && !leads(gc, partition)) {
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
        load_partitions(gc, partition);
        pthread_cond_signal(&gc->wake);
    } else if (!led && leads(gc, partition)) {
        gc->led[partition] = false;
        drop_partition(gc, partition);
        KIQ_INFO("no longer coordinating the groups of " KIQ_OFFSETS_TOPIC "-%d", partition);
    }
    pthread_mutex_unlock(&gc->mu);
}

/* ---- expiry: the timer thread ---- */

/* Offsets past offsets.retention.minutes: Kafka counts from when the group
 * became empty, or from each commit for a group that never had members. */
static void expire_offsets(kiq_group_coordinator_t *gc, int64_t now_ms)
{
    size_t n = kiq_str_map_count(gc->groups);
    if (!n) return;
    kiq_group_t **gs = calloc(n, sizeof *gs);
    if (!gs) return;
    size_t k = 0;
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) gs[k++] = val;
    for (size_t i = 0; i < k; i++) {
        kiq_group_t *g = gs[i];
        bool empty = g->state == KIQ_GROUP_EMPTY;
        size_t no = kiq_str_map_count(g->offsets);
        kiq_group_offset_t **expired = calloc(no + 1, sizeof *expired);
        if (!expired) continue;
        size_t ne = 0;
        kiq_str_map_iter_init(&it, g->offsets);
        while (kiq_str_map_next(&it, NULL, NULL, &val)) {
            kiq_group_offset_t *o = val;
            int64_t since = g->protocol_type ? g->state_ts_ms : o->commit_ts_ms;
            if ((o->expire_ts_ms >= 0 && now_ms >= o->expire_ts_ms) ||
                (o->expire_ts_ms < 0 && empty && now_ms - since >= gc->retention_ms))
                expired[ne++] = o;
        }
        if (ne) {
            kiq_offsets_records_t rs;
            kiq_offsets_records_init(&rs, now_ms);
            int rc = 0;
            for (size_t j = 0; j < ne && rc == 0; j++)
                rc = kiq_offsets_records_add_commit_tombstone(&rs, g->id, expired[j]->topic, expired[j]->partition);
            if (rc == 0) rc = append_records(gc, g, &rs);
            kiq_offsets_records_free(&rs);
            if (rc == 0) {
                KIQ_INFO("group %s: %zu committed offsets expired", g->id, ne);
                for (size_t j = 0; j < ne; j++)
                    kiq_group_remove_offset(g, expired[j]->topic, strlen(expired[j]->topic), expired[j]->partition);
            } else {
                KIQ_ERROR("group %s: cannot expire offsets: %s", g->id, kiq_error_get());
            }
        }
        free(expired);
        if (empty && kiq_str_map_count(g->offsets) == 0 && now_ms - g->state_ts_ms >= gc->retention_ms)
            delete_group(gc, g);
    }
    free(gs);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* One pass over the deadlines; returns the next one. */
static int64_t run_timers(kiq_group_coordinator_t *gc, int64_t now)
{
    int64_t next = now + 1000000000LL;
    if (now >= gc->next_retention_ns) {
        expire_offsets(gc, kiq_clock_wall_ms());
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
                remove_member(gc, g, m, "session timed out");
                nm = g->members; /* the list may have changed wholesale; restart */
                continue;
            }
            next = min64(next, m->heartbeat_deadline_ns);
        }
        if (g->state == KIQ_GROUP_PREPARING_REBALANCE) {
            if (now >= g->join_deadline_ns) join_deadline(gc, g);
            else if (!g->initial_delay) try_complete_join(gc, g);
            if (g->state == KIQ_GROUP_PREPARING_REBALANCE) next = min64(next, g->join_deadline_ns);
        }
    }
    return next;
}

static void *timer_main(void *arg)
{
    kiq_group_coordinator_t *gc = arg;
    kiq_say_thread_name("group-coordinator");
    pthread_mutex_lock(&gc->mu);
    while (!gc->closed) {
        kiq_cond_wait_until(&gc->wake, &gc->mu, run_timers(gc, kiq_clock_mono_ns()));
    }
    pthread_mutex_unlock(&gc->mu);
    return NULL;
}

/* ---- lifecycle ---- */

kiq_group_coordinator_t *kiq_group_coordinator_new(const kiq_group_context_t *b)
{
    kiq_group_coordinator_t *gc = calloc(1, sizeof *gc);
    if (!gc) return NULL;
    gc->b = *b;
    gc->cluster = b->cluster;
    gc->groups = kiq_str_map_new();
    kiq_cond_init_monotonic(&gc->wake);
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
    int rc = gc->cluster ? 0 : load_partitions(gc, -1);
    gc->closed = false;
    gc->next_retention_ns = kiq_clock_mono_ns() + gc->retention_check_ms * 1000000;
    pthread_mutex_unlock(&gc->mu);
    if (rc != 0) return -1;
    if (pthread_create(&gc->thread, NULL, timer_main, gc) != 0) return kiq_error_errno("cannot start the group coordinator");
    gc->thread_started = true;
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
            answer_join(g, m, KIQ_ERR_NOT_COORDINATOR);
            answer_sync(g, m, KIQ_ERR_NOT_COORDINATOR);
        }
    }
    pthread_cond_signal(&gc->wake);
    pthread_mutex_unlock(&gc->mu);
    if (gc->thread_started) pthread_join(gc->thread, NULL);
    gc->thread_started = false;
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
    pthread_cond_destroy(&gc->wake);
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
