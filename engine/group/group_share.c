/* Share groups (KIP-932) in the coordinator: ShareGroupHeartbeat and
 * ShareGroupDescribe. Membership works as in a KIP-848 consumer group (a
 * new member, a changed subscription or subscribed topic bumps the group
 * epoch; the assignor computes every member's target for it) but nothing
 * is revoked: a partition may be assigned to several members at once, so
 * a member takes its target at its next heartbeat. The records a member
 * consumes are handed out by each partition's leader (share/), not here.
 * Membership lives in memory only: after a coordinator move the members
 * join again (their heartbeats get UNKNOWN_MEMBER_ID). */
#include "group/coordinator_internal.h"

#include <limits.h>
#include <stdarg.h>

#include "group/consumer_group.h"

static int16_t fail(kiq_request_t *r, kiq_share_group_heartbeat_response_t *resp, int16_t err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int16_t fail(kiq_request_t *r, kiq_share_group_heartbeat_response_t *resp, int16_t err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kiq_error_setv(fmt, ap);
    va_end(ap);
    resp->error_code = err;
    resp->error_message = kiq_request_error_message(r);
    /* as Kafka answers an error: no epoch, no interval */
    resp->member_epoch = 0;
    resp->heartbeat_interval_ms = 0;
    return err;
}

static void sync_state(kiq_group_t *g)
{
    kiq_gc_set_state(g, g->share->nmembers > 0 ? KIQ_GROUP_STABLE : KIQ_GROUP_EMPTY);
}

static void remove_member(kiq_group_t *g, kiq_cg_member_t *m, const char *why)
{
    KIQ_INFO("share group %s: member %s leaves (%s)", g->id, m->id, why);
    kiq_cgroup_remove_member(g->share, m);
    g->share->epoch++;
    sync_state(g);
}

int64_t kiq_gc_share_timers(kiq_group_coordinator_t *gc, kiq_group_t *g, int64_t now_ns)
{
    (void)gc;
    int64_t next = INT64_MAX;
    for (kiq_cg_member_t *m = g->share->members, *nm; m; m = nm) {
        nm = m->next;
        if (now_ns >= m->session_deadline_ns) remove_member(g, m, "session timed out");
        else if (m->session_deadline_ns < next) next = m->session_deadline_ns;
    }
    return next;
}

/* The subscribed topics that exist, sorted by name, in a; *hash of their
 * names, ids and partition counts (a change bumps the group epoch). */
static kiq_cg_topic_t *subscribed(kiq_group_coordinator_t *gc, const kiq_cgroup_t *cg, kiq_arena_t *a, int *n,
                                  int64_t *hash)
{
    int cap = 0;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) cap += m->ntopics;
    kiq_cg_topic_t *t = kiq_arena_calloc(a, (size_t)(cap ? cap : 1), sizeof *t);
    *n = 0;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        for (int i = 0; i < m->ntopics; i++) {
            bool seen = false;
            for (int k = 0; k < *n && !seen; k++) seen = strcmp(t[k].name, m->topics[i]) == 0;
            if (seen || !kiq_gc_topic_info(gc, m->topics[i], a, &t[*n].id, &t[*n].npartitions)) continue;
            t[(*n)++].name = kiq_arena_strndup(a, m->topics[i], strlen(m->topics[i]));
        }
    /* sorted by name: insertion sort, subscriptions are short */
    for (int i = 1; i < *n; i++)
        for (int j = i; j > 0 && strcmp(t[j - 1].name, t[j].name) > 0; j--) {
            kiq_cg_topic_t x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    *hash = kiq_cg_topics_hash(t, *n);
    return t;
}

/* Kafka's request checks: INVALID_REQUEST with what is wrong. */
static int16_t check_request(kiq_request_t *r, const kiq_share_group_heartbeat_request_t *req,
                             kiq_share_group_heartbeat_response_t *resp)
{
    if (kiq_gc_str_empty(req->group_id)) return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "GroupId can't be empty.");
    if (kiq_gc_str_empty(req->member_id)) return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "MemberId can't be empty.");
    if (req->member_epoch < -1)
        return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "MemberEpoch is invalid.");
    if (req->member_epoch == 0 && req->subscribed_topic_names_n < 0)
        return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "SubscribedTopicNames must be set in first request.");
    return KIQ_ERR_NONE;
}

/* The share group to heartbeat in: found, or created for a join (an id
 * no group of another kind holds). NULL with resp's error set. */
static kiq_group_t *heartbeat_group(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                    const kiq_share_group_heartbeat_request_t *req,
                                    kiq_share_group_heartbeat_response_t *resp)
{
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    if (!g && req->member_epoch != 0) {
        fail(r, resp, KIQ_ERR_UNKNOWN_MEMBER_ID, "Share group " KIQ_STR_FMT " has no such member.",
             KIQ_STR_ARG(req->group_id));
        return NULL;
    }
    if (!g && !(g = kiq_gc_create_group(gc, req->group_id))) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
        return NULL;
    }
    if (g->share) return g;
    if (g->consumer || g->nmembers > 0 || g->state != KIQ_GROUP_EMPTY || g->protocol_type) {
        fail(r, resp, KIQ_ERR_GROUP_ID_NOT_FOUND, "Group %s is not a share group.", g->id);
        return NULL;
    }
    if (!(g->share = kiq_cgroup_new())) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
        return NULL;
    }
    return g;
}

/* The member's subscription and details from the request; whether the
 * subscription changed. */
static bool update_member(kiq_cg_member_t *m, kiq_request_t *r, const kiq_share_group_heartbeat_request_t *req)
{
    bool changed = false;
    if (req->rack_id.p) {
        free(m->rack_id);
        m->rack_id = kiq_gc_dup_str(req->rack_id);
    }
    kiq_gc_member_identify(m, r);
    if (kiq_gc_member_subscribe(m, &r->arena, req->subscribed_topic_names, req->subscribed_topic_names_n) == 1)
        changed = true;
    return changed;
}

void kiq_group_share_heartbeat(kiq_group_coordinator_t *gc, kiq_request_t *r,
                               const kiq_share_group_heartbeat_request_t *req,
                               kiq_share_group_heartbeat_response_t *resp)
{
    if (check_request(r, req, resp)) return;
    kiq_arena_t a;
    kiq_arena_init(&a);
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g;
    if (kiq_gc_refused(gc, req->group_id)) {
        fail(r, resp, KIQ_ERR_NOT_COORDINATOR, "This broker is not the coordinator of the group.");
        goto out;
    }
    if (!(g = heartbeat_group(gc, r, req, resp))) goto out;
    kiq_cgroup_t *cg = g->share;
    kiq_cg_member_t *m = kiq_cgroup_member(cg, req->member_id.p, (size_t)req->member_id.len);
    bool is_new = false;
    if (req->member_epoch == 0) {
        if (!m && cg->nmembers >= gc->share_max_size) {
            fail(r, resp, KIQ_ERR_GROUP_MAX_SIZE_REACHED, "The share group has reached its maximum capacity of %d "
                 "members.", gc->share_max_size);
            goto out;
        }
        if (!m) {
            if (!(m = kiq_cgroup_add_member(cg, req->member_id.p, (size_t)req->member_id.len))) {
                fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
                goto out;
            }
            is_new = true;
        }
    } else if (!m) {
        fail(r, resp, KIQ_ERR_UNKNOWN_MEMBER_ID, "Member " KIQ_STR_FMT " is not a member of the group.",
             KIQ_STR_ARG(req->member_id));
        goto out;
    } else if (req->member_epoch == -1) {
        resp->member_id = kiq_request_str(r, m->id);
        resp->member_epoch = -1;
        remove_member(g, m, "left");
        goto out;
    } else if (req->member_epoch != m->epoch) {
        fail(r, resp, KIQ_ERR_FENCED_MEMBER_EPOCH, "The share group member has epoch %d, expected %d.",
             req->member_epoch, m->epoch);
        goto out;
    }
    m->session_deadline_ns = kiq_clock_mono_ns() + (int64_t)gc->share_session_ms * 1000000;
    bool subscription = update_member(m, r, req);
    int nt;
    int64_t hash;
    kiq_cg_topic_t *topics = subscribed(gc, cg, &a, &nt, &hash);
    if (is_new || subscription || hash != cg->metadata_hash) {
        cg->epoch++;
        cg->metadata_hash = hash;
        KIQ_DEBUG("share group %s: epoch %d", g->id, cg->epoch);
    }
    if (cg->epoch > cg->assignment_epoch) {
        if (kiq_cg_assign_share(cg, topics, nt) != 0) {
            fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory computing the assignment");
            goto out;
        }
        cg->assignment_epoch = cg->epoch;
    }
    /* nothing to revoke: the member takes its target at once */
    bool changed = m->epoch != cg->assignment_epoch || !kiq_cg_set_eq(&m->assigned, &m->target);
    if (changed && kiq_cg_set_copy(&m->assigned, &m->target) != 0) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
        goto out;
    }
    m->previous_epoch = m->epoch;
    m->epoch = cg->assignment_epoch;
    resp->member_id = kiq_request_str(r, m->id);
    resp->member_epoch = m->epoch;
    resp->heartbeat_interval_ms = gc->share_heartbeat_ms;
    if (changed || req->member_epoch == 0) KIQ_GC_FILL_ASSIGNMENT(r, &m->assigned, resp, kiq_share_group_heartbeat_response);
    sync_state(g);
out:
    kiq_gc_deadline_moved(gc);
    pthread_mutex_unlock(&gc->mu);
    kiq_arena_reset(&a);
}

/* ---- ShareGroupDescribe ---- */

static void describe_one(kiq_group_coordinator_t *gc, kiq_request_t *r, kiq_str_t id, bool include_operations,
                         kiq_share_group_describe_response_groups_t *e)
{
    kiq_share_group_describe_response_groups_init(e);
    e->group_id = id;
    if (kiq_gc_refused(gc, id)) {
        e->error_code = KIQ_ERR_NOT_COORDINATOR;
        return;
    }
    kiq_group_t *g = kiq_gc_find_group(gc, id);
    if (!g || !g->share) {
        e->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
        const char *gid = id.p ? kiq_arena_strndup(&r->arena, id.p, (size_t)id.len) : "";
        kiq_error_set(g ? "Group %s is not a share group." : "Group %s not found.", gid);
        e->error_message = kiq_request_error_message(r);
        return;
    }
    const kiq_cgroup_t *cg = g->share;
    if (include_operations) e->authorized_operations = KIQ_ACL_GROUP_OPERATIONS;
    e->group_state = KIQ_STR(cg->nmembers ? "Stable" : "Empty");
    e->group_epoch = cg->epoch;
    e->assignment_epoch = cg->assignment_epoch;
    e->assignor_name = KIQ_STR("simple");
    e->members = kiq_arena_calloc(&r->arena, (size_t)(cg->nmembers ? cg->nmembers : 1), sizeof *e->members);
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) {
        kiq_share_group_describe_response_groups_members_t *me = &e->members[e->members_n++];
        kiq_share_group_describe_response_groups_members_init(me);
        me->member_id = kiq_request_str(r, m->id);
        me->rack_id = kiq_gc_astr(r, m->rack_id);
        me->member_epoch = m->epoch;
        me->client_id = kiq_request_str(r, m->client_id ? m->client_id : "");
        me->client_host = kiq_request_str(r, m->client_host ? m->client_host : "");
        me->subscribed_topic_names = kiq_arena_calloc(&r->arena, (size_t)(m->ntopics ? m->ntopics : 1),
                                                      sizeof *me->subscribed_topic_names);
        for (int i = 0; i < m->ntopics; i++) me->subscribed_topic_names[i] = kiq_request_str(r, m->topics[i]);
        me->subscribed_topic_names_n = m->ntopics;
        const kiq_cg_set_t *set = &m->assigned;
        kiq_share_group_describe_response_groups_members_assignment_t *as = &me->assignment;
        as->topic_partitions = kiq_arena_calloc(&r->arena, (size_t)(set->n ? set->n : 1), sizeof *as->topic_partitions);
        for (int i = 0; i < set->n; i++) {
            kiq_share_group_describe_response_groups_members_assignment_topic_partitions_t *tp =
                as->topic_partitions_n ? &as->topic_partitions[as->topic_partitions_n - 1] : NULL;
            if (!tp || memcmp(tp->topic_id.b, set->v[i].topic.b, 16) != 0) {
                tp = &as->topic_partitions[as->topic_partitions_n++];
                kiq_share_group_describe_response_groups_members_assignment_topic_partitions_init(tp);
                tp->topic_id = set->v[i].topic;
                const char *name = kiq_gc_topic_name(gc, &tp->topic_id, &r->arena);
                tp->topic_name = KIQ_STR(name ? name : "");
                tp->partitions = kiq_arena_calloc(&r->arena, (size_t)set->n, sizeof *tp->partitions);
            }
            tp->partitions[tp->partitions_n++] = set->v[i].partition;
        }
    }
}

void kiq_group_share_describe(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_share_group_describe_request_t *req,
                              kiq_share_group_describe_response_t *resp)
{
    int32_t n = req->group_ids_n > 0 ? req->group_ids_n : 0;
    resp->groups_n = n;
    resp->groups = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *resp->groups);
    pthread_mutex_lock(&gc->mu);
    for (int32_t i = 0; i < n; i++)
        describe_one(gc, r, req->group_ids[i], req->include_authorized_operations, &resp->groups[i]);
    pthread_mutex_unlock(&gc->mu);
}

int16_t kiq_group_share_check(kiq_group_coordinator_t *gc, kiq_str_t group, bool empty, bool create)
{
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = kiq_gc_find_group(gc, group);
    if (!g && create && !kiq_gc_refused(gc, group) && group.p && group.len > 0 &&
        (g = kiq_gc_create_group(gc, group)) && !(g->share = kiq_cgroup_new())) {
        kiq_gc_remove_group(gc, g);
        g = NULL;
    }
    int16_t err = kiq_gc_refused(gc, group)   ? KIQ_ERR_NOT_COORDINATOR
                  : !g || !g->share            ? KIQ_ERR_GROUP_ID_NOT_FOUND
                  : empty && g->share->nmembers ? KIQ_ERR_NON_EMPTY_GROUP
                                                : KIQ_ERR_NONE;
    pthread_mutex_unlock(&gc->mu);
    return err;
}
