/* The controller; see controller.h. Decisions follow Kafka's KRaft
 * controller: brokers are unfenced while they heartbeat, a fenced broker
 * leaves every ISR and its leaderships move with a new leader epoch, a
 * broker coming back leads the partitions left without a leader, and an
 * ISR changes only through its leader's AlterPartition at the current
 * leader and partition epochs. */
#include "controller/controller_internal.h"

#define TIMER_MS 100

/* ---- records ---- */

kiq_metadata_record_t *kiq_ctl_add_record(batch_t *b, int16_t type)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        kiq_metadata_record_t *r = kiq_arena_calloc(b->a, cap, sizeof *r);
        if (b->n) memcpy(r, b->r, b->n * sizeof *r);
        b->r = r;
        b->cap = cap;
    }
    kiq_metadata_record_t *rec = &b->r[b->n++];
    kiq_metadata_record_init(rec, type);
    return rec;
}

int32_t *kiq_ctl_copy_ids(kiq_arena_t *a, const int32_t *ids, int32_t n)
{
    int32_t *out = kiq_arena_calloc(a, (size_t)(n > 0 ? n : 1), sizeof *out);
    if (n > 0) memcpy(out, ids, (size_t)n * sizeof *out);
    return out;
}

bool kiq_ctl_has_id(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

void kiq_ctl_tell_brokers(kiq_controller_t *c)
{
    c->version++;
    for (int i = 0; i < c->nbrokers; i++)
        if (c->brokers[i].channel) kiq_broker_channel_poke(c->brokers[i].channel, c->version);
}

static int replay_one(void *ctx, int64_t offset, const kiq_metadata_record_t *r);

/* Under mu: when the quorum's log starts after what the image holds (at
 * the start, or a snapshot fetched from the leader replaced the log), the
 * image is rebuilt from the latest snapshot. */
static int load_snapshot(kiq_controller_t *c)
{
    if (kiq_quorum_log_start(c->quorum) <= c->applied) return 0;
    kiq_metadata_image_t *old = c->image;
    if (!(c->image = kiq_metadata_image_new())) {
        c->image = old;
        return -1;
    }
    int64_t end;
    if (kiq_quorum_load_snapshot(c->quorum, replay_one, c, &end) != 0) {
        KIQ_ERROR("controller %d: %s", c->node_id, kiq_error_get());
        kiq_metadata_image_free(c->image);
        c->image = old;
        return -1;
    }
    kiq_metadata_image_free(old);
    atomic_fetch_add(&c->quotas_version, 1);
    c->acls_changed = true;
    c->applied = end;
    KIQ_INFO("controller %d: metadata loaded from the snapshot ending at offset %lld: %zu brokers, %zu topics",
             c->node_id, (long long)end, kiq_metadata_image_broker_count(c->image),
             kiq_metadata_image_topic_count(c->image));
    return 0;
}

/* Under mu: the bindings republished when the replay changed them. */
static int publish_acls(kiq_controller_t *c)
{
    if (!c->acls_changed) return 0;
    if (kiq_acl_published_set(&c->acls, kiq_metadata_image_acls(c->image)) != 0) return -1;
    c->acls_changed = false;
    return 0;
}

/* Under mu: the image takes what the quorum committed up to hw. */
static int catch_up(kiq_controller_t *c, int64_t hw)
{
    if (load_snapshot(c) != 0) return -1;
    if (hw > c->applied) {
        if (kiq_quorum_replay(c->quorum, c->applied, hw, replay_one, c) != 0) {
            KIQ_ERROR("controller: the committed metadata log from offset %lld does not apply: %s",
                      (long long)c->applied, kiq_error_get());
            return -1;
        }
        c->applied = hw;
    }
    return publish_acls(c);
}

int kiq_ctl_commit(kiq_controller_t *c, batch_t *b)
{
    if (b->n == 0) return 0;
    atomic_fetch_add_explicit(&c->operations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->records, (uint64_t)b->n, memory_order_relaxed);
    int64_t last;
    int rc = c->active ? kiq_quorum_write(c->quorum, b->r, b->n, c->write_timeout_ms, &last) : KIQ_ERR_NOT_CONTROLLER;
    b->n = 0;
    if (rc != 0) {
        c->commit_error = (int16_t)(rc > 0 ? rc : KIQ_ERR_UNKNOWN_SERVER_ERROR);
        KIQ_WARN_LIMITED("controller: metadata not written: %s", c->active ? kiq_error_get() : "no longer active");
        return -1;
    }
    /* what the quorum has, in log order: a write that timed out before may
     * have committed since, ahead of this one */
    if (catch_up(c, last + 1) != 0) {
        c->commit_error = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return -1;
    }
    kiq_ctl_tell_brokers(c);
    return 0;
}

broker_slot_t *kiq_ctl_slot_of(kiq_controller_t *c, int32_t id, bool create)
{
    for (int i = 0; i < c->nbrokers; i++)
        if (c->brokers[i].id == id) return &c->brokers[i];
    if (!create) return NULL;
    if (c->nbrokers == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        broker_slot_t *nb = realloc(c->brokers, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        c->brokers = nb;
        c->cap = cap;
    }
    broker_slot_t *s = &c->brokers[c->nbrokers++];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->building_offset = s->acked_offset = -1;
    return s;
}

bool kiq_ctl_shares_dir(const kiq_broker_registration_t *rb, const kiq_broker_registration_request_t *req)
{
    for (int32_t i = 0; i < rb->nlog_dirs; i++)
        for (int32_t j = 0; j < req->log_dirs_n; j++)
            if (memcmp(&rb->log_dirs[i], &req->log_dirs[j], sizeof rb->log_dirs[i]) == 0) return true;
    return false;
}

size_t kiq_ctl_live_brokers(kiq_controller_t *c, int32_t except, int32_t *out, size_t max)
{
    int32_t all[256];
    size_t n = kiq_metadata_image_live_brokers(c->image, all, 256), k = 0;
    for (size_t i = 0; i < n && i < 256 && k < max; i++)
        if (all[i] != except) out[k++] = all[i];
    return k;
}

const kiq_broker_endpoint_t *kiq_ctl_endpoint(const kiq_controller_t *c, const kiq_broker_registration_t *b,
                                             const char *name)
{
    for (int32_t i = 0; i < b->nendpoints; i++) {
        const kiq_broker_endpoint_t *e = &b->endpoints[i];
        if (name ? strcmp(e->name, name) == 0 : strcmp(e->name, c->control_listener) != 0) return e;
    }
    return NULL;
}

const kiq_uuid_t KIQ_DIR_LOST = {.b = {[15] = 1}};

bool kiq_ctl_is_impaired(const kiq_controller_t *c, const kiq_uuid_t *topic_id, int32_t p, int32_t broker)
{
    for (int i = 0; i < c->nimpaired; i++)
        if (c->impaired[i].partition == p && c->impaired[i].broker == broker &&
            memcmp(c->impaired[i].topic_id.b, topic_id->b, 16) == 0)
            return true;
    return false;
}

void kiq_ctl_forget_impaired(kiq_controller_t *c, int32_t broker)
{
    int n = 0;
    for (int i = 0; i < c->nimpaired; i++)
        if (c->impaired[i].broker != broker) c->impaired[n++] = c->impaired[i];
    c->nimpaired = n;
}

bool kiq_ctl_set_impaired(kiq_controller_t *c, const kiq_uuid_t *topic_id, int32_t p, int32_t broker, bool impaired)
{
    for (int i = 0; i < c->nimpaired; i++)
        if (c->impaired[i].partition == p && c->impaired[i].broker == broker &&
            memcmp(c->impaired[i].topic_id.b, topic_id->b, 16) == 0) {
            if (!impaired) c->impaired[i] = c->impaired[--c->nimpaired];
            return true;
        }
    if (!impaired) return true;
    if (c->nimpaired == c->impaired_cap) {
        int cap = c->impaired_cap ? c->impaired_cap * 2 : 16;
        impaired_replica_t *ni = realloc(c->impaired, (size_t)cap * sizeof *ni);
        if (!ni) return false;
        c->impaired = ni;
        c->impaired_cap = cap;
    }
    c->impaired[c->nimpaired++] = (impaired_replica_t){*topic_id, p, broker};
    return true;
}

/* Under mu: the live brokers that may lead ti's partition p (not impaired
 * there) into out (room for nlive). */
static size_t eligible(const kiq_controller_t *c, const kiq_topic_image_t *ti, int32_t p, const int32_t *live,
                       size_t nlive, int32_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < nlive; i++)
        if (!kiq_ctl_is_impaired(c, &ti->id, p, live[i])) out[n++] = live[i];
    return n;
}

kiq_partition_change_record_t *kiq_ctl_partition_change(batch_t *b, const kiq_topic_image_t *ti, int32_t p)
{
    kiq_partition_change_record_t *ch = &kiq_ctl_add_record(b, KIQ_MR_PARTITION_CHANGE)->m.partition_change;
    ch->topic_id = ti->id;
    ch->partition_id = p;
    return ch;
}

/* Under mu: a PartitionChange making `leader` lead topic-p; an unclean
 * election (a leader from outside the ISR) leaves it alone in the ISR,
 * recovering, and is counted. */
static kiq_partition_change_record_t *leader_change(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti,
                                                    int32_t p, int32_t leader, bool unclean)
{
    kiq_partition_change_record_t *ch = kiq_ctl_partition_change(b, ti, p);
    ch->leader = leader;
    if (unclean) {
        atomic_fetch_add_explicit(&c->unclean_elections, 1, memory_order_relaxed);
        ch->isr = kiq_ctl_copy_ids(b->a, &leader, 1);
        ch->isr_n = 1;
        ch->leader_recovery_state = KIQ_LEADER_RECOVERING;
    }
    return ch;
}

bool kiq_ctl_may_lead(const kiq_controller_t *c, const kiq_topic_image_t *ti, int32_t p, int32_t broker)
{
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, broker);
    return rb && !rb->fenced && kiq_ctl_has_id(pr->isr, pr->nisr, broker) && !kiq_ctl_is_impaired(c, &ti->id, p, broker);
}

/* Under mu: whether ti's partitions may elect a leader from outside the
 * ISR. The topic's own unclean.leader.election.enable wins over the
 * broker's, as in Kafka: a topic created "false" must never lose
 * acknowledged records to a broker-wide "true". */
static bool unclean_allowed(const kiq_controller_t *c, const kiq_topic_image_t *ti)
{
    const char *v = kiq_metadata_image_config(c->image, KIQ_CONFIG_RESOURCE_TOPIC, ti->name,
                                              "unclean.leader.election.enable");
    if (v) return strcasecmp(v, "true") == 0;
    return kiq_config_bool(c->cfg, KIQ_CFG_UNCLEAN_LEADER_ELECTION_ENABLE);
}

void kiq_ctl_move_off(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti, int32_t p, int32_t id,
                     const int32_t *live, size_t nlive, bool keep_alone)
{
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    if (!kiq_ctl_has_id(pr->replicas, pr->nreplicas, id)) return;
    bool in_isr = kiq_ctl_has_id(pr->isr, pr->nisr, id);
    if (pr->leader != id && !(in_isr && pr->nisr > 1)) return;
    int32_t cand[256];
    size_t ncand = eligible(c, ti, p, live, nlive, cand);
    bool unclean = false;
    int32_t leader = pr->leader;
    if (pr->leader == id) {
        leader = kiq_metadata_image_elect_leader(pr, cand, ncand,
                                                 !keep_alone && unclean_allowed(c, ti),
                                                 &unclean);
        if (leader == KIQ_NO_LEADER && keep_alone) {
            KIQ_WARN("controller: %s-%d: broker %d's replica is impaired but stays leader: no other ISR member",
                     ti->name, p, id);
            return;
        }
    }
    int32_t *isr = kiq_arena_calloc(b->a, (size_t)pr->nisr + 1, sizeof *isr);
    int32_t nisr = 0;
    for (int32_t i = 0; i < pr->nisr; i++)
        if (pr->isr[i] != id) isr[nisr++] = pr->isr[i];
    kiq_partition_change_record_t *ch = kiq_ctl_partition_change(b, ti, p);
    if (pr->leader == id) {
        ch->leader = leader;
        if (unclean) {
            atomic_fetch_add_explicit(&c->unclean_elections, 1, memory_order_relaxed);
            isr[0] = leader;
            nisr = 1;
            ch->leader_recovery_state = KIQ_LEADER_RECOVERING;
        }
        KIQ_INFO("controller: %s-%d: leader %d -> %d%s", ti->name, p, id, leader,
                 unclean ? " (unclean election)" : leader < 0 ? " (offline)" : "");
    }
    if (nisr > 0) {
        ch->isr = isr;
        ch->isr_n = nisr;
    }
}

void kiq_ctl_leave_partitions(kiq_controller_t *c, batch_t *b, int32_t id)
{
    int32_t live[256];
    size_t nlive = kiq_ctl_live_brokers(c, id, live, 256);
    for (size_t t = 0; t < kiq_metadata_image_topic_count(c->image); t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) kiq_ctl_move_off(c, b, ti, p, id, live, nlive, false);
    }
}

void kiq_ctl_elect_offline(kiq_controller_t *c, batch_t *b)
{
    int32_t live[256];
    size_t nlive = kiq_ctl_live_brokers(c, -1, live, 256);
    for (size_t t = 0; t < kiq_metadata_image_topic_count(c->image); t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            if (pr->leader != KIQ_NO_LEADER) continue;
            bool unclean = false;
            int32_t cand[256];
            size_t ncand = eligible(c, ti, p, live, nlive, cand);
            int32_t leader = kiq_metadata_image_elect_leader(pr, cand, ncand, unclean_allowed(c, ti), &unclean);
            if (leader == KIQ_NO_LEADER) continue;
            leader_change(c, b, ti, p, leader, unclean);
            KIQ_INFO("controller: %s-%d: leader %d elected%s", ti->name, p, leader, unclean ? " (unclean)" : "");
        }
    }
}

/* Under mu: one partition's leader election (Kafka's ElectLeaders rules),
 * a PartitionChange into b when it elects. Preferred: the first replica,
 * when live and in the ISR, unless it leads already. Unclean: a partition
 * without a leader gets an ISR member, else any live replica (which becomes
 * the whole ISR, recovering). A Kafka error code: ELECTION_NOT_NEEDED,
 * PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE. */
static int16_t elect_one(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti, int32_t p, bool unclean)
{
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    int32_t leader;
    bool out_of_sync = false;
    if (!unclean) {
        if (pr->nreplicas > 0 && pr->leader == pr->replicas[0]) return KIQ_ERR_ELECTION_NOT_NEEDED;
        leader = pr->nreplicas > 0 ? pr->replicas[0] : KIQ_NO_LEADER;
        if (!kiq_ctl_may_lead(c, ti, p, leader)) return KIQ_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
    } else {
        if (pr->leader != KIQ_NO_LEADER) return KIQ_ERR_ELECTION_NOT_NEEDED;
        int32_t live[256], cand[256];
        size_t nlive = kiq_ctl_live_brokers(c, -1, live, 256);
        leader = kiq_metadata_image_elect_leader(pr, cand, eligible(c, ti, p, live, nlive, cand), true, &out_of_sync);
        if (leader == KIQ_NO_LEADER) return KIQ_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
    }
    leader_change(c, b, ti, p, leader, out_of_sync);
    KIQ_INFO("controller: %s-%d: leader %d -> %d (%s election)", ti->name, p, pr->leader, leader,
             !unclean ? "preferred" : out_of_sync ? "unclean" : "clean");
    return KIQ_ERR_NONE;
}

/* Preferred-leader election (Kafka's auto leader rebalance): every
 * partition whose first replica can lead but does not. Returns how many. */
static int elect_preferred(kiq_controller_t *c, batch_t *b)
{
    int moved = 0;
    for (size_t t = 0; t < kiq_metadata_image_topic_count(c->image); t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) moved += elect_one(c, b, ti, p, false) == KIQ_ERR_NONE;
    }
    return moved;
}

int kiq_controller_elect_preferred(kiq_controller_t *c)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    int moved = elect_preferred(c, &b);
    int rc = kiq_ctl_commit(c, &b) == 0 ? moved : -1;
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

/* Under mu: why `to` cannot lead topic-p (a Kafka error code, the reason
 * in the error slot), or NONE. */
static int16_t cannot_lead(const kiq_controller_t *c, const kiq_topic_image_t *ti, const char *topic, int32_t p,
                           int32_t to)
{
    if (!ti || p < 0 || p >= ti->npartitions) {
        kiq_error_set("no partition %s-%d", topic, (int)p);
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    if (!kiq_ctl_has_id(pr->replicas, pr->nreplicas, to)) {
        kiq_error_set("broker %d holds no replica of %s-%d", (int)to, topic, (int)p);
        return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    }
    if (!kiq_ctl_may_lead(c, ti, p, to)) {
        kiq_error_set("broker %d cannot lead %s-%d: it is not live and in the ISR", (int)to, topic, (int)p);
        return KIQ_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
    }
    return KIQ_ERR_NONE;
}

int16_t kiq_controller_move_leader(kiq_controller_t *c, const char *topic, int32_t p, int32_t to)
{
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = kiq_metadata_image_topic(c->image, topic, strlen(topic));
    int16_t err = cannot_lead(c, ti, topic, p, to);
    if (err != KIQ_ERR_NONE || ti->partitions[p].leader == to) {
        pthread_mutex_unlock(&c->mu);
        return err;
    }
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    kiq_partition_change_record_t *ch = leader_change(c, &b, ti, p, to, false);
    /* the new leader first in the replicas, where a reassignment would put
     * it: the preferred leader from now on, so a rebalance keeps it */
    ch->replicas = kiq_ctl_copy_ids(&a, pr->replicas, pr->nreplicas);
    ch->replicas_n = pr->nreplicas;
    ch->replicas[0] = to;
    for (int32_t i = 0, n = 1; i < pr->nreplicas; i++)
        if (pr->replicas[i] != to) ch->replicas[n++] = pr->replicas[i];
    KIQ_INFO("controller: %s-%d: leader %d -> %d (moved)", ti->name, (int)p, (int)pr->leader, (int)to);
    if (kiq_ctl_commit(c, &b) != 0) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return err;
}

void kiq_controller_election_result(kiq_arena_t *arena, int16_t err, const char *topic, bool topic_known, int32_t p,
                                    kiq_elect_leaders_response_replica_election_results_partition_result_t *out)
{
    kiq_elect_leaders_response_replica_election_results_partition_result_init(out);
    out->partition_id = p;
    out->error_code = err;
    char msg[512];
    switch (err) {
    case KIQ_ERR_NONE: return;
    case KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION:
        if (topic_known) snprintf(msg, sizeof msg, "No such partition as %s-%d", topic, p);
        else snprintf(msg, sizeof msg, "No such topic as %s", topic);
        break;
    case KIQ_ERR_ELECTION_NOT_NEEDED: snprintf(msg, sizeof msg, "Leader election not needed for topic partition."); break;
    case KIQ_ERR_PREFERRED_LEADER_NOT_AVAILABLE: snprintf(msg, sizeof msg, "The preferred leader was not available."); break;
    case KIQ_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE:
        snprintf(msg, sizeof msg, "Eligible topic partition leaders are not available.");
        break;
    default: snprintf(msg, sizeof msg, "%s", kiq_error_get()); break;
    }
    out->error_message = (kiq_str_t){kiq_arena_strndup(arena, msg, strlen(msg)), (int32_t)strlen(msg)};
}

void kiq_controller_elect_leaders(kiq_controller_t *c, kiq_arena_t *arena, const kiq_elect_leaders_request_t *req,
                                  kiq_elect_leaders_response_t *resp)
{
    bool unclean = req->election_type == 1;
    if (req->election_type != 0 && req->election_type != 1) {
        kiq_error_set("Unknown election type %d", req->election_type);
        resp->error_code = KIQ_ERR_INVALID_REQUEST;
        return;
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    bool all = req->topic_partitions_n < 0;
    int32_t nt = all ? (int32_t)kiq_metadata_image_topic_count(c->image) : req->topic_partitions_n;
    resp->replica_election_results_n = nt;
    resp->replica_election_results = kiq_arena_calloc(arena, (size_t)(nt ? nt : 1), sizeof *resp->replica_election_results);
    for (int32_t t = 0; t < nt; t++) {
        kiq_elect_leaders_response_replica_election_results_t *tr = &resp->replica_election_results[t];
        kiq_elect_leaders_response_replica_election_results_init(tr);
        const kiq_topic_image_t *ti = NULL;
        const kiq_elect_leaders_request_topic_partitions_t *want = all ? NULL : &req->topic_partitions[t];
        if (all) ti = kiq_metadata_image_topic_at(c->image, (size_t)t);
        else if (want->topic.p) ti = kiq_metadata_image_topic(c->image, want->topic.p, (size_t)want->topic.len);
        tr->topic = all ? (kiq_str_t){kiq_arena_strndup(arena, ti->name, strlen(ti->name)), (int32_t)strlen(ti->name)}
                        : want->topic;
        char name[256];
        snprintf(name, sizeof name, KIQ_STR_FMT, KIQ_STR_ARG(tr->topic));
        int32_t np = all ? ti->npartitions : want->partitions_n;
        tr->partition_result = kiq_arena_calloc(arena, (size_t)(np > 0 ? np : 1), sizeof *tr->partition_result);
        for (int32_t i = 0; i < np; i++) {
            int32_t p = all ? i : want->partitions[i];
            int16_t err = !ti                                ? KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION
                          : p < 0 || p >= ti->npartitions ? KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION
                                                           : elect_one(c, &b, ti, p, unclean);
            /* asked for everything, the partitions that needed nothing are left out */
            if (all && err == KIQ_ERR_ELECTION_NOT_NEEDED) continue;
            kiq_controller_election_result(arena, err, name, ti != NULL, p, &tr->partition_result[tr->partition_result_n++]);
        }
    }
    if (kiq_ctl_commit(c, &b) != 0) resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

/* ---- fencing ---- */

static void fence_silent(kiq_controller_t *c, int64_t now)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    for (int i = 0; i < c->nbrokers; i++) {
        broker_slot_t *s = &c->brokers[i];
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, s->id);
        if (!rb || rb->fenced || now - s->last_heartbeat_ns <= c->session_timeout_ns) continue;
        KIQ_WARN("controller: broker %d missed its heartbeats for %lld ms: fenced", s->id,
                 (long long)((now - s->last_heartbeat_ns) / 1000000));
        kiq_metadata_record_t *r = kiq_ctl_add_record(&b, KIQ_MR_FENCE_BROKER);
        r->m.fence_broker.id = rb->id;
        r->m.fence_broker.epoch = rb->epoch;
        if (kiq_ctl_commit(c, &b) != 0) break;
        kiq_ctl_leave_partitions(c, &b, s->id);
        if (kiq_ctl_commit(c, &b) != 0) break;
    }
    kiq_arena_reset(&a);
}

static int keep_cluster_min_isr(kiq_controller_t *c);

/* The timer's round, every TIMER_MS: brokers past their session fenced,
 * leaderships moved back to preferred replicas when it is time,
 * reassignments completed that can be, expired delegation tokens removed
 * when it is time. */
static int64_t timer_round(void *arg)
{
    kiq_controller_t *c = arg;
    pthread_mutex_lock(&c->mu);
    bool stopping = c->stopping || !c->active;
    if (!stopping && !c->features_kept) c->features_kept = kiq_ctl_keep_features(c) == 0;
    if (!stopping && !c->min_isr_kept) c->min_isr_kept = keep_cluster_min_isr(c) == 0;
    if (!stopping) {
        int64_t now = kiq_clock_mono_ns();
        fence_silent(c, now);
        if (c->rebalance_interval_ns && now >= c->next_rebalance_ns) {
            kiq_arena_t a;
            kiq_arena_init(&a);
            batch_t b = {.a = &a};
            if (elect_preferred(c, &b) > 0) kiq_ctl_commit(c, &b);
            kiq_arena_reset(&a);
            c->next_rebalance_ns = now + c->rebalance_interval_ns;
        }
        kiq_ctl_complete_reassignments(c); /* a target replica back in sync or live again */
        if (now >= c->next_token_check_ns) {
            kiq_ctl_remove_expired_tokens(c);
            c->next_token_check_ns = now + c->token_check_interval_ns;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return stopping ? -1 : TIMER_MS;
}

/* ---- lifecycle ---- */

static int replay_one(void *ctx, int64_t offset, const kiq_metadata_record_t *r)
{
    kiq_controller_t *c = ctx;
    if (kiq_metadata_image_apply(c->image, offset, r) != 0) {
        return kiq_error_set("metadata log record %s at offset %lld does not apply: %s",
                             kiq_metadata_record_name(r->type), (long long)offset, kiq_error_get());
    }
    if (r->type == KIQ_MR_CLIENT_QUOTA) atomic_fetch_add(&c->quotas_version, 1);
    if (r->type == KIQ_MR_ACCESS_CONTROL_ENTRY || r->type == KIQ_MR_REMOVE_ACCESS_CONTROL_ENTRY) c->acls_changed = true;
    return 0;
}

kiq_controller_t *kiq_controller_new(const kiq_config_t *cfg, int32_t node_id, const char *control_listener,
                                     kiq_metrics_t *metrics, struct kiq_quorum *quorum,
                                     const struct kiq_peer_security *security)
{
    kiq_controller_t *c = calloc(1, sizeof *c);
    if (!c) return kiq_error_set("out of memory"), NULL;
    c->security = security;
    c->node_id = node_id;
    c->metrics = metrics;
    c->quorum = quorum;
    snprintf(c->control_listener, sizeof c->control_listener, "%s", control_listener);
    c->session_timeout_ns = kiq_config_int(cfg, KIQ_CFG_BROKER_SESSION_TIMEOUT_MS) * 1000000;
    c->write_timeout_ms = kiq_config_int(cfg, KIQ_CFG_CONTROLLER_QUORUM_REQUEST_TIMEOUT_MS);
    c->cfg = cfg;
    if (kiq_config_bool(cfg, KIQ_CFG_AUTO_LEADER_REBALANCE_ENABLE))
        c->rebalance_interval_ns = kiq_config_int(cfg, KIQ_CFG_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS) * 1000000000LL;
    c->token_check_interval_ns = kiq_config_int(cfg, KIQ_CFG_DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS) * 1000000;
    c->default_partitions = (int32_t)kiq_config_int(cfg, KIQ_CFG_NUM_PARTITIONS);
    c->default_replication_factor = (int16_t)kiq_config_int(cfg, KIQ_CFG_DEFAULT_REPLICATION_FACTOR);
    pthread_mutex_init(&c->mu, NULL);
    kiq_cond_init_monotonic(&c->activated);
    c->image = kiq_metadata_image_new();
    if (!c->image || kiq_acl_published_init(&c->acls) != 0) {
        kiq_controller_free(c);
        return NULL;
    }
    return c;
}

/* Under mu: as Kafka 4.1+'s controller once active (KIP-966), the static
 * min.insync.replicas kept among the cluster-wide configs when none is. */
static int keep_cluster_min_isr(kiq_controller_t *c)
{
    const char *name = kiq_config_defs[KIQ_CFG_MIN_INSYNC_REPLICAS].name;
    if (kiq_metadata_image_config(c->image, KIQ_CONFIG_RESOURCE_BROKER, "", name)) return 0;
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    bool is_default;
    kiq_metadata_record_t *cr = kiq_ctl_add_record(&b, KIQ_MR_CONFIG);
    cr->m.config.resource_type = KIQ_CONFIG_RESOURCE_BROKER;
    cr->m.config.resource_name = kiq_ctl_astr(&a, "");
    cr->m.config.name = kiq_ctl_astr(&a, name);
    cr->m.config.value = kiq_ctl_astr(&a, kiq_config_static_text(c->cfg, KIQ_CFG_MIN_INSYNC_REPLICAS, &is_default));
    int rc = kiq_ctl_commit(c, &b);
    kiq_arena_reset(&a);
    return rc;
}

/* Under mu: this node now decides. Every registered broker gets a
 * session's grace to check in; nothing is pushed to one before it does
 * (the state may be about to change: a restarted broker's leaderships
 * move, and a broker must not act on the old one meanwhile). */
static void activate(kiq_controller_t *c, int32_t epoch)
{
    c->active = true;
    pthread_cond_broadcast(&c->activated);
    c->epoch = epoch;
    c->min_isr_kept = false;
    c->features_kept = false;
    c->version++;
    int64_t now = kiq_clock_mono_ns();
    c->next_rebalance_ns = now + c->rebalance_interval_ns;
    c->next_token_check_ns = now + c->token_check_interval_ns;
    for (size_t i = 0; i < kiq_metadata_image_broker_count(c->image); i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker_at(c->image, i);
        broker_slot_t *s = kiq_ctl_slot_of(c, rb->id, true);
        if (s) s->last_heartbeat_ns = now;
    }
    KIQ_INFO("controller %d: active in epoch %d at metadata offset %lld: %zu brokers, %zu topics", c->node_id, epoch,
             (long long)c->applied, kiq_metadata_image_broker_count(c->image),
             kiq_metadata_image_topic_count(c->image));
}

/* The senders and the timer of an activation, stopped without mu (they lock it). */
typedef struct retired {
    struct kiq_worker *timer;
    broker_slot_t *brokers;
    int nbrokers;
} retired_t;

static void retire_free(retired_t *r)
{
    kiq_worker_stop(r->timer);
    for (int i = 0; i < r->nbrokers; i++) {
        kiq_broker_channel_free(r->brokers[i].channel);
        for (int j = 0; j < r->brokers[i].nstops; j++) free(r->brokers[i].stops[j].topic);
        free(r->brokers[i].stops);
    }
    free(r->brokers);
}

/* Under mu: this node no longer decides. */
static retired_t deactivate(kiq_controller_t *c)
{
    retired_t r = {.timer = c->timer, .brokers = c->brokers, .nbrokers = c->nbrokers};
    if (c->active) KIQ_INFO("controller %d: no longer active (epoch %d)", c->node_id, c->epoch);
    c->active = false;
    c->timer = NULL;
    c->brokers = NULL;
    c->nbrokers = c->cap = 0;
    c->nimpaired = 0;
    return r;
}

/* Under mu: the image written as the quorum's snapshot at what it holds. */
static int write_snapshot(kiq_controller_t *c, kiq_raft_epoch_end_t *id)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_metadata_record_t *records;
    size_t n;
    kiq_metadata_image_records(c->image, &a, &records, &n);
    int rc = kiq_quorum_snapshot(c->quorum, c->applied, records, n, id);
    kiq_arena_reset(&a);
    if (rc != 0) KIQ_ERROR("controller %d: no metadata snapshot written: %s", c->node_id, kiq_error_get());
    return rc;
}

int kiq_controller_snapshot(kiq_controller_t *c, kiq_raft_epoch_end_t *id)
{
    kiq_raft_view_t v;
    kiq_quorum_view(c->quorum, &v);
    pthread_mutex_lock(&c->mu);
    int rc = catch_up(c, v.high_watermark);
    if (rc == 0 && c->applied <= 0) rc = kiq_error_set("nothing committed yet to put in a snapshot");
    if (rc == 0) rc = write_snapshot(c, id);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

bool kiq_controller_quorum_changed(kiq_controller_t *c)
{
    kiq_raft_view_t v;
    kiq_quorum_view(c->quorum, &v);
    retired_t retired = {0};
    bool start_timer = false;
    pthread_mutex_lock(&c->mu);
    if (!c->stopping) {
        catch_up(c, v.high_watermark);
        kiq_raft_epoch_end_t id;
        if (kiq_quorum_snapshot_due(c->quorum, c->applied)) write_snapshot(c, &id);
        bool leads = v.role == KIQ_RAFT_LEADER && (!c->active || c->epoch == v.epoch);
        /* active once its epoch's first entry is committed, so every
         * earlier one is in the image */
        if (leads && !c->active && v.high_watermark == v.log_end && c->applied == v.high_watermark) {
            activate(c, v.epoch);
            start_timer = true;
        } else if (!leads && c->active) {
            retired = deactivate(c);
        }
    }
    bool active = c->active;
    pthread_mutex_unlock(&c->mu);
    retire_free(&retired);
    if (start_timer) {
        kiq_worker_config_t wc = {.name = "controller", .round = timer_round, .ctx = c, .first_delay_ms = 0};
        struct kiq_worker *w = kiq_worker_start(&wc);
        pthread_mutex_lock(&c->mu);
        if (c->active && !c->timer) c->timer = w, w = NULL;
        pthread_mutex_unlock(&c->mu);
        kiq_worker_stop(w);
    }
    return active;
}

bool kiq_controller_wait_active(kiq_controller_t *c, int64_t timeout_ms)
{
    pthread_mutex_lock(&c->mu);
    int64_t deadline = kiq_clock_system_mono_ns() + timeout_ms * 1000000;
    while (!c->active && !c->stopping && kiq_cond_wait_until_system(&c->activated, &c->mu, deadline))
        ;
    bool active = c->active;
    pthread_mutex_unlock(&c->mu);
    return active;
}

bool kiq_controller_active(kiq_controller_t *c)
{
    pthread_mutex_lock(&c->mu);
    bool active = c->active;
    pthread_mutex_unlock(&c->mu);
    return active;
}

void kiq_controller_free(kiq_controller_t *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    retired_t r = deactivate(c);
    pthread_mutex_unlock(&c->mu);
    retire_free(&r);
    free(c->impaired);
    kiq_metadata_image_free(c->image);
    kiq_acl_published_destroy(&c->acls);
    pthread_cond_destroy(&c->activated);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void kiq_controller_describe(kiq_controller_t *c, kiq_arena_t *arena, kiq_controller_info_t *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->mu);
    out->metadata_offset = kiq_metadata_image_offset(c->image);
    size_t nb = kiq_metadata_image_broker_count(c->image), nt = kiq_metadata_image_topic_count(c->image);
    out->brokers = kiq_arena_calloc(arena, nb ? nb : 1, sizeof *out->brokers);
    for (size_t i = 0; i < nb; i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker_at(c->image, i);
        kiq_controller_broker_info_t *bi = &out->brokers[out->nbrokers++];
        bi->id = rb->id;
        bi->epoch = rb->epoch;
        bi->fenced = rb->fenced;
        const kiq_broker_endpoint_t *e = kiq_ctl_endpoint(c, rb, NULL);
        bi->host = e ? kiq_arena_strndup(arena, e->host, strlen(e->host)) : "";
        bi->port = e ? e->port : -1;
    }
    out->topics = kiq_arena_calloc(arena, nt ? nt : 1, sizeof *out->topics);
    for (size_t t = 0; t < nt; t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        kiq_controller_topic_info_t *to = &out->topics[out->ntopics++];
        to->name = kiq_arena_strndup(arena, ti->name, strlen(ti->name));
        to->npartitions = ti->npartitions;
        to->partitions = kiq_arena_calloc(arena, (size_t)(ti->npartitions ? ti->npartitions : 1), sizeof *to->partitions);
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            kiq_controller_partition_info_t *pi = &to->partitions[p];
            pi->leader = pr->leader;
            pi->leader_epoch = pr->leader_epoch;
            pi->partition_epoch = pr->partition_epoch;
            pi->nreplicas = pr->nreplicas;
            pi->nisr = pr->nisr;
            pi->replicas = kiq_ctl_copy_ids(arena, pr->replicas, pr->nreplicas);
            pi->isr = kiq_ctl_copy_ids(arena, pr->isr, pr->nisr);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

uint64_t kiq_controller_unclean_elections(kiq_controller_t *c)
{
    return atomic_load_explicit(&c->unclean_elections, memory_order_relaxed);
}

uint64_t kiq_controller_operations(kiq_controller_t *c, uint64_t *records)
{
    *records = atomic_load_explicit(&c->records, memory_order_relaxed);
    return atomic_load_explicit(&c->operations, memory_order_relaxed);
}
