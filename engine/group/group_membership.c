/* Group membership (group_coordinator.h): JoinGroup and the rebalance,
 * SyncGroup, Heartbeat, LeaveGroup, and ListGroups, DescribeGroups,
 * DeleteGroups, as Kafka's GroupCoordinator answers them. */
#include "group/coordinator_internal.h"

#include "group/consumer_group.h"

/* ---- answering parked requests ---- */

/* The JoinGroup answer for member m of the current generation: the leader
 * also gets every member's metadata for the chosen protocol. */
static void fill_join(kiq_group_t *g, kiq_group_member_t *m, kiq_request_t *r, kiq_join_group_response_t *resp)
{
    resp->error_code = KIQ_ERR_NONE;
    resp->generation_id = g->generation;
    resp->protocol_type = kiq_gc_astr(r, g->protocol_type);
    resp->protocol_name = kiq_gc_astr(r, g->protocol);
    resp->leader = kiq_gc_astr(r, g->leader ? g->leader : "");
    resp->member_id = kiq_request_str(r, m->id);
    resp->members_n = 0;
    if (!g->leader || strcmp(g->leader, m->id) != 0) return;
    resp->members = kiq_arena_calloc(&r->arena, (size_t)g->nmembers, sizeof *resp->members);
    int i = 0;
    for (kiq_group_member_t *o = g->members; o; o = o->next) {
        kiq_join_group_response_members_t *e = &resp->members[i++];
        kiq_join_group_response_members_init(e);
        e->member_id = kiq_request_str(r, o->id);
        e->group_instance_id = kiq_gc_astr(r, o->instance_id);
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
    resp->protocol_type = kiq_gc_astr(r, g->protocol_type);
    resp->protocol_name = kiq_gc_astr(r, g->protocol);
    uint8_t *copy = kiq_arena_alloc(&r->arena, (size_t)(m->assignment_len > 0 ? m->assignment_len : 1));
    if (m->assignment_len > 0) memcpy(copy, m->assignment, (size_t)m->assignment_len);
    resp->assignment = (kiq_bytes_t){copy, m->assignment ? m->assignment_len : 0};
}

void kiq_gc_touch(kiq_group_member_t *m)
{
    m->heartbeat_deadline_ns = kiq_clock_mono_ns() + (int64_t)m->session_timeout_ms * 1000000;
}

/* Answers m's parked JoinGroup: with the current generation when error is
 * 0, else with the error. */
void kiq_gc_answer_join(kiq_group_t *g, kiq_group_member_t *m, int16_t error)
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
        kiq_gc_touch(m);
        fill_join(g, m, r, resp);
    }
    kiq_request_respond(r, resp);
}

/* Answers m's parked SyncGroup: its assignment when error is 0. */
void kiq_gc_answer_sync(kiq_group_t *g, kiq_group_member_t *m, int16_t error)
{
    if (!m->sync_r) return;
    kiq_request_t *r = m->sync_r;
    kiq_sync_group_response_t *resp = m->sync_resp;
    m->sync_r = NULL;
    m->sync_resp = NULL;
    if (error) {
        resp->error_code = error;
    } else {
        kiq_gc_touch(m);
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

void kiq_gc_try_complete_join(kiq_group_coordinator_t *gc, kiq_group_t *g)
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

void kiq_gc_prepare_rebalance(kiq_group_coordinator_t *gc, kiq_group_t *g, const char *why)
{
    if (g->state == KIQ_GROUP_COMPLETING_REBALANCE) {
        for (kiq_group_member_t *m = g->members; m; m = m->next) {
            kiq_gc_answer_sync(g, m, KIQ_ERR_REBALANCE_IN_PROGRESS);
            free(m->assignment);
            m->assignment = NULL;
            m->assignment_len = 0;
        }
    }
    bool initial = g->state == KIQ_GROUP_EMPTY;
    int64_t now = kiq_clock_mono_ns();
    int32_t rt = max_rebalance_timeout(g);
    KIQ_INFO("group %s: preparing to rebalance (generation %d, %s)", g->id, g->generation, why);
    kiq_gc_set_state(g, KIQ_GROUP_PREPARING_REBALANCE);
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
    kiq_gc_deadline_moved(gc);
    kiq_gc_try_complete_join(gc, g);
}

void kiq_gc_remove_member(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_group_member_t *m, const char *why)
{
    KIQ_INFO("group %s: member %s %s", g->id, m->id, why);
    kiq_gc_answer_join(g, m, KIQ_ERR_UNKNOWN_MEMBER_ID);
    kiq_gc_answer_sync(g, m, KIQ_ERR_UNKNOWN_MEMBER_ID);
    kiq_group_unlink_member(g, m);
    kiq_group_member_free(m);
    if (g->state == KIQ_GROUP_STABLE || g->state == KIQ_GROUP_COMPLETING_REBALANCE)
        kiq_gc_prepare_rebalance(gc, g, why);
    else
        kiq_gc_try_complete_join(gc, g);
}

static void complete_join(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    /* members that did not rejoin in time are out */
    for (kiq_group_member_t *m = g->members, *next; m; m = next) {
        next = m->next;
        if (!m->join_r) {
            KIQ_INFO("group %s: member %s did not rejoin in time; removed", g->id, m->id);
            kiq_gc_answer_sync(g, m, KIQ_ERR_UNKNOWN_MEMBER_ID);
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
        kiq_gc_set_state(g, KIQ_GROUP_EMPTY);
        KIQ_INFO("group %s: empty at generation %d", g->id, g->generation);
        kiq_gc_store_group(gc, g);
        return;
    }
    const char *p = kiq_group_select_protocol(g);
    g->protocol = p ? strdup(p) : NULL;
    if (!g->leader || !kiq_group_find_member(g, KIQ_STR(g->leader))) {
        free(g->leader);
        g->leader = strdup(g->members->id);
    }
    kiq_gc_set_state(g, KIQ_GROUP_COMPLETING_REBALANCE);
    KIQ_INFO("group %s: generation %d with %d members, protocol %s, leader %s", g->id, g->generation, g->nmembers,
             g->protocol ? g->protocol : "(none)", g->leader);
    for (kiq_group_member_t *m = g->members; m; m = m->next) kiq_gc_answer_join(g, m, KIQ_ERR_NONE);
}

/* The join phase's deadline passed (timer thread). */
void kiq_gc_join_deadline(kiq_group_coordinator_t *gc, kiq_group_t *g)
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
    if (m->join_r && m->join_r != r) kiq_gc_answer_join(g, m, KIQ_ERR_REBALANCE_IN_PROGRESS); /* a duplicate join */
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

char *kiq_gc_client_host(const char *peer)
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
    m->instance_id = kiq_gc_dup_str(a->req->group_instance_id);
    m->client_id = kiq_gc_dup_str(r->header.client_id.p ? r->header.client_id : KIQ_STR(""));
    m->client_host = kiq_gc_client_host(r->peer);
    if (!m->client_id || !m->client_host || kiq_group_member_set_protocols(m, a->protos, a->nprotos) != 0) {
        kiq_group_member_free(m);
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return false;
    }
    update_member(m, a);
    if (!g->protocol_type) g->protocol_type = kiq_gc_dup_str(a->req->protocol_type);
    kiq_group_member_t **tail = &g->members;
    while (*tail) tail = &(*tail)->next;
    *tail = m;
    g->nmembers++;
    g->new_member_added = true;
    kiq_gc_touch(m);
    bool rc = park_join(g, m, r, resp);
    if (g->state == KIQ_GROUP_PREPARING_REBALANCE)
        kiq_gc_try_complete_join(gc, g);
    else
        kiq_gc_prepare_rebalance(gc, g, "a member joined");
    return rc;
}

static bool take_pending(kiq_group_t *g, kiq_str_t id)
{
    for (kiq_group_pending_t **pp = &g->pending; *pp; pp = &(*pp)->next) {
        if (kiq_gc_str_eq((*pp)->id, id)) {
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
    char *id = kiq_gc_new_member_id(r->header.client_id);
    if (!id) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return false;
    }
    KIQ_INFO("group %s: static member %s rejoins as %s", g->id, m->instance_id, id);
    kiq_gc_answer_join(g, m, KIQ_ERR_FENCED_INSTANCE_ID);
    kiq_gc_answer_sync(g, m, KIQ_ERR_FENCED_INSTANCE_ID);
    bool was_leader = g->leader && strcmp(g->leader, m->id) == 0;
    bool changed = !same_protocols(m, a->protos, a->nprotos);
    free(m->id);
    m->id = id;
    if (was_leader) {
        free(g->leader);
        g->leader = strdup(id);
    }
    update_member(m, a);
    kiq_gc_touch(m);
    if (g->state == KIQ_GROUP_STABLE && !changed) {
        kiq_gc_store_group(gc, g);
        fill_join(g, m, r, resp);
        /* JoinGroup v9: the returning leader keeps the assignment as it is */
        resp->skip_assignment = was_leader && r->header.api_version >= 9;
        return false;
    }
    bool rc = park_join(g, m, r, resp);
    if (g->state == KIQ_GROUP_PREPARING_REBALANCE)
        kiq_gc_try_complete_join(gc, g);
    else
        kiq_gc_prepare_rebalance(gc, g, "a static member rejoined with other metadata");
    return rc;
}

static bool join_locked(kiq_group_coordinator_t *gc, kiq_request_t *r, const join_args_t *a,
                       kiq_join_group_response_t *resp)
{
    const kiq_join_group_request_t *req = a->req;
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    bool unknown_member = kiq_gc_str_empty(req->member_id);
    if (!g) {
        if (!unknown_member) return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
        if (!(g = kiq_gc_create_group(gc, req->group_id)))
            return resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR, false;
    }
    if (g->state == KIQ_GROUP_DEAD) return resp->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE, false;
    if (g->nmembers > 0 && (!kiq_gc_str_eq(g->protocol_type, req->protocol_type) ||
                            !kiq_group_supports(g, a->protos, a->nprotos)))
        return resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL, false;

    if (unknown_member) {
        kiq_group_member_t *old = kiq_group_find_instance(g, req->group_instance_id);
        if (old) return static_rejoin(gc, g, old, r, a, resp);
        if (g->nmembers >= gc->max_size) return resp->error_code = KIQ_ERR_GROUP_MAX_SIZE_REACHED, false;
        char *id = kiq_gc_new_member_id(r->header.client_id);
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
            kiq_gc_deadline_moved(gc);
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
            return add_member(gc, g, kiq_gc_dup_str(req->member_id), r, a, resp);
        }
        return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
    }
    if (req->group_instance_id.p && !kiq_gc_str_eq(m->instance_id, req->group_instance_id))
        return resp->error_code = KIQ_ERR_FENCED_INSTANCE_ID, false;
    kiq_gc_touch(m);
    switch (g->state) {
    case KIQ_GROUP_PREPARING_REBALANCE: {
        update_member(m, a);
        bool rc = park_join(g, m, r, resp);
        kiq_gc_try_complete_join(gc, g);
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
        kiq_gc_prepare_rebalance(gc, g, leader ? "the leader rejoined" : "a member changed its metadata");
        return rc;
    }
    default: return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
    }
}

/* A classic member joining a consumer protocol group (KIP-848) without
 * members makes it a classic one, its consumer records deleted (one with
 * members takes the member in: group_mixed.c). */
static bool classic_join_allowed(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    if (g->share) return false;
    if (!g->consumer) return true;
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CTARGET_EPOCH, g->id, NULL);
    kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CGROUP, g->id, NULL);
    if (kiq_gc_append_records(gc, g, &rs) != 0)
        KIQ_ERROR_LIMITED("group %s: cannot delete its consumer group records: %s", g->id, kiq_error_get());
    kiq_offsets_records_free(&rs);
    kiq_cgroup_free(g->consumer);
    g->consumer = NULL;
    free(g->protocol_type);
    g->protocol_type = NULL;
    return true;
}

bool kiq_group_join(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_join_group_request_t *req,
                   kiq_join_group_response_t *resp)
{
    resp->member_id = req->member_id.p ? req->member_id : KIQ_STR("");
    resp->protocol_name = r->header.api_version >= 7 ? KIQ_STR_NULL : KIQ_STR("");
    if (kiq_gc_str_empty(req->group_id)) return resp->error_code = KIQ_ERR_INVALID_GROUP_ID, false;
    if (req->session_timeout_ms < gc->min_session_ms || req->session_timeout_ms > gc->max_session_ms)
        return resp->error_code = KIQ_ERR_INVALID_SESSION_TIMEOUT, false;
    if (kiq_gc_str_empty(req->protocol_type) || req->protocols_n <= 0)
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
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    bool mixed = g && g->consumer && g->consumer->nmembers > 0;
    bool rc = kiq_gc_refused(gc, req->group_id) ? (resp->error_code = KIQ_ERR_NOT_COORDINATOR, false)
              : mixed ? kiq_gc_classic_join_consumer(gc, g, r, req, a.protos, a.nprotos, a.rebalance_ms, resp)
              : g && !classic_join_allowed(gc, g) ? (resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL, false)
                                                  : join_locked(gc, r, &a, resp);
    pthread_mutex_unlock(&gc->mu);
    return rc;
}

/* ---- SyncGroup, Heartbeat, LeaveGroup ---- */

/* The checks SyncGroup, Heartbeat and OffsetCommit share: 0 with *out, or
 * the Kafka error. */
int16_t kiq_gc_check_member(kiq_group_t *g, kiq_str_t member_id, kiq_str_t instance_id, int32_t generation,
                            kiq_group_member_t **out)
{
    if (!g) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    if (g->state == KIQ_GROUP_DEAD) return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    kiq_group_member_t *inst = kiq_group_find_instance(g, instance_id);
    if (inst && !kiq_gc_str_eq(inst->id, member_id)) return KIQ_ERR_FENCED_INSTANCE_ID;
    kiq_group_member_t *m = kiq_group_find_member(g, member_id);
    if (!m) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    if (generation != g->generation) return KIQ_ERR_ILLEGAL_GENERATION;
    *out = m;
    return KIQ_ERR_NONE;
}

static bool sync_locked(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_sync_group_request_t *req,
                       kiq_sync_group_response_t *resp)
{
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    if (g && g->consumer) return resp->error_code = kiq_gc_classic_sync_consumer(gc, g, r, req, resp), false;
    kiq_group_member_t *m = NULL;
    int16_t err = kiq_gc_check_member(g, req->member_id, req->group_instance_id, req->generation_id, &m);
    if (err) return resp->error_code = err, false;
    if ((req->protocol_type.p && !kiq_gc_str_eq(g->protocol_type, req->protocol_type)) ||
        (req->protocol_name.p && !kiq_gc_str_eq(g->protocol, req->protocol_name)))
        return resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL, false;
    switch (g->state) {
    case KIQ_GROUP_PREPARING_REBALANCE: return resp->error_code = KIQ_ERR_REBALANCE_IN_PROGRESS, false;
    case KIQ_GROUP_STABLE:
        kiq_gc_touch(m);
        fill_sync(g, m, r, resp);
        return false;
    case KIQ_GROUP_COMPLETING_REBALANCE: break;
    default: return resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID, false;
    }
    if (m->sync_r) kiq_gc_answer_sync(g, m, KIQ_ERR_REBALANCE_IN_PROGRESS); /* a duplicate sync */
    r->t.handled = kiq_clock_mono_ns();
    m->sync_r = r;
    m->sync_resp = resp;
    kiq_gc_touch(m);
    if (!g->leader || strcmp(g->leader, m->id) != 0) return true;
    /* the leader's assignment completes the rebalance */
    for (kiq_group_member_t *o = g->members; o; o = o->next) {
        free(o->assignment);
        o->assignment = NULL;
        o->assignment_len = 0;
        for (int32_t i = 0; i < req->assignments_n; i++) {
            const kiq_sync_group_request_assignments_t *as = &req->assignments[i];
            if (!kiq_gc_str_eq(o->id, as->member_id) || !as->assignment.p) continue;
            o->assignment = malloc((size_t)(as->assignment.len > 0 ? as->assignment.len : 1));
            if (o->assignment) {
                memcpy(o->assignment, as->assignment.p, (size_t)as->assignment.len);
                o->assignment_len = as->assignment.len;
            }
            break;
        }
    }
    kiq_gc_set_state(g, KIQ_GROUP_STABLE);
    kiq_gc_store_group(gc, g);
    for (kiq_group_member_t *o = g->members; o; o = o->next) kiq_gc_answer_sync(g, o, KIQ_ERR_NONE);
    return true;
}

bool kiq_group_sync(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_sync_group_request_t *req,
                   kiq_sync_group_response_t *resp)
{
    resp->assignment = (kiq_bytes_t){(const uint8_t *)"", 0};
    if (kiq_gc_str_empty(req->group_id)) return resp->error_code = KIQ_ERR_INVALID_GROUP_ID, false;
    pthread_mutex_lock(&gc->mu);
    bool rc = kiq_gc_refused(gc, req->group_id) ? (resp->error_code = KIQ_ERR_NOT_COORDINATOR, false)
                                        : sync_locked(gc, r, req, resp);
    pthread_mutex_unlock(&gc->mu);
    return rc;
}

void kiq_group_heartbeat(kiq_group_coordinator_t *gc, const kiq_heartbeat_request_t *req,
                         kiq_heartbeat_response_t *resp)
{
    if (kiq_gc_str_empty(req->group_id)) {
        resp->error_code = KIQ_ERR_INVALID_GROUP_ID;
        return;
    }
    pthread_mutex_lock(&gc->mu);
    if (kiq_gc_refused(gc, req->group_id)) {
        resp->error_code = KIQ_ERR_NOT_COORDINATOR;
    } else {
        kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
        kiq_group_member_t *m = NULL;
        resp->error_code = g && g->consumer ? kiq_gc_classic_heartbeat_consumer(gc, g, req)
                                            : kiq_gc_check_member(g, req->member_id, req->group_instance_id,
                                                                  req->generation_id, &m);
        if (!resp->error_code && !g->consumer) {
            if (g->state == KIQ_GROUP_EMPTY) {
                resp->error_code = KIQ_ERR_UNKNOWN_MEMBER_ID;
            } else {
                kiq_gc_touch(m);
                if (g->state == KIQ_GROUP_PREPARING_REBALANCE) resp->error_code = KIQ_ERR_REBALANCE_IN_PROGRESS;
            }
        }
    }
    pthread_mutex_unlock(&gc->mu);
}

/* One leaving member: by instance id when given (static), else by id. */
static int16_t leave_one(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_str_t member_id, kiq_str_t instance_id)
{
    if (g->consumer) return kiq_gc_classic_leave_consumer(gc, g, member_id, instance_id);
    kiq_group_member_t *m;
    if (instance_id.p) {
        m = kiq_group_find_instance(g, instance_id);
        if (m && !kiq_gc_str_empty(member_id) && !kiq_gc_str_eq(m->id, member_id)) return KIQ_ERR_FENCED_INSTANCE_ID;
    } else {
        m = kiq_group_find_member(g, member_id);
    }
    if (!m) {
        if (!instance_id.p && take_pending(g, member_id)) return KIQ_ERR_NONE;
        return KIQ_ERR_UNKNOWN_MEMBER_ID;
    }
    kiq_gc_remove_member(gc, g, m, "left the group");
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
    if (kiq_gc_str_empty(req->group_id)) {
        resp->error_code = KIQ_ERR_INVALID_GROUP_ID;
        return;
    }
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    if (kiq_gc_refused(gc, req->group_id)) {
        resp->error_code = KIQ_ERR_NOT_COORDINATOR;
    } else if (!g && batch) {
        /* v3+: each member's own error, as Kafka answers for a group it does not know */
        for (int32_t i = 0; i < resp->members_n; i++) resp->members[i].error_code = KIQ_ERR_UNKNOWN_MEMBER_ID;
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

static bool state_wanted(const kiq_list_groups_request_t *req, const char *name)
{
    if (req->states_filter_n <= 0) return true;
    for (int32_t i = 0; i < req->states_filter_n; i++) {
        kiq_str_t f = req->states_filter[i];
        if (f.p && strlen(name) == (size_t)f.len && strncasecmp(name, f.p, (size_t)f.len) == 0) return true;
    }
    return false;
}

/* ListGroups v5's types: "consumer" (KIP-848) or "classic". */
static bool type_wanted(const kiq_list_groups_request_t *req, const char *type)
{
    if (req->types_filter_n <= 0) return true;
    size_t n = strlen(type);
    for (int32_t i = 0; i < req->types_filter_n; i++) {
        kiq_str_t f = req->types_filter[i];
        if (f.p && (size_t)f.len == n && strncasecmp(f.p, type, n) == 0) return true;
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
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_t *g = val;
        const char *type = g->consumer ? "consumer" : g->share ? "share" : "classic";
        /* a consumer group's states are its own (Assigning, Reconciling, ...) */
        const char *state = g->consumer ? kiq_cgroup_state_name(g->consumer)
                            : g->share  ? (g->share->nmembers ? "Stable" : "Empty")
                                        : kiq_group_state_name(g->state);
        if (g->state == KIQ_GROUP_DEAD || !state_wanted(req, state) || !type_wanted(req, type)) continue;
        kiq_list_groups_response_groups_t *e = &resp->groups[resp->groups_n++];
        kiq_list_groups_response_groups_init(e);
        e->group_id = kiq_request_str(r, g->id);
        e->protocol_type = kiq_request_str(r, g->protocol_type ? g->protocol_type : "");
        e->group_state = kiq_request_str(r, state);
        e->group_type = KIQ_STR(type);
    }
    pthread_mutex_unlock(&gc->mu);
}

static void describe_one(kiq_group_coordinator_t *gc, kiq_request_t *r, kiq_str_t id, bool include_operations,
                         kiq_describe_groups_response_groups_t *out)
{
    kiq_describe_groups_response_groups_init(out);
    out->group_id = id;
    kiq_group_t *g = kiq_gc_find_group(gc, id);
    if (kiq_gc_refused(gc, id)) {
        out->error_code = KIQ_ERR_NOT_COORDINATOR;
        return;
    }
    if (!g || g->consumer || g->share) {
        /* Kafka describes an unknown group, or one of the consumer
         * protocol (ConsumerGroupDescribe's) or a share group
         * (ShareGroupDescribe's), as Dead, with an error from v6 */
        out->group_state = KIQ_STR("Dead");
        if (r->header.api_version >= 6) {
            out->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
            if (g) kiq_error_set("Group " KIQ_STR_FMT " is not a classic group.", KIQ_STR_ARG(id));
            else kiq_error_set("Group " KIQ_STR_FMT " not found.", KIQ_STR_ARG(id));
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
        e->group_instance_id = kiq_gc_astr(r, m->instance_id);
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
int kiq_gc_delete_group(kiq_group_coordinator_t *gc, kiq_group_t *g)
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
    if (rc == 0 && g->consumer) rc = kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CTARGET_EPOCH, g->id, NULL);
    if (rc == 0 && g->consumer) rc = kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CGROUP, g->id, NULL);
    if (rc == 0) rc = kiq_gc_append_records(gc, g, &rs);
    kiq_offsets_records_free(&rs);
    if (rc != 0) return KIQ_ERROR("group %s: cannot delete: %s", g->id, kiq_error_get()), -1;
    KIQ_INFO("group %s deleted", g->id);
    kiq_gc_set_state(g, KIQ_GROUP_DEAD);
    kiq_gc_remove_group(gc, g);
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
        kiq_group_t *g = kiq_gc_find_group(gc, e->group_id);
        if (kiq_gc_refused(gc, e->group_id)) e->error_code = KIQ_ERR_NOT_COORDINATOR;
        else if (kiq_gc_str_empty(e->group_id)) e->error_code = KIQ_ERR_INVALID_GROUP_ID;
        else if (!g || g->state == KIQ_GROUP_DEAD) e->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
        else if (g->state != KIQ_GROUP_EMPTY) e->error_code = KIQ_ERR_NON_EMPTY_GROUP;
        else if (kiq_gc_delete_group(gc, g) != 0) e->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    pthread_mutex_unlock(&gc->mu);
}
