/* Mixed consumer groups (KIP-848's online migration), as Kafka 4.x's
 * coordinator serves them under group.consumer.migration.policy (upgrade,
 * downgrade, both: bidirectional, Kafka's default; or disabled): a
 * classic group with members becomes a consumer group when a member joins
 * with ConsumerGroupHeartbeat, its classic members kept (their protocols
 * and session timeout in the member record's ClassicMemberMetadata);
 * classic members of a consumer group join, sync, heartbeat and leave the
 * classic way, the server-side assignor computing their partitions and
 * their member epoch serving as the generation; when the last
 * consumer-protocol member leaves, the group is classic again and
 * rebalances. */
#include "group/coordinator_internal.h"

#include "group/consumer_group.h"

/* ---- the consumer protocol's subscription and assignment ---- */

/* A ConsumerProtocolSubscription (its version in front): 0, or -1 when it
 * is malformed. Newer versions only add fields at the end. */
static int decode_subscription(kiq_arena_t *a, const uint8_t *p, int32_t len, kiq_consumer_protocol_subscription_t *s)
{
    kiq_consumer_protocol_subscription_init(s);
    if (!p || len < 2) return -1;
    int16_t version = (int16_t)kiq_be16(p);
    kiq_rd_t rd;
    kiq_rd_init(&rd, p + 2, (size_t)len - 2);
    if (version < 0) return -1;
    return kiq_consumer_protocol_subscription_decode(&rd, version > 1 ? 1 : version, a, s) == 0 ? 0 : -1;
}

/* Partitions named by topic into a set by topic id (topics gone are left
 * out). */
#define NAMED_TO_SET(gc, a, arr, count, set)                                                          \
    do {                                                                                           \
        for (int32_t t_ = 0; t_ < (count); t_++) {                                                   \
            kiq_uuid_t id_;                                                                        \
            int32_t np_;                                                                           \
            kiq_str_t n_ = (arr)[t_].topic;                                                        \
            if (!n_.p || !kiq_gc_topic_info((gc), kiq_arena_strndup((a), n_.p, (size_t)n_.len), (a), &id_, &np_)) \
                continue;                                                                          \
            for (int32_t j_ = 0; j_ < (arr)[t_].partitions_n; j_++)                                \
                kiq_cg_set_add((set), &id_, (arr)[t_].partitions[j_]);                             \
        }                                                                                          \
    } while (0)

/* The member's partitions as a ConsumerProtocolAssignment, with the
 * version of its first protocol's subscription (Kafka's choice), in a. */
static kiq_bytes_t encode_assignment(kiq_group_coordinator_t *gc, kiq_arena_t *a, const kiq_cg_set_t *set,
                                     const kiq_cg_classic_t *c)
{
    int16_t version = 0;
    if (c && c->nprotocols > 0 && c->protocols[0].metadata_len >= 2) version = (int16_t)kiq_be16(c->protocols[0].metadata);
    if (version < 0) version = 0;
    if (version > 3) version = 3; /* Kafka's newest; v2 and v3 add no fields */
    kiq_consumer_protocol_assignment_t as;
    kiq_consumer_protocol_assignment_init(&as);
    as.assigned_partitions = kiq_arena_calloc(a, (size_t)(set->n ? set->n : 1), sizeof *as.assigned_partitions);
    for (int i = 0; i < set->n; i++) {
        kiq_consumer_protocol_assignment_assigned_partitions_t *tp =
            as.assigned_partitions_n ? &as.assigned_partitions[as.assigned_partitions_n - 1] : NULL;
        if (i == 0 || memcmp(set->v[i].topic.b, set->v[i - 1].topic.b, 16) != 0) {
            const char *name = kiq_gc_topic_name(gc, &set->v[i].topic, a);
            if (!name) continue;
            tp = &as.assigned_partitions[as.assigned_partitions_n++];
            kiq_consumer_protocol_assignment_assigned_partitions_init(tp);
            tp->topic = KIQ_STR(name);
            tp->partitions = kiq_arena_calloc(a, (size_t)set->n, sizeof *tp->partitions);
        }
        if (tp) tp->partitions[tp->partitions_n++] = set->v[i].partition;
    }
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i16(&w, version);
    kiq_consumer_protocol_assignment_encode(&w, version > 1 ? 1 : version, &as);
    uint8_t *copy = kiq_arena_alloc(a, w.len ? w.len : 1);
    memcpy(copy, w.buf, w.len);
    kiq_bytes_t out = {copy, (int32_t)w.len};
    kiq_wr_free(&w);
    return out;
}

/* A classic member's JoinGroup protocols into c (0, or -1 out of memory). */
static int set_protocols(kiq_cg_classic_t *c, kiq_arena_t *a, const kiq_group_protocol_t *p, int n)
{
    kiq_cg_classic_protocol_t *v = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *v);
    for (int i = 0; i < n; i++) v[i] = (kiq_cg_classic_protocol_t){p[i].name, p[i].metadata, p[i].metadata_len};
    return kiq_cg_classic_set_protocols(c, v, n);
}

/* ---- upgrade: a classic group with members becomes a consumer group ---- */

int16_t kiq_gc_consumer_upgrade(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_offsets_records_t *rs)
{
    if (!gc->migration_upgrade || !g->protocol_type || strcmp(g->protocol_type, "consumer") != 0 ||
        g->nmembers > gc->consumer_max_size) {
        kiq_error_set("Group %s is not a consumer group.", g->id);
        return KIQ_ERR_GROUP_ID_NOT_FOUND;
    }
    kiq_cgroup_t *cg = kiq_cgroup_new();
    if (!cg) return kiq_error_set("out of memory"), KIQ_ERR_UNKNOWN_SERVER_ERROR;
    cg->epoch = cg->assignment_epoch = g->generation;
    kiq_arena_t a;
    kiq_arena_init(&a);
    int64_t now = kiq_clock_mono_ns();
    bool malformed = false, oom = false;
    for (kiq_group_member_t *o = g->members; o && !malformed && !oom; o = o->next) {
        kiq_cg_member_t *m = kiq_cgroup_add_member(cg, o->id, strlen(o->id));
        if (!m || !(m->classic = calloc(1, sizeof *m->classic)) ||
            set_protocols(m->classic, &a, o->protocols, o->nprotocols) != 0) {
            oom = true;
            break;
        }
        /* the chosen protocol's subscription; a group still choosing one
         * (no generation yet) is read from each member's first */
        const kiq_group_protocol_t *p = g->protocol ? kiq_group_member_protocol(o, g->protocol) : o->protocols;
        kiq_consumer_protocol_subscription_t s;
        if (!p || decode_subscription(&a, p->metadata, p->metadata_len, &s) != 0) {
            malformed = true;
            break;
        }
        kiq_gc_member_subscribe(m, &a, s.topics, s.topics_n);
        if (o->assignment_len >= 2) {
            kiq_consumer_protocol_assignment_t as;
            kiq_consumer_protocol_assignment_init(&as);
            int16_t version = (int16_t)kiq_be16(o->assignment);
            kiq_rd_t rd;
            kiq_rd_init(&rd, o->assignment + 2, (size_t)o->assignment_len - 2);
            if (version < 0 || kiq_consumer_protocol_assignment_decode(&rd, version > 1 ? 1 : version, &a, &as) != 0) {
                malformed = true;
                break;
            }
            NAMED_TO_SET(gc, &a, as.assigned_partitions, as.assigned_partitions_n, &m->assigned);
        }
        for (int i = 0; i < m->assigned.n; i++) m->assigned.v[i].epoch = g->generation;
        kiq_cg_set_copy(&m->target, &m->assigned);
        m->instance_id = o->instance_id ? strdup(o->instance_id) : NULL;
        m->client_id = strdup(o->client_id ? o->client_id : "");
        m->client_host = strdup(o->client_host ? o->client_host : "");
        m->rebalance_timeout_ms = o->rebalance_timeout_ms;
        m->epoch = m->previous_epoch = g->generation;
        m->state = KIQ_CG_STABLE;
        m->classic->session_timeout_ms = o->session_timeout_ms;
        m->session_deadline_ns = now + (int64_t)o->session_timeout_ms * 1000000;
    }
    kiq_arena_reset(&a);
    if (oom) {
        kiq_cgroup_free(cg);
        kiq_error_set("out of memory upgrading group %s", g->id);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    if (malformed) {
        kiq_cgroup_free(cg);
        kiq_error_set("Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol "
                      "is malformed.",
                      g->id);
        return KIQ_ERR_GROUP_ID_NOT_FOUND;
    }
    KIQ_INFO("group %s: upgraded to a consumer group at epoch %d with %d classic members", g->id, cg->epoch,
             cg->nmembers);
    /* a rebalance under way ends: its members rejoin the consumer group */
    for (kiq_group_member_t *o = g->members; o; o = o->next) {
        kiq_gc_answer_join(g, o, KIQ_ERR_REBALANCE_IN_PROGRESS);
        kiq_gc_answer_sync(g, o, KIQ_ERR_REBALANCE_IN_PROGRESS);
    }
    while (g->members) {
        kiq_group_member_t *o = g->members;
        kiq_group_unlink_member(g, o);
        kiq_group_member_free(o);
    }
    for (kiq_group_pending_t *p = g->pending, *next; p; p = next) {
        next = p->next;
        free(p->id);
        free(p);
    }
    g->pending = NULL;
    free(g->protocol);
    free(g->leader);
    g->protocol = g->leader = NULL;
    g->consumer = cg;
    /* Kafka's order: the classic group's tombstone, then the consumer
     * group's records */
    kiq_offsets_records_add_group_tombstone(rs, g->id);
    for (kiq_cg_member_t *m = cg->members; m; m = m->next) kiq_offsets_records_add_cmember(rs, g->id, m);
    kiq_offsets_records_add_cgroup(rs, g->id, cg);
    for (kiq_cg_member_t *m = cg->members; m; m = m->next) kiq_offsets_records_add_ctarget(rs, g->id, m);
    kiq_offsets_records_add_ctarget_epoch(rs, g->id, cg);
    for (kiq_cg_member_t *m = cg->members; m; m = m->next) kiq_offsets_records_add_ccurrent(rs, g->id, m);
    kiq_gc_set_state(g, KIQ_GROUP_STABLE);
    return KIQ_ERR_NONE;
}

/* ---- downgrade: only classic members left ---- */

bool kiq_gc_consumer_downgrade(kiq_group_coordinator_t *gc, kiq_group_t *g, const kiq_cg_member_t *leaving,
                               kiq_offsets_records_t *rs)
{
    kiq_cgroup_t *cg = g->consumer;
    if (!gc->migration_downgrade || leaving->classic || cg->nmembers <= 1 || cg->nmembers - 1 > gc->max_size)
        return false;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        if (m != leaving && !m->classic) return false;
    /* Kafka's order: current assignments, targets, the target epoch,
     * subscriptions, the group */
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CCURRENT, g->id, m->id);
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CTARGET, g->id, m->id);
    kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CTARGET_EPOCH, g->id, NULL);
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next)
        kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CMEMBER, g->id, m->id);
    kiq_offsets_records_add_ctombstone(rs, KIQ_OFFSETS_KEY_CGROUP, g->id, NULL);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_group_member_t **tail = &g->members;
    for (const kiq_cg_member_t *m = cg->members; m; m = m->next) {
        if (m == leaving) continue;
        kiq_group_member_t *o = calloc(1, sizeof *o);
        if (!o) break;
        o->id = strdup(m->id);
        o->instance_id = m->instance_id ? strdup(m->instance_id) : NULL;
        o->client_id = strdup(m->client_id ? m->client_id : "");
        o->client_host = strdup(m->client_host ? m->client_host : "");
        o->session_timeout_ms = m->classic->session_timeout_ms;
        o->rebalance_timeout_ms = m->rebalance_timeout_ms;
        const kiq_cg_classic_t *c = m->classic;
        kiq_group_protocol_t *ps = kiq_arena_calloc(&a, (size_t)(c->nprotocols ? c->nprotocols : 1), sizeof *ps);
        for (int i = 0; i < c->nprotocols; i++)
            ps[i] = (kiq_group_protocol_t){c->protocols[i].name, c->protocols[i].metadata, c->protocols[i].metadata_len};
        kiq_group_member_set_protocols(o, ps, c->nprotocols);
        /* the target, in the member's subscription version */
        kiq_bytes_t as = encode_assignment(gc, &a, &m->target, m->classic);
        if ((o->assignment = malloc((size_t)(as.len ? as.len : 1)))) {
            memcpy(o->assignment, as.p, (size_t)as.len);
            o->assignment_len = as.len;
        }
        kiq_gc_touch(o);
        *tail = o;
        tail = &o->next;
        g->nmembers++;
    }
    kiq_arena_reset(&a);
    g->generation = cg->epoch;
    kiq_cgroup_free(cg);
    g->consumer = NULL;
    const char *p = kiq_group_select_protocol(g);
    free(g->protocol);
    free(g->leader);
    g->protocol = p ? strdup(p) : NULL;
    g->leader = g->members ? strdup(g->members->id) : NULL;
    kiq_gc_set_state(g, KIQ_GROUP_STABLE);
    KIQ_INFO("group %s: downgraded to a classic group at generation %d with %d members", g->id, g->generation,
             g->nmembers);
    return true;
}

/* ---- the classic protocol's requests to a consumer group ---- */

/* A rebalance the member must take part in: it rejoins within its
 * rebalance timeout (a deadline already running is kept). */
static int16_t rejoin(kiq_group_coordinator_t *gc, kiq_cg_member_t *m)
{
    if (!m->classic->rebalance_deadline_ns) {
        m->classic->rebalance_deadline_ns = kiq_clock_mono_ns() + (int64_t)m->rebalance_timeout_ms * 1000000;
        kiq_gc_deadline_moved(gc);
    }
    return KIQ_ERR_REBALANCE_IN_PROGRESS;
}

/* Kafka's check of a classic request's member: by instance id when given,
 * else by member id; a member of the consumer protocol is unknown to the
 * classic protocol. NONE with *out, or the error. */
static int16_t classic_member(kiq_group_t *g, kiq_str_t member_id, kiq_str_t instance_id, kiq_cg_member_t **out)
{
    kiq_cgroup_t *cg = g->consumer;
    kiq_cg_member_t *m;
    if (instance_id.p) {
        m = kiq_cgroup_instance(cg, instance_id.p, (size_t)instance_id.len);
        if (!m) return KIQ_ERR_UNKNOWN_MEMBER_ID;
        if (!kiq_gc_str_empty(member_id) && !kiq_gc_str_eq(m->id, member_id)) return KIQ_ERR_FENCED_INSTANCE_ID;
    } else {
        m = member_id.p ? kiq_cgroup_member(cg, member_id.p, (size_t)member_id.len) : NULL;
    }
    if (!m || !m->classic) return KIQ_ERR_UNKNOWN_MEMBER_ID;
    *out = m;
    return KIQ_ERR_NONE;
}

/* Whether every classic member supports one of the protocols (Kafka's
 * supportsClassicProtocols; members of the consumer protocol take any). */
static bool supports(const kiq_cgroup_t *cg, kiq_str_t type, const kiq_group_protocol_t *protos, int n)
{
    if (!kiq_gc_str_eq("consumer", type) || n <= 0) return false;
    for (int i = 0; i < n; i++) {
        bool all = true;
        for (const kiq_cg_member_t *m = cg->members; m && all; m = m->next) {
            if (!m->classic) continue;
            bool has = false;
            for (int j = 0; j < m->classic->nprotocols && !has; j++) has = strcmp(m->classic->protocols[j].name, protos[i].name) == 0;
            all = has;
        }
        if (all) return true;
    }
    return false;
}

bool kiq_gc_classic_join_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_request_t *r,
                                  const kiq_join_group_request_t *req, const kiq_group_protocol_t *protos, int nprotos,
                                  int32_t rebalance_ms, kiq_join_group_response_t *resp)
{
    kiq_cgroup_t *cg = g->consumer;
    bool unknown = kiq_gc_str_empty(req->member_id);
    char *fresh = NULL;
    kiq_str_t mid = req->member_id;
    if (unknown) {
        kiq_uuid_t u;
        char b64[32];
        kiq_uuid_random(&u);
        kiq_uuid_to_base64(&u, b64);
        if (!(fresh = strdup(b64))) return resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR, false;
        mid = KIQ_STR(fresh);
    }
    kiq_cg_member_t *m = kiq_cgroup_member(cg, mid.p, (size_t)mid.len);
    kiq_cg_member_t *inst = req->group_instance_id.p
                                ? kiq_cgroup_instance(cg, req->group_instance_id.p, (size_t)req->group_instance_id.len)
                                : NULL;
    int16_t err = KIQ_ERR_NONE;
    if (!m && !inst && cg->nmembers >= gc->consumer_max_size) err = KIQ_ERR_GROUP_MAX_SIZE_REACHED;
    else if (!supports(cg, req->protocol_type, protos, nprotos)) err = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL;
    else if (unknown && r->header.api_version >= 4 && !req->group_instance_id.p) err = KIQ_ERR_MEMBER_ID_REQUIRED;
    else if (inst && inst != m && !unknown) err = KIQ_ERR_FENCED_INSTANCE_ID;
    else if (inst && inst != m && inst->epoch != -2 && !inst->classic) err = KIQ_ERR_UNRELEASED_INSTANCE_ID;
    else if (m && !m->classic) err = KIQ_ERR_UNKNOWN_MEMBER_ID;
    if (err) {
        /* only MEMBER_ID_REQUIRED hands the new id out */
        resp->error_code = err;
        if (err == KIQ_ERR_MEMBER_ID_REQUIRED) resp->member_id = kiq_request_str(r, fresh);
        free(fresh);
        return false;
    }
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    kiq_arena_t a;
    kiq_arena_init(&a);
    bool is_new = !m;
    if (!m && inst) {
        /* a static member coming back with a new id takes over its slot */
        m = inst;
        kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CCURRENT, g->id, m->id);
        kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CTARGET, g->id, m->id);
        kiq_offsets_records_add_ctombstone(&rs, KIQ_OFFSETS_KEY_CMEMBER, g->id, m->id);
        char *id = kiq_gc_dup_str(mid);
        if (id) {
            free(m->id);
            m->id = id;
        }
        if (m->epoch == -2) m->epoch = m->previous_epoch;
        is_new = true;
    } else if (!m) {
        m = kiq_cgroup_add_member(cg, mid.p, (size_t)mid.len);
    }
    free(fresh);
    if (!m || (!m->classic && !(m->classic = calloc(1, sizeof *m->classic)))) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    kiq_consumer_protocol_subscription_t s;
    if (decode_subscription(&a, protos[0].metadata, protos[0].metadata_len, &s) != 0) {
        resp->error_code = KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL;
        goto out;
    }
    if (req->group_instance_id.p && !m->instance_id) m->instance_id = kiq_gc_dup_str(req->group_instance_id);
    if (rebalance_ms > 0) m->rebalance_timeout_ms = rebalance_ms;
    free(m->server_assignor);
    m->server_assignor = NULL;
    kiq_gc_member_identify(m, r);
    bool subscription = kiq_gc_member_subscribe(m, &a, s.topics, s.topics_n) == 1;
    m->classic->session_timeout_ms = req->session_timeout_ms;
    if (set_protocols(m->classic, &a, protos, nprotos) != 0) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    /* the member's record carries its protocols: written on every join */
    kiq_offsets_records_add_cmember(&rs, g->id, m);
    kiq_cg_set_t owned = {0};
    NAMED_TO_SET(gc, &a, s.owned_partitions, s.owned_partitions_n, &owned);
    int64_t now = kiq_clock_mono_ns();
    int rc = kiq_gc_consumer_rebalance(gc, g, m, subscription || is_new, &owned, now, &rs);
    kiq_cg_set_free(&owned);
    if (rc < 0) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    kiq_offsets_records_add_ccurrent(&rs, g->id, m);
    m->session_deadline_ns = now + (int64_t)req->session_timeout_ms * 1000000;
    /* its SyncGroup is due within the rebalance timeout */
    m->classic->rebalance_deadline_ns = now + (int64_t)m->rebalance_timeout_ms * 1000000;
    resp->error_code = KIQ_ERR_NONE;
    resp->member_id = kiq_request_str(r, m->id);
    resp->generation_id = m->epoch;
    resp->protocol_type = KIQ_STR("consumer");
    resp->protocol_name = kiq_request_str(r, m->classic->protocols[0].name);
    resp->leader = KIQ_STR("");
    resp->members_n = 0;
out:
    kiq_gc_consumer_store(gc, g, &rs);
    kiq_gc_deadline_moved(gc);
    kiq_offsets_records_free(&rs);
    kiq_arena_reset(&a);
    return false;
}

int16_t kiq_gc_classic_sync_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_request_t *r,
                                     const kiq_sync_group_request_t *req, kiq_sync_group_response_t *resp)
{
    kiq_cg_member_t *m = NULL;
    int16_t err = classic_member(g, req->member_id, req->group_instance_id, &m);
    if (err) return err;
    if (req->generation_id != m->epoch) return KIQ_ERR_ILLEGAL_GENERATION;
    if ((req->protocol_type.p && !kiq_gc_str_eq("consumer", req->protocol_type)) ||
        (req->protocol_name.p && (m->classic->nprotocols == 0 || !kiq_gc_str_eq(m->classic->protocols[0].name, req->protocol_name))))
        return KIQ_ERR_INCONSISTENT_GROUP_PROTOCOL;
    /* a newer epoch: the member rejoins first, unless it is still giving
     * partitions up (its next join follows by itself) */
    if (g->consumer->epoch > m->epoch && m->state != KIQ_CG_UNREVOKED_PARTITIONS) return rejoin(gc, m);
    m->session_deadline_ns = kiq_clock_mono_ns() + (int64_t)m->classic->session_timeout_ms * 1000000;
    m->classic->rebalance_deadline_ns = 0;
    kiq_gc_deadline_moved(gc);
    resp->protocol_type = req->protocol_type;
    resp->protocol_name = req->protocol_name;
    resp->assignment = encode_assignment(gc, &r->arena, &m->assigned, m->classic);
    return KIQ_ERR_NONE;
}

int16_t kiq_gc_classic_heartbeat_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g,
                                          const kiq_heartbeat_request_t *req)
{
    kiq_cg_member_t *m = NULL;
    int16_t err = classic_member(g, req->member_id, req->group_instance_id, &m);
    if (err) return err;
    if (req->generation_id != m->epoch) return KIQ_ERR_ILLEGAL_GENERATION;
    m->session_deadline_ns = kiq_clock_mono_ns() + (int64_t)m->classic->session_timeout_ms * 1000000;
    kiq_gc_deadline_moved(gc);
    /* it rejoins to catch up with a new epoch, to give partitions up, or
     * to take partitions others have released meanwhile */
    bool waiting = false;
    if (m->state == KIQ_CG_UNRELEASED_PARTITIONS)
        for (int i = 0; i < m->target.n && !waiting; i++)
            waiting = !kiq_cg_set_has(&m->assigned, &m->target.v[i].topic, m->target.v[i].partition) &&
                      kiq_cgroup_partition_taken(g->consumer, m, &m->target.v[i].topic, m->target.v[i].partition);
    if (m->epoch < g->consumer->epoch || m->state == KIQ_CG_UNREVOKED_PARTITIONS ||
        (m->state == KIQ_CG_UNRELEASED_PARTITIONS && !waiting))
        return rejoin(gc, m);
    return KIQ_ERR_NONE;
}

int16_t kiq_gc_classic_leave_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_str_t member_id,
                                      kiq_str_t instance_id)
{
    kiq_cg_member_t *m = NULL;
    int16_t err = classic_member(g, member_id, instance_id, &m);
    if (err) return err;
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    kiq_gc_consumer_remove_member(gc, g, m, "left the group", &rs);
    kiq_gc_consumer_store(gc, g, &rs);
    kiq_offsets_records_free(&rs);
    return KIQ_ERR_NONE;
}
