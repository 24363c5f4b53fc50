/* Consumer protocol groups (KIP-848) in the coordinator: ConsumerGroupHeartbeat
 * and ConsumerGroupDescribe, their sessions and revocation deadlines, their
 * records in __consumer_offsets and loading them back. The rules are
 * Kafka's GroupMetadataManager's: a new member or a changed subscription
 * or subscribed topic bumps the group epoch; the assignor then computes
 * the target for that epoch; each heartbeat moves its member towards its
 * target (consumer_group.c), revoking before assigning. */
#include "group/coordinator_internal.h"

#include <limits.h>
#include <stdarg.h>

#include "group/consumer_group.h"

/* ---- the subscribed topics ---- */

typedef struct subscribed {
    kiq_cg_topic_t *t; /* existing ones, sorted by name */
    int n;
    int64_t hash; /* of names, ids and partition counts */
} subscribed_t;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const kiq_cg_topic_t *)a)->name, ((const kiq_cg_topic_t *)b)->name);
}

bool kiq_gc_topic_info(kiq_group_coordinator_t *gc, const char *name, kiq_arena_t *a, kiq_uuid_t *id, int32_t *np)
{
    if (gc->b.cluster) {
        kiq_cached_topic_t ct;
        if (!kiq_metadata_cache_topic(gc->b.metadata, name, strlen(name), a, &ct)) return false;
        *id = ct.id;
        *np = ct.npartitions;
        return true;
    }
    kiq_topic_t *t = kiq_topics_get(gc->b.topics, KIQ_STR(name));
    if (!t) return false;
    *id = t->id;
    *np = t->npartitions;
    kiq_topic_unref(t);
    return true;
}

const char *kiq_gc_topic_name(kiq_group_coordinator_t *gc, const kiq_uuid_t *id, kiq_arena_t *a)
{
    if (gc->b.cluster) {
        kiq_cached_topic_t ct;
        return kiq_metadata_cache_topic_by_id(gc->b.metadata, id, a, &ct) ? ct.name : NULL;
    }
    kiq_topic_t *t = kiq_topics_get_by_id(gc->b.topics, id);
    const char *n = t ? kiq_arena_strndup(a, t->name, strlen(t->name)) : NULL;
    kiq_topic_unref(t);
    return n;
}

/* Adds the topic unless already there (and it exists). */
static void add_topic(kiq_group_coordinator_t *gc, kiq_arena_t *a, subscribed_t *s, const char *name)
{
    for (int k = 0; k < s->n; k++)
        if (strcmp(s->t[k].name, name) == 0) return;
    kiq_cg_topic_t *t = &s->t[s->n];
    if (!kiq_gc_topic_info(gc, name, a, &t->id, &t->npartitions)) return;
    t->name = kiq_arena_strndup(a, name, strlen(name));
    s->n++;
}

/* The names of every topic, in a, internal ones too (Kafka resolves a
 * regex against them all: `__consumer_offsets` matches its own name). */
static const char **all_topics(kiq_group_coordinator_t *gc, kiq_arena_t *a, int *n)
{
    const char **names = NULL;
    *n = 0;
    if (gc->b.cluster) {
        kiq_cached_topic_t *ts = NULL;
        int nt = kiq_metadata_cache_topics(gc->b.metadata, a, &ts);
        names = kiq_arena_calloc(a, (size_t)(nt > 0 ? nt : 1), sizeof *names);
        for (int i = 0; i < nt; i++) names[(*n)++] = ts[i].name;
        return names;
    }
    int nt = 0;
    kiq_topic_t **list = kiq_topics_list(gc->b.topics, &nt);
    names = kiq_arena_calloc(a, (size_t)(nt > 0 ? nt : 1), sizeof *names);
    for (int i = 0; i < nt; i++) names[(*n)++] = kiq_arena_strndup(a, list[i]->name, strlen(list[i]->name));
    kiq_topics_list_free(list, nt);
    return names;
}

static void subscribed_topics(kiq_group_coordinator_t *gc, const kiq_cgroup_t *cg, kiq_arena_t *a, subscribed_t *s)
{
    int cap = 0, nall = 0;
    bool regex = false;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) {
        cap += m->ntopics;
        regex |= m->regex_code != NULL && !m->regex_unresolved;
    }
    const char **every = regex ? all_topics(gc, a, &nall) : NULL;
    cap += nall;
    s->t = kiq_arena_calloc(a, (size_t)(cap ? cap : 1), sizeof *s->t);
    s->n = 0;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) {
        for (int i = 0; i < m->ntopics; i++) add_topic(gc, a, s, m->topics[i]);
        for (int i = 0; m->regex_code && !m->regex_unresolved && i < nall; i++)
            if (kiq_cg_member_subscribes(m, every[i])) add_topic(gc, a, s, every[i]);
    }
    qsort(s->t, (size_t)s->n, sizeof *s->t, by_name);
    s->hash = kiq_cg_topics_hash(s->t, s->n);
}

/* ---- the assignor ---- */

/* The assignor the members name most (Kafka's choice), else the first of
 * group.consumer.assignors. */
static kiq_cg_assign_fn choose_assignor(kiq_group_coordinator_t *gc, const kiq_cgroup_t *cg)
{
    kiq_cg_assign_fn best = NULL;
    int best_votes = 0;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) {
        if (!m->server_assignor) continue;
        kiq_cg_assign_fn f = kiq_cg_assignor(m->server_assignor, strlen(m->server_assignor));
        int votes = 0;
        for (const kiq_cg_member_t *o = cg->members; o; o = o->next)
            votes += o->server_assignor && kiq_cg_assignor(o->server_assignor, strlen(o->server_assignor)) == f;
        if (f && votes > best_votes) {
            best = f;
            best_votes = votes;
        }
    }
    if (best) return best;
    const char *list = kiq_config_str(gc->b.config, KIQ_CFG_GROUP_CONSUMER_ASSIGNORS);
    size_t n = strcspn(list, ", ");
    kiq_cg_assign_fn f = kiq_cg_assignor(list, n);
    return f ? f : kiq_cg_assign_uniform;
}

/* ---- records ---- */

void kiq_gc_consumer_store(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_offsets_records_t *rs)
{
    if (kiq_gc_append_records(gc, g, rs) != 0)
        KIQ_ERROR_LIMITED("consumer group %s: cannot store its records (epoch %d): %s", g->id,
                          g->consumer ? g->consumer->epoch : g->generation, kiq_error_get());
}

int32_t kiq_gc_member_session_ms(const kiq_group_coordinator_t *gc, const kiq_cg_member_t *m)
{
    return m->classic ? m->classic->session_timeout_ms : gc->consumer_session_ms;
}

/* The member's records deleted, in Kafka's order: current assignment,
 * target, subscription. */
static void add_member_tombstones(kiq_offsets_records_t *rs, const char *group, const char *member)
{
    kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CCURRENT, group, member);
    kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CTARGET, group, member);
    kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CMEMBER, group, member);
}

/* The group's classic state, which the rest of the coordinator reads
 * (offset expiry, DeleteGroups): Stable with members, else Empty. */
static void sync_state(kiq_group_t *g)
{
    kiq_gc_set_state(g, g->consumer->nmembers > 0 ? KIQ_GROUP_STABLE : KIQ_GROUP_EMPTY);
}

bool kiq_gc_consumer_remove_member(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_cg_member_t *m, const char *why,
                                   kiq_offsets_records_t *rs)
{
    KIQ_INFO("consumer group %s: member %s leaves (%s)", g->id, m->id, why);
    if (kiq_gc_consumer_downgrade(gc, g, m, rs)) {
        kiq_offsets_records_add_group(rs, g);
        kiq_gc_prepare_rebalance(gc, g, "the group was downgraded from consumer to classic");
        return true;
    }
    add_member_tombstones(rs, g->id, m->id);
    kiq_cgroup_t *cg = g->consumer;
    kiq_cgroup_remove_member(cg, m);
    cg->epoch++;
    if (cg->nmembers == 0) {
        /* nobody left to assign to: Kafka's target of an empty group is
         * at its epoch at once (Empty, not Assigning) */
        cg->metadata_hash = 0;
        cg->assignment_epoch = cg->epoch;
        kiq_offsets_records_add_ctarget_epoch(rs, g->id, cg);
    }
    kiq_offsets_records_add_cgroup(rs, g->id, cg);
    sync_state(g);
    return false;
}

int64_t kiq_gc_consumer_timers(kiq_group_coordinator_t *gc, kiq_group_t *g, int64_t now_ns)
{
    int64_t next = INT64_MAX;
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    for (kiq_cg_member_t *m = g->consumer->members, *nm; m; m = nm) {
        nm = m->next;
        if (now_ns >= m->session_deadline_ns) {
            if (kiq_gc_consumer_remove_member(gc, g, m, "session timed out", &rs)) break;
        } else if (m->state == KIQ_CG_UNREVOKED_PARTITIONS && now_ns >= m->revoke_deadline_ns) {
            if (kiq_gc_consumer_remove_member(gc, g, m, "did not revoke its partitions within its rebalance timeout", &rs))
                break;
        } else if (m->classic && m->classic->rebalance_deadline_ns && now_ns >= m->classic->rebalance_deadline_ns) {
            if (kiq_gc_consumer_remove_member(gc, g, m, "did not rejoin or sync within its rebalance timeout", &rs))
                break;
        } else {
            next = next < m->session_deadline_ns ? next : m->session_deadline_ns;
            if (m->state == KIQ_CG_UNREVOKED_PARTITIONS && m->revoke_deadline_ns < next) next = m->revoke_deadline_ns;
            if (m->classic && m->classic->rebalance_deadline_ns && m->classic->rebalance_deadline_ns < next)
                next = m->classic->rebalance_deadline_ns;
        }
    }
    kiq_gc_consumer_store(gc, g, &rs);
    kiq_offsets_records_free(&rs);
    return next;
}

/* ---- the checks of offset commits and fetches ---- */

int16_t kiq_gc_consumer_check_member(kiq_group_t *g, kiq_str_t member_id, int32_t member_epoch)
{
    if (kiq_gc_str_empty(member_id) && member_epoch < 0)
        return g->consumer->nmembers == 0 ? KIQ_ERR_NONE : KIQ_ERR_UNKNOWN_MEMBER_ID;
    kiq_cg_member_t *m = member_id.p ? kiq_cgroup_member(g->consumer, member_id.p, (size_t)member_id.len) : NULL;
    if (!m) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    return member_epoch == m->epoch ? KIQ_ERR_NONE : KIQ_ERR_STALE_MEMBER_EPOCH;
}

int16_t kiq_gc_consumer_check_commit(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_str_t member_id,
                                     int32_t member_epoch, kiq_str_t topic, int32_t partition)
{
    kiq_cg_member_t *m = member_id.p ? kiq_cgroup_member(g->consumer, member_id.p, (size_t)member_id.len) : NULL;
    if (!m) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    /* a classic member's generation refused: the classic protocol's error */
    int16_t stale = m->classic ? KIQ_ERR_ILLEGAL_GENERATION : KIQ_ERR_STALE_MEMBER_EPOCH;
    if (member_epoch >= m->epoch) return member_epoch == m->epoch ? KIQ_ERR_NONE : stale;
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_uuid_t id;
    int32_t np;
    const kiq_cg_tp_t *tp = NULL;
    if (topic.p && kiq_gc_topic_info(gc, kiq_arena_strndup(&a, topic.p, (size_t)topic.len), &a, &id, &np)) {
        tp = kiq_cg_set_get(&m->assigned, &id, partition);
        if (!tp) tp = kiq_cg_set_get(&m->revoking, &id, partition);
    }
    int16_t err = tp && tp->epoch <= member_epoch ? KIQ_ERR_NONE : stale;
    kiq_arena_reset(&a);
    return err;
}

/* ---- ConsumerGroupHeartbeat ---- */

/* The response's error, with Kafka's message for it. */
static int16_t fail(kiq_request_t *r, kiq_consumer_group_heartbeat_response_t *resp, int16_t err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int16_t fail(kiq_request_t *r, kiq_consumer_group_heartbeat_response_t *resp, int16_t err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kiq_error_setv(fmt, ap);
    va_end(ap);
    /* Kafka's error answer: the code and message, the rest at defaults */
    kiq_consumer_group_heartbeat_response_init(resp);
    resp->error_code = err;
    resp->error_message = kiq_request_error_message(r);
    return err;
}

static char *new_member_id(void)
{
    kiq_uuid_t u;
    char b64[32];
    kiq_uuid_random(&u);
    kiq_uuid_to_base64(&u, b64);
    return strdup(b64);
}

static char *dup_or_keep(char *old, kiq_str_t s, bool *changed)
{
    if (!s.p) return old;
    if (old && kiq_gc_str_eq(old, s)) return old;
    char *d = kiq_gc_dup_str(s);
    if (!d) return old;
    free(old);
    *changed = true;
    return d;
}

/* The request's owned partitions as a set (NULL when it did not say). */
static kiq_cg_set_t *owned_set(const kiq_consumer_group_heartbeat_request_t *req, kiq_cg_set_t *s)
{
    if (req->topic_partitions_n < 0) return NULL;
    for (int32_t i = 0; i < req->topic_partitions_n; i++)
        for (int32_t j = 0; j < req->topic_partitions[i].partitions_n; j++)
            if (kiq_cg_set_add(s, &req->topic_partitions[i].topic_id, req->topic_partitions[i].partitions[j]) != 0)
                return NULL;
    return s;
}

/* Kafka's request checks: INVALID_REQUEST with what is wrong. */
static int16_t check_request(kiq_request_t *r, const kiq_consumer_group_heartbeat_request_t *req,
                             kiq_consumer_group_heartbeat_response_t *resp)
{
    if (kiq_gc_str_empty(req->group_id)) return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "GroupId can't be empty.");
    /* v1 (KIP-1082): the client makes its member id, even to join */
    if (req->member_epoch < -2 ||
        ((req->member_epoch != 0 || r->header.api_version >= 1) && kiq_gc_str_empty(req->member_id)))
        return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "MemberId can't be empty.");
    if (req->member_epoch == 0 && req->subscribed_topic_names_n < 0 && !req->subscribed_topic_regex.p)
        return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
    if (req->member_epoch == 0 && req->rebalance_timeout_ms <= 0)
        return fail(r, resp, KIQ_ERR_INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.");
    if (req->server_assignor.p && !kiq_cg_assignor(req->server_assignor.p, (size_t)req->server_assignor.len))
        return fail(r, resp, KIQ_ERR_UNSUPPORTED_ASSIGNOR, "ServerAssignor " KIQ_STR_FMT " is not supported.",
                    KIQ_STR_ARG(req->server_assignor));
    if (req->subscribed_topic_regex.len > 0) {
        /* compiled once here for the answer; the member keeps its own */
        kiq_cg_member_t probe = {0};
        int rc = kiq_cg_member_set_regex(&probe, req->subscribed_topic_regex.p, (size_t)req->subscribed_topic_regex.len);
        kiq_cg_member_set_regex(&probe, "", 0); /* frees what it compiled */
        if (rc < 0) return fail(r, resp, KIQ_ERR_INVALID_REGULAR_EXPRESSION, "%s", kiq_error_get());
    }
    return KIQ_ERR_NONE;
}

/* The group to heartbeat in: found, created for a join, or a classic
 * group without members taken over. NULL with resp's error set. */
static kiq_group_t *heartbeat_group(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                    const kiq_consumer_group_heartbeat_request_t *req,
                                    kiq_consumer_group_heartbeat_response_t *resp, kiq_offsets_records_t *rs)
{
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    if (!g && req->member_epoch != 0) {
        fail(r, resp, KIQ_ERR_GROUP_ID_NOT_FOUND, "Consumer group " KIQ_STR_FMT " not found.",
             KIQ_STR_ARG(req->group_id));
        return NULL;
    }
    if (!g && !(g = kiq_gc_create_group(gc, req->group_id))) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
        return NULL;
    }
    if (g->consumer) return g;
    if (g->share || g->state == KIQ_GROUP_DEAD || (req->member_epoch != 0 && g->nmembers > 0)) {
        fail(r, resp, KIQ_ERR_GROUP_ID_NOT_FOUND, "Group %s is not a consumer group.", g->id);
        return NULL;
    }
    if (g->nmembers > 0) {
        /* a classic group with members: upgraded online, its members kept */
        int16_t err = kiq_gc_consumer_upgrade(gc, g, rs);
        if (err) {
            fail(r, resp, err, "%s", kiq_error_get());
            return NULL;
        }
        return g;
    }
    if (!(g->consumer = kiq_cgroup_new())) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
        return NULL;
    }
    /* Kafka 4's new consumer group starts at epoch 1: a first member
     * subscribing to nothing gets 1, one subscribing to topics 2 */
    g->consumer->epoch = 1;
    kiq_offsets_records_add_cgroup(rs, g->id, g->consumer);
    /* an empty classic group's metadata gives way to the consumer group's */
    if (g->protocol_type) kiq_offsets_records_add_group_tombstone(rs, g->id);
    free(g->protocol_type);
    g->protocol_type = strdup("consumer");
    return g;
}

/* Joining (epoch 0): the member, new or known, and whether it is new.
 * A static member coming back takes over its earlier self's assignment. */
static kiq_cg_member_t *join(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_request_t *r,
                             const kiq_consumer_group_heartbeat_request_t *req,
                             kiq_consumer_group_heartbeat_response_t *resp, kiq_offsets_records_t *rs, bool *is_new)
{
    kiq_cgroup_t *cg = g->consumer;
    kiq_str_t mid = req->member_id;
    char *gen = NULL;
    if (kiq_gc_str_empty(mid)) {
        if (!(gen = new_member_id())) {
            fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
            return NULL;
        }
        mid = KIQ_STR(gen);
    }
    kiq_cg_member_t *m = kiq_cgroup_member(cg, mid.p, (size_t)mid.len);
    kiq_cg_member_t *prev = req->instance_id.p ? kiq_cgroup_instance(cg, req->instance_id.p, (size_t)req->instance_id.len) : NULL;
    if (prev && prev != m && prev->epoch != -2) {
        free(gen);
        fail(r, resp, KIQ_ERR_UNRELEASED_INSTANCE_ID, "Static member with instance id " KIQ_STR_FMT " is still in the group.",
             KIQ_STR_ARG(req->instance_id));
        return NULL;
    }
    if (!m && !prev && cg->nmembers >= gc->consumer_max_size) {
        free(gen);
        fail(r, resp, KIQ_ERR_GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of %d members.",
             gc->consumer_max_size);
        return NULL;
    }
    if (!m) m = kiq_cgroup_add_member(cg, mid.p, (size_t)mid.len);
    free(gen);
    if (!m) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "out of memory");
        return NULL;
    }
    if (prev && prev != m) {
        /* the static member's slot: its epoch and partitions */
        m->epoch = prev->epoch == -2 ? prev->previous_epoch : prev->epoch;
        m->previous_epoch = prev->previous_epoch;
        m->state = prev->state;
        if (kiq_cg_set_copy(&m->assigned, &prev->assigned) || kiq_cg_set_copy(&m->revoking, &prev->revoking) ||
            kiq_cg_set_copy(&m->target, &prev->target))
            KIQ_ERROR("consumer group %s: out of memory taking over static member %s", g->id, prev->id);
        add_member_tombstones(rs, g->id, prev->id);
        kiq_cgroup_remove_member(cg, prev);
        *is_new = false;
        return m;
    }
    /* a member joining again with epoch 0 gave up whatever it had */
    *is_new = m->epoch == 0 && m->assigned.n == 0 && m->target.n == 0 && !m->client_id;
    m->assigned.n = m->revoking.n = 0;
    m->state = KIQ_CG_STABLE;
    m->previous_epoch = m->epoch;
    m->epoch = 0;
    return m;
}

/* Epoch checks of a member's heartbeat: a lost response to an epoch bump
 * lets it come back with its previous epoch while it owns no more than it
 * was given; anything else is fenced. */
static int16_t check_epoch(kiq_request_t *r, const kiq_cg_member_t *m, int32_t epoch, const kiq_cg_set_t *owned,
                           kiq_consumer_group_heartbeat_response_t *resp)
{
    bool ok = epoch == m->epoch;
    if (!ok && epoch < m->epoch && epoch == m->previous_epoch && owned) {
        ok = true;
        for (int i = 0; i < owned->n && ok; i++)
            ok = kiq_cg_set_has(&m->assigned, &owned->v[i].topic, owned->v[i].partition);
    }
    if (ok) return KIQ_ERR_NONE;
    return fail(r, resp, KIQ_ERR_FENCED_MEMBER_EPOCH, "The consumer group member has epoch %d, expected %d.", epoch,
                m->epoch);
}

void kiq_gc_member_identify(kiq_cg_member_t *m, const kiq_request_t *r)
{
    if (m->client_id) return;
    m->client_id = kiq_gc_dup_str(r->header.client_id.p ? r->header.client_id : KIQ_STR(""));
    m->client_host = kiq_gc_client_host(r->peer);
}

int kiq_gc_member_subscribe(kiq_cg_member_t *m, kiq_arena_t *a, const kiq_str_t *names, int32_t n)
{
    if (n < 0) return 0;
    const char **v = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *v);
    int32_t *lens = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *lens);
    for (int32_t i = 0; i < n; i++) {
        v[i] = names[i].p ? names[i].p : "";
        lens[i] = names[i].p ? names[i].len : 0;
    }
    return kiq_cg_member_set_topics(m, v, lens, n) == 1;
}

/* Whether another member of the group subscribes to regex re. */
static bool regex_known(const kiq_cgroup_t *cg, const kiq_cg_member_t *m, const char *re)
{
    for (const kiq_cg_member_t *o = cg->members; o; o = o->next)
        if (o != m && o->regex && !o->regex_unresolved && strcmp(o->regex, re) == 0) return true;
    return false;
}

/* The member's subscription and details from the request; whether the
 * subscription changed (a rebalance). A regex new to the group changes the
 * member's record only (*stored): the group epoch moves when the next
 * heartbeat resolves it, once, as Kafka's. */
static bool update_member(const kiq_cgroup_t *cg, kiq_cg_member_t *m, kiq_request_t *r,
                          const kiq_consumer_group_heartbeat_request_t *req, bool *stored)
{
    bool changed = false, ignored = false;
    if (req->rebalance_timeout_ms > 0) m->rebalance_timeout_ms = req->rebalance_timeout_ms;
    m->instance_id = dup_or_keep(m->instance_id, req->instance_id, &ignored);
    m->rack_id = dup_or_keep(m->rack_id, req->rack_id, &ignored);
    m->server_assignor = dup_or_keep(m->server_assignor, req->server_assignor, &changed);
    if (req->subscribed_topic_regex.p) {
        int rc = kiq_cg_member_set_regex(m, req->subscribed_topic_regex.p, (size_t)req->subscribed_topic_regex.len);
        if (rc == 1) {
            m->regex_unresolved = m->regex && !regex_known(cg, m, m->regex);
            if (m->regex_unresolved)
                *stored = true;
            else
                changed = true;
        }
    }
    /* written with the member's record (a new member's); no rebalance */
    kiq_gc_member_identify(m, r);
    if (kiq_gc_member_subscribe(m, &r->arena, req->subscribed_topic_names, req->subscribed_topic_names_n) == 1)
        changed = true;
    return changed;
}

int kiq_gc_consumer_rebalance(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_cg_member_t *m, bool subscription,
                              const kiq_cg_set_t *owned, int64_t now, kiq_offsets_records_t *rs)
{
    kiq_cgroup_t *cg = g->consumer;
    kiq_arena_t a;
    kiq_arena_init(&a);
    subscribed_t sub;
    subscribed_topics(gc, cg, &a, &sub);
    /* a new member subscribing to nothing changes nothing (as Kafka) */
    if (subscription || sub.hash != cg->metadata_hash) {
        cg->epoch++;
        cg->metadata_hash = sub.hash;
        kiq_offsets_records_add_cgroup(rs, g->id, cg);
        KIQ_DEBUG("consumer group %s: epoch %d", g->id, cg->epoch);
    }
    if (cg->epoch > cg->assignment_epoch) {
        if (choose_assignor(gc, cg)(cg, sub.t, sub.n) != 0) {
            kiq_arena_reset(&a);
            return kiq_error_set("out of memory computing the assignment");
        }
        cg->assignment_epoch = cg->epoch;
        for (kiq_cg_member_t *o = cg->members; o; o = o->next) kiq_offsets_records_add_ctarget(rs, g->id, o);
        kiq_offsets_records_add_ctarget_epoch(rs, g->id, cg);
    }
    kiq_arena_reset(&a);
    int rc = kiq_cgroup_reconcile(cg, m, owned, now);
    if (rc < 0) return kiq_error_set("out of memory reconciling");
    return rc;
}

void kiq_group_consumer_heartbeat(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                  const kiq_consumer_group_heartbeat_request_t *req,
                                  kiq_consumer_group_heartbeat_response_t *resp, int32_t *partition,
                                  int64_t *replicated_at)
{
    *replicated_at = -1;
    resp->heartbeat_interval_ms = gc->consumer_heartbeat_ms;
    resp->member_epoch = req->member_epoch;
    if (check_request(r, req, resp)) return;
    kiq_cg_set_t owned_buf = {0};
    const kiq_cg_set_t *owned = owned_set(req, &owned_buf);
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    int64_t now = kiq_clock_mono_ns();
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = NULL;
    kiq_cg_member_t *m = NULL;
    bool is_new = false, changed = false;
    if (kiq_gc_refused(gc, req->group_id)) {
        fail(r, resp, KIQ_ERR_NOT_COORDINATOR, "This broker is not the coordinator of the group.");
        goto out;
    }
    if (!(g = heartbeat_group(gc, r, req, resp, &rs))) goto out;
    kiq_cgroup_t *cg = g->consumer;
    if (req->member_epoch == 0) {
        if (!(m = join(gc, g, r, req, resp, &rs, &is_new))) goto out;
    } else {
        m = kiq_cgroup_member(cg, req->member_id.p, (size_t)req->member_id.len);
        if (!m) {
            fail(r, resp, KIQ_ERR_UNKNOWN_MEMBER_ID, "Member " KIQ_STR_FMT " is not a member of the group.",
                 KIQ_STR_ARG(req->member_id));
            goto out;
        }
        if (req->member_epoch == -1 || (req->member_epoch == -2 && !m->instance_id)) {
            resp->member_id = kiq_request_str(r, m->id);
            resp->member_epoch = -1;
            resp->heartbeat_interval_ms = 0; /* no more heartbeats */
            kiq_gc_consumer_remove_member(gc, g, m, "left", &rs);
            m = NULL;
            goto out;
        }
        if (req->member_epoch == -2) {
            /* a static member away for now keeps its partitions until its session ends */
            resp->member_id = kiq_request_str(r, m->id);
            resp->member_epoch = -2;
            resp->heartbeat_interval_ms = 0;
            m->previous_epoch = m->epoch;
            m->epoch = -2;
            kiq_offsets_records_add_ccurrent(&rs, g->id, m);
            goto out;
        }
        if (check_epoch(r, m, req->member_epoch, owned, resp)) goto out;
    }
    m->session_deadline_ns = now + (int64_t)kiq_gc_member_session_ms(gc, m) * 1000000;
    bool stored = false;
    bool subscription = update_member(cg, m, r, req, &stored);
    if (subscription || stored || is_new) kiq_offsets_records_add_cmember(&rs, g->id, m);
    int rc = kiq_gc_consumer_rebalance(gc, g, m, subscription, owned, now, &rs);
    if (rc < 0) {
        fail(r, resp, KIQ_ERR_UNKNOWN_SERVER_ERROR, "%s", kiq_error_get());
        goto out;
    }
    changed = rc > 0;
    if (changed || req->member_epoch == 0) kiq_offsets_records_add_ccurrent(&rs, g->id, m);
    resp->member_id = kiq_request_str(r, m->id);
    resp->member_epoch = m->epoch;
    if (changed || req->member_epoch == 0 || (owned && !kiq_cg_set_eq(owned, &m->assigned)))
        KIQ_GC_FILL_ASSIGNMENT(r, &m->assigned, resp, kiq_consumer_group_heartbeat_response);
    sync_state(g);
out:
    /* resolved by the next heartbeat, whoever sends it */
    if (m) m->regex_unresolved = false;
    if (g) kiq_gc_consumer_store(gc, g, &rs);
    if (g && rs.last_offset >= 0) {
        *partition = g->offsets_partition;
        *replicated_at = rs.last_offset + 1;
    }
    kiq_gc_deadline_moved(gc);
    pthread_mutex_unlock(&gc->mu);
    kiq_offsets_records_free(&rs);
    kiq_cg_set_free(&owned_buf);
}

/* ---- ConsumerGroupDescribe ---- */

/* A member's assignment or target, by topic, with the topics' names. */
#define DESCRIBE_SET(gc, r, set, as, type)                                                              \
    do {                                                                                               \
        (as)->topic_partitions = kiq_arena_calloc(&(r)->arena, (size_t)((set)->n ? (set)->n : 1),      \
                                                  sizeof *(as)->topic_partitions);                     \
        for (int i_ = 0; i_ < (set)->n; i_++) {                                                        \
            type *tp_ = (as)->topic_partitions_n ? &(as)->topic_partitions[(as)->topic_partitions_n - 1] \
                                                 : NULL;                                               \
            if (!tp_ || memcmp(tp_->topic_id.b, (set)->v[i_].topic.b, 16) != 0) {                      \
                tp_ = &(as)->topic_partitions[(as)->topic_partitions_n++];                             \
                tp_->topic_id = (set)->v[i_].topic;                                                    \
                const char *name_ = kiq_gc_topic_name((gc), &tp_->topic_id, &(r)->arena);              \
                tp_->topic_name = KIQ_STR(name_ ? name_ : "");                                         \
                tp_->partitions = kiq_arena_calloc(&(r)->arena, (size_t)(set)->n, sizeof(int32_t));    \
            }                                                                                          \
            tp_->partitions[tp_->partitions_n++] = (set)->v[i_].partition;                             \
        }                                                                                              \
    } while (0)

static void describe_one(kiq_group_coordinator_t *gc, kiq_request_t *r, kiq_str_t id, bool include_operations,
                         kiq_consumer_group_describe_response_groups_t *e)
{
    kiq_consumer_group_describe_response_groups_init(e);
    e->group_id = id;
    kiq_group_t *g = kiq_gc_find_group(gc, id);
    const char *gid = id.p ? kiq_arena_strndup(&r->arena, id.p, (size_t)id.len) : "";
    if (kiq_gc_refused(gc, id)) {
        e->error_code = KIQ_ERR_NOT_COORDINATOR;
        return;
    }
    if (!g || !g->consumer) {
        e->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
        kiq_error_set(g ? "Group %s is not a consumer group." : "Group %s not found.", gid);
        e->error_message = kiq_request_error_message(r);
        return;
    }
    const kiq_cgroup_t *cg = g->consumer;
    if (include_operations) e->authorized_operations = KIQ_ACL_GROUP_OPERATIONS;
    e->group_state = kiq_request_str(r, kiq_cgroup_state_name(cg));
    e->group_epoch = cg->epoch;
    e->assignment_epoch = cg->assignment_epoch;
    e->assignor_name = KIQ_STR(choose_assignor(gc, cg) == kiq_cg_assign_range ? "range" : "uniform");
    e->members = kiq_arena_calloc(&r->arena, (size_t)(cg->nmembers ? cg->nmembers : 1), sizeof *e->members);
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) {
        kiq_consumer_group_describe_response_groups_members_t *me = &e->members[e->members_n++];
        kiq_consumer_group_describe_response_groups_members_init(me);
        me->member_id = kiq_request_str(r, m->id);
        me->instance_id = kiq_gc_astr(r, m->instance_id);
        me->rack_id = kiq_gc_astr(r, m->rack_id);
        me->member_epoch = m->epoch;
        me->client_id = kiq_request_str(r, m->client_id ? m->client_id : "");
        me->client_host = kiq_request_str(r, m->client_host ? m->client_host : "");
        me->subscribed_topic_names = kiq_arena_calloc(&r->arena, (size_t)(m->ntopics ? m->ntopics : 1),
                                                      sizeof *me->subscribed_topic_names);
        for (int i = 0; i < m->ntopics; i++) me->subscribed_topic_names[i] = kiq_request_str(r, m->topics[i]);
        me->subscribed_topic_names_n = m->ntopics;
        me->subscribed_topic_regex = kiq_request_str(r, m->regex ? m->regex : "");
        /* what the member owns: Kafka 4.4 counts a partition it is still
         * giving up (UNREVOKED_PARTITIONS) */
        kiq_cg_set_t owns = {0};
        if (kiq_cg_set_copy(&owns, &m->assigned) == 0)
            for (int i = 0; i < m->revoking.n; i++) kiq_cg_set_add(&owns, &m->revoking.v[i].topic, m->revoking.v[i].partition);
        DESCRIBE_SET(gc, r, &owns, &me->assignment,
                     kiq_consumer_group_describe_response_groups_members_assignment_topic_partitions_t);
        kiq_cg_set_free(&owns);
        DESCRIBE_SET(gc, r, &m->target, &me->target_assignment,
                     kiq_consumer_group_describe_response_groups_members_target_assignment_topic_partitions_t);
        me->member_type = m->classic ? 0 : 1;
    }
}

void kiq_group_consumer_describe(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                 const kiq_consumer_group_describe_request_t *req,
                                 kiq_consumer_group_describe_response_t *resp)
{
    int32_t n = req->group_ids_n > 0 ? req->group_ids_n : 0;
    resp->groups_n = n;
    resp->groups = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *resp->groups);
    pthread_mutex_lock(&gc->mu);
    for (int32_t i = 0; i < n; i++) describe_one(gc, r, req->group_ids[i], req->include_authorized_operations, &resp->groups[i]);
    pthread_mutex_unlock(&gc->mu);
}

/* ---- loading ---- */

/* epoch: the partitions' assignment epoch, which the records leave out:
 * the member's current one, so a commit at an older epoch is refused for
 * them as before KIP-1251. */
#define LOAD_TOPIC_PARTITIONS(set, arr, count, epoch)                                                   \
    do {                                                                                               \
        (set)->n = 0;                                                                                  \
        for (int32_t t_ = 0; t_ < (count); t_++)                                                         \
            for (int32_t j_ = 0; j_ < (arr)[t_].partitions_n; j_++)                                    \
                kiq_cg_set_add_at((set), &(arr)[t_].topic_id, (arr)[t_].partitions[j_], (epoch));      \
    } while (0)

/* A classic member's metadata from its record (none: a member of the
 * consumer protocol). */
static void load_classic(kiq_cg_member_t *m, const kiq_consumer_group_member_metadata_value_t *val)
{
    kiq_cg_classic_free(m->classic);
    m->classic = NULL;
    if (val->classic_member_metadata_null) return;
    const kiq_consumer_group_member_metadata_value_classic_member_metadata_t *cm = &val->classic_member_metadata;
    int n = cm->supported_protocols_n > 0 ? cm->supported_protocols_n : 0;
    kiq_cg_classic_protocol_t *p = calloc((size_t)(n ? n : 1), sizeof *p);
    kiq_cg_classic_t *c = calloc(1, sizeof *c);
    bool ok = p && c;
    for (int i = 0; ok && i < n; i++) {
        const kiq_consumer_group_member_metadata_value_classic_member_metadata_supported_protocols_t *sp =
            &cm->supported_protocols[i];
        /* the record's names are not terminated: copies that are */
        ok = (p[i].name = strndup(sp->name.p ? sp->name.p : "", sp->name.p ? (size_t)sp->name.len : 0)) != NULL;
        p[i].metadata = (uint8_t *)sp->metadata.p;
        p[i].metadata_len = sp->metadata.p ? sp->metadata.len : 0;
    }
    if (ok) {
        c->session_timeout_ms = cm->session_timeout_ms;
        if (kiq_cg_classic_set_protocols(c, p, n) == 0) {
            m->classic = c;
            c = NULL;
        }
    }
    for (int i = 0; p && i < n; i++) free(p[i].name);
    if (c) KIQ_ERROR("consumer group member %s: out of memory loading its classic metadata", m->id);
    kiq_cg_classic_free(c);
    free(p);
}

static kiq_group_t *load_group_for(kiq_group_coordinator_t *gc, kiq_str_t id)
{
    kiq_group_t *g = kiq_gc_find_group(gc, id);
    if (!g && !(g = kiq_gc_create_group(gc, id))) return NULL;
    if (!g->consumer && !(g->consumer = kiq_cgroup_new())) return NULL;
    if (!g->protocol_type) g->protocol_type = strdup("consumer");
    return g;
}

void kiq_gc_consumer_load(kiq_group_coordinator_t *gc, int16_t type, kiq_str_t group, kiq_str_t member,
                          const void *v)
{
    if (!group.p) return;
    kiq_group_t *g = load_group_for(gc, group);
    if (!g) return;
    kiq_cgroup_t *cg = g->consumer;
    if (type == KIQ_OFFSETS_KEY_CGROUP) {
        const kiq_consumer_group_metadata_value_t *val = v;
        if (!val) {
            /* the group is gone; its offsets (if any) stay with the group */
            kiq_cgroup_free(cg);
            g->consumer = NULL;
            return;
        }
        cg->epoch = val->epoch;
        cg->metadata_hash = val->metadata_hash;
        return;
    }
    if (type == KIQ_OFFSETS_KEY_CTARGET_EPOCH) {
        if (v) cg->assignment_epoch = ((const kiq_consumer_group_target_assignment_metadata_value_t *)v)->assignment_epoch;
        return;
    }
    if (!member.p) return;
    kiq_cg_member_t *m = kiq_cgroup_member(cg, member.p, (size_t)member.len);
    if (!v) {
        /* tombstones: the subscription's is the member's end */
        if (m && type == KIQ_OFFSETS_KEY_CMEMBER) kiq_cgroup_remove_member(cg, m);
        return;
    }
    if (!m && !(m = kiq_cgroup_add_member(cg, member.p, (size_t)member.len))) return;
    if (type == KIQ_OFFSETS_KEY_CMEMBER) {
        const kiq_consumer_group_member_metadata_value_t *val = v;
        bool ignored = false;
        m->instance_id = dup_or_keep(m->instance_id, val->instance_id, &ignored);
        m->rack_id = dup_or_keep(m->rack_id, val->rack_id, &ignored);
        m->client_id = dup_or_keep(m->client_id, val->client_id, &ignored);
        m->client_host = dup_or_keep(m->client_host, val->client_host, &ignored);
        if (val->subscribed_topic_regex.p &&
            kiq_cg_member_set_regex(m, val->subscribed_topic_regex.p, (size_t)val->subscribed_topic_regex.len) < 0)
            KIQ_WARN("consumer group member " KIQ_STR_FMT ": its regex is not loaded: %s", KIQ_STR_ARG(member),
                     kiq_error_get());
        m->server_assignor = dup_or_keep(m->server_assignor, val->server_assignor, &ignored);
        m->rebalance_timeout_ms = val->rebalance_timeout_ms;
        int n = val->subscribed_topic_names_n > 0 ? val->subscribed_topic_names_n : 0;
        const char **names = calloc((size_t)(n ? n : 1), sizeof *names);
        int32_t *lens = calloc((size_t)(n ? n : 1), sizeof *lens);
        if (names && lens) {
            for (int i = 0; i < n; i++) {
                names[i] = val->subscribed_topic_names[i].p ? val->subscribed_topic_names[i].p : "";
                lens[i] = val->subscribed_topic_names[i].p ? val->subscribed_topic_names[i].len : 0;
            }
            kiq_cg_member_set_topics(m, names, lens, n);
        }
        free(names);
        free(lens);
        load_classic(m, val);
    } else if (type == KIQ_OFFSETS_KEY_CTARGET) {
        const kiq_consumer_group_target_assignment_member_value_t *val = v;
        LOAD_TOPIC_PARTITIONS(&m->target, val->topic_partitions, val->topic_partitions_n, 0);
    } else {
        const kiq_consumer_group_current_member_assignment_value_t *val = v;
        m->epoch = val->member_epoch;
        m->previous_epoch = val->previous_member_epoch;
        m->state = val->state >= KIQ_CG_UNREVOKED_PARTITIONS && val->state <= KIQ_CG_STABLE ? val->state : KIQ_CG_STABLE;
        LOAD_TOPIC_PARTITIONS(&m->assigned, val->assigned_partitions, val->assigned_partitions_n, m->epoch);
        LOAD_TOPIC_PARTITIONS(&m->revoking, val->partitions_pending_revocation, val->partitions_pending_revocation_n,
                              m->epoch);
    }
}

void kiq_gc_consumer_loaded(kiq_group_coordinator_t *gc, kiq_group_t *g)
{
    int64_t now = kiq_clock_mono_ns();
    for (kiq_cg_member_t *m = g->consumer->members; m; m = m->next) {
        m->session_deadline_ns = now + (int64_t)kiq_gc_member_session_ms(gc, m) * 1000000;
        if (m->state == KIQ_CG_UNREVOKED_PARTITIONS)
            m->revoke_deadline_ns = now + (int64_t)(m->rebalance_timeout_ms > 0 ? m->rebalance_timeout_ms : 0) * 1000000;
    }
    sync_state(g);
}
