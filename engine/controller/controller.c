/* The controller; see controller.h. Decisions follow Kafka's KRaft
 * controller: brokers are unfenced while they heartbeat, a fenced broker
 * leaves every ISR and its leaderships move with a new leader epoch, a
 * broker coming back leads the partitions left without a leader, and an
 * ISR changes only through its leader's AlterPartition at the current
 * leader and partition epochs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "controller/broker_channel.h"
#include "controller/config_changes.h"
#include "controller/controller.h"
#include "controller/metadata_image.h"
#include "controller/metadata_log.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/uuid.h"
#include "core/worker.h"
#include "log/log_names.h"
#include "proto/errors.h"

#define CONTROLLER_EPOCH 1
#define TIMER_MS 100

/* A partition a broker must stop and delete (its topic was deleted). */
typedef struct stop_entry {
    char *topic;
    int32_t partition;
} stop_entry_t;

/* What the controller keeps per registered broker besides the image. */
typedef struct broker_slot {
    int32_t id;
    int64_t last_heartbeat_ns;
    /* Whether its current incarnation registered or heartbeated since this
     * controller started (a restarted controller's slots start with a
     * session's grace but nothing heard). */
    bool heard;
    kiq_broker_channel_t *channel;
    /* The store offset its channel's round in flight was built at, and the
     * highest one it took: a partition's new leader is named to the brokers
     * (and so to clients) only once it took its LeaderAndIsr, else a client
     * sends it a retry before it leads, gets NOT_LEADER and (librdkafka
     * < 2.3) takes the next batch's OUT_OF_ORDER_SEQUENCE as fatal. */
    int64_t building_offset, acked_offset;
    stop_entry_t *stops;
    int nstops, cap, stops_in_flight;
} broker_slot_t;

/* A replica its broker assigned to the LOST directory. */
typedef struct impaired_replica {
    kiq_uuid_t topic_id;
    int32_t partition;
    int32_t broker;
} impaired_replica_t;

struct kiq_controller {
    int32_t node_id;
    char control_listener[32];
    int64_t session_timeout_ns;
    /* the hosting broker's config, from new to free: its dynamic values
     * (unclean.leader.election.enable) are read where they are used */
    const kiq_config_t *cfg;
    int64_t rebalance_interval_ns; /* 0: auto.leader.rebalance.enable off */
    int64_t next_rebalance_ns;
    int32_t default_partitions;
    int16_t default_replication_factor;
    atomic_uint_fast64_t unclean_elections; /* leaders elected from outside the ISR, for metrics */
    pthread_mutex_t mu; /* guards everything below */
    kiq_metadata_store_t *store;
    kiq_metadata_image_t *image;
    broker_slot_t *brokers;
    int nbrokers, cap;
    impaired_replica_t *impaired;
    int nimpaired, impaired_cap;
    uint64_t version; /* moves with every change the brokers must hear of */
    struct kiq_worker *timer; /* fences silent brokers, rebalances leaders; from start to free */
    bool stopping;
};

/* ---- records ---- */

/* A growing list of records for one commit, their arrays in an arena. */
typedef struct batch {
    kiq_metadata_record_t *r;
    size_t n, cap;
    kiq_arena_t *a;
} batch_t;

static kiq_metadata_record_t *add_record(batch_t *b, int16_t type)
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

static int32_t *copy_ids(kiq_arena_t *a, const int32_t *ids, int32_t n)
{
    int32_t *out = kiq_arena_calloc(a, (size_t)(n > 0 ? n : 1), sizeof *out);
    if (n > 0) memcpy(out, ids, (size_t)n * sizeof *out);
    return out;
}

static bool has_id(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

/* Under mu: a round for every broker. */
static void tell_brokers(kiq_controller_t *c)
{
    c->version++;
    for (int i = 0; i < c->nbrokers; i++)
        if (c->brokers[i].channel) kiq_broker_channel_poke(c->brokers[i].channel, c->version);
}

/* Under mu: makes the records durable, applies them, tells the brokers. */
static int commit(kiq_controller_t *c, batch_t *b)
{
    if (b->n == 0) return 0;
    int64_t last;
    if (kiq_metadata_store_append(c->store, b->r, b->n, &last) != 0) {
        KIQ_ERROR("controller: cannot write the metadata log: %s", kiq_error_get());
        return -1;
    }
    for (size_t i = 0; i < b->n; i++) {
        int64_t offset = last - (int64_t)(b->n - 1 - i);
        if (kiq_metadata_image_apply(c->image, offset, &b->r[i]) != 0)
            KIQ_ERROR("controller: %s at offset %lld does not apply: %s", kiq_metadata_record_name(b->r[i].type),
                      (long long)offset, kiq_error_get());
    }
    tell_brokers(c);
    b->n = 0;
    return 0;
}

static broker_slot_t *slot_of(kiq_controller_t *c, int32_t id, bool create)
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

/* Whether the registration names one of the slot's log directories
 * (only one live process can hold a directory: it is a restart). A
 * registration without directory ids (v0-1) never does. */
/* Whether the registration names a log directory the registered broker
 * holds (from its RegisterBrokerRecord, so a restarted controller knows
 * them too): then it is that broker restarted, not a second process. */
static bool shares_dir(const kiq_broker_registration_t *rb, const kiq_broker_registration_request_t *req)
{
    for (int32_t i = 0; i < rb->nlog_dirs; i++)
        for (int32_t j = 0; j < req->log_dirs_n; j++)
            if (memcmp(&rb->log_dirs[i], &req->log_dirs[j], sizeof rb->log_dirs[i]) == 0) return true;
    return false;
}

static size_t live_brokers(kiq_controller_t *c, int32_t except, int32_t *out, size_t max)
{
    int32_t all[256];
    size_t n = kiq_metadata_image_live_brokers(c->image, all, 256), k = 0;
    for (size_t i = 0; i < n && i < 256 && k < max; i++)
        if (all[i] != except) out[k++] = all[i];
    return k;
}

/* The endpoint of a registration by listener name (NULL: the first that
 * is not the control plane's). */
static const kiq_broker_endpoint_t *endpoint(const kiq_controller_t *c, const kiq_broker_registration_t *b,
                                             const char *name)
{
    for (int32_t i = 0; i < b->nendpoints; i++) {
        const kiq_broker_endpoint_t *e = &b->endpoints[i];
        if (name ? strcmp(e->name, name) == 0 : strcmp(e->name, c->control_listener) != 0) return e;
    }
    return NULL;
}

const kiq_uuid_t KIQ_DIR_LOST = {.b = {[15] = 1}};

/* Under mu. */
static bool is_impaired(const kiq_controller_t *c, const kiq_uuid_t *topic_id, int32_t p, int32_t broker)
{
    for (int i = 0; i < c->nimpaired; i++)
        if (c->impaired[i].partition == p && c->impaired[i].broker == broker &&
            memcmp(c->impaired[i].topic_id.b, topic_id->b, 16) == 0)
            return true;
    return false;
}

/* Under mu. */
static void forget_impaired(kiq_controller_t *c, int32_t broker)
{
    int n = 0;
    for (int i = 0; i < c->nimpaired; i++)
        if (c->impaired[i].broker != broker) c->impaired[n++] = c->impaired[i];
    c->nimpaired = n;
}

/* Under mu: marks or clears one replica; false when out of memory. */
static bool set_impaired(kiq_controller_t *c, const kiq_uuid_t *topic_id, int32_t p, int32_t broker, bool impaired)
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
        if (!is_impaired(c, &ti->id, p, live[i])) out[n++] = live[i];
    return n;
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

/* Under mu: a record moving broker id out of the way on ti's partition p:
 * it leaves the ISR (unless it is the last member) and a leadership goes
 * to another eligible ISR member, or, with none, to nobody (offline)
 * unless unclean election is on, or stays when keep_alone. */
static void move_off(kiq_controller_t *c, batch_t *b, const kiq_topic_image_t *ti, int32_t p, int32_t id,
                     const int32_t *live, size_t nlive, bool keep_alone)
{
    const kiq_partition_registration_t *pr = &ti->partitions[p];
    if (!has_id(pr->replicas, pr->nreplicas, id)) return;
    bool in_isr = has_id(pr->isr, pr->nisr, id);
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
    kiq_metadata_record_t *r = add_record(b, KIQ_MR_PARTITION_CHANGE);
    kiq_partition_change_record_t *ch = &r->m.partition_change;
    ch->topic_id = ti->id;
    ch->partition_id = p;
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

/* Records moving broker id out of the way on every partition. */
static void leave_partitions(kiq_controller_t *c, batch_t *b, int32_t id)
{
    int32_t live[256];
    size_t nlive = live_brokers(c, id, live, 256);
    for (size_t t = 0; t < kiq_metadata_image_topic_count(c->image); t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) move_off(c, b, ti, p, id, live, nlive, false);
    }
}

/* Records giving a leader to partitions without one, now that more
 * brokers are live. */
static void elect_offline(kiq_controller_t *c, batch_t *b)
{
    int32_t live[256];
    size_t nlive = live_brokers(c, -1, live, 256);
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
            kiq_metadata_record_t *r = add_record(b, KIQ_MR_PARTITION_CHANGE);
            kiq_partition_change_record_t *ch = &r->m.partition_change;
            ch->topic_id = ti->id;
            ch->partition_id = p;
            ch->leader = leader;
            if (unclean) {
                atomic_fetch_add_explicit(&c->unclean_elections, 1, memory_order_relaxed);
                ch->isr = copy_ids(b->a, &leader, 1);
                ch->isr_n = 1;
                ch->leader_recovery_state = KIQ_LEADER_RECOVERING;
            }
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
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, leader);
        if (!rb || rb->fenced || !has_id(pr->isr, pr->nisr, leader) || is_impaired(c, &ti->id, p, leader))
            return KIQ_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
    } else {
        if (pr->leader != KIQ_NO_LEADER) return KIQ_ERR_ELECTION_NOT_NEEDED;
        int32_t live[256], cand[256];
        size_t nlive = live_brokers(c, -1, live, 256);
        leader = kiq_metadata_image_elect_leader(pr, cand, eligible(c, ti, p, live, nlive, cand), true, &out_of_sync);
        if (leader == KIQ_NO_LEADER) return KIQ_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
    }
    kiq_metadata_record_t *r = add_record(b, KIQ_MR_PARTITION_CHANGE);
    kiq_partition_change_record_t *ch = &r->m.partition_change;
    ch->topic_id = ti->id;
    ch->partition_id = p;
    ch->leader = leader;
    if (out_of_sync) {
        atomic_fetch_add_explicit(&c->unclean_elections, 1, memory_order_relaxed);
        ch->isr = copy_ids(b->a, &leader, 1);
        ch->isr_n = 1;
        ch->leader_recovery_state = KIQ_LEADER_RECOVERING;
    }
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
    int rc = commit(c, &b) == 0 ? moved : -1;
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
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
    if (commit(c, &b) != 0) resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

/* ---- what the brokers are sent ---- */

static kiq_str_t astr(kiq_arena_t *a, const char *s)
{
    size_t n = strlen(s);
    return (kiq_str_t){kiq_arena_strndup(a, s, n), (int32_t)n};
}

/* Under mu: the leader the brokers are told of: none until it took the
 * record that made it leader. */
static int32_t announced_leader(kiq_controller_t *c, const kiq_partition_registration_t *pr)
{
    if (pr->leader < 0 || pr->leader_offset < 0) return pr->leader;
    const broker_slot_t *l = slot_of(c, pr->leader, false);
    return l && l->acked_offset >= pr->leader_offset ? pr->leader : KIQ_NO_LEADER;
}

/* Under mu: every partition's state for UpdateMetadata, and those with a
 * replica on broker for LeaderAndIsr. */
static void build_partition_states(kiq_controller_t *c, int32_t broker, kiq_arena_t *a,
                                   kiq_update_metadata_request_t *um, kiq_leader_and_isr_request_t *la)
{
    size_t ntopics = kiq_metadata_image_topic_count(c->image);
    um->topic_states = kiq_arena_calloc(a, ntopics ? ntopics : 1, sizeof *um->topic_states);
    la->topic_states = kiq_arena_calloc(a, ntopics ? ntopics : 1, sizeof *la->topic_states);
    for (size_t t = 0; t < ntopics; t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        kiq_update_metadata_request_topic_states_t *ut = &um->topic_states[um->topic_states_n++];
        kiq_update_metadata_request_topic_states_init(ut);
        ut->topic_name = astr(a, ti->name);
        ut->topic_id = ti->id;
        ut->partition_states = kiq_arena_calloc(a, (size_t)(ti->npartitions ? ti->npartitions : 1),
                                                sizeof *ut->partition_states);
        kiq_leader_and_isr_request_topic_states_t *lt = NULL;
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            kiq_update_metadata_request_topic_states_partition_states_t *up = &ut->partition_states[ut->partition_states_n++];
            kiq_update_metadata_request_topic_states_partition_states_init(up);
            up->partition_index = p;
            up->controller_epoch = CONTROLLER_EPOCH;
            up->leader = announced_leader(c, pr);
            up->leader_epoch = pr->leader_epoch;
            up->isr = copy_ids(a, pr->isr, pr->nisr);
            up->isr_n = pr->nisr;
            up->partition_epoch = pr->partition_epoch;
            up->replicas = copy_ids(a, pr->replicas, pr->nreplicas);
            up->replicas_n = pr->nreplicas;
            up->offline_replicas = kiq_arena_calloc(a, (size_t)pr->nreplicas + 1, sizeof *up->offline_replicas);
            for (int32_t i = 0; i < pr->nreplicas; i++) {
                const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, pr->replicas[i]);
                if (!rb || rb->fenced) up->offline_replicas[up->offline_replicas_n++] = pr->replicas[i];
            }
            if (!has_id(pr->replicas, pr->nreplicas, broker)) continue;
            if (!lt) {
                lt = &la->topic_states[la->topic_states_n++];
                kiq_leader_and_isr_request_topic_states_init(lt);
                lt->topic_name = ut->topic_name;
                lt->topic_id = ti->id;
                lt->partition_states = kiq_arena_calloc(a, (size_t)ti->npartitions, sizeof *lt->partition_states);
            }
            kiq_leader_and_isr_request_topic_states_partition_states_t *lp = &lt->partition_states[lt->partition_states_n++];
            kiq_leader_and_isr_request_topic_states_partition_states_init(lp);
            lp->partition_index = p;
            lp->controller_epoch = CONTROLLER_EPOCH;
            lp->leader = pr->leader;
            lp->leader_epoch = pr->leader_epoch;
            lp->isr = up->isr;
            lp->isr_n = pr->nisr;
            lp->partition_epoch = pr->partition_epoch;
            lp->replicas = up->replicas;
            lp->replicas_n = pr->nreplicas;
            lp->leader_recovery_state = pr->leader_recovery_state;
        }
    }
}

/* Under mu: the live brokers with their endpoints, and each one's data
 * endpoint for followers to find their leaders. */
static void build_live_brokers(kiq_controller_t *c, kiq_arena_t *a, kiq_update_metadata_request_t *um,
                               kiq_leader_and_isr_request_t *la)
{
    size_t nb = kiq_metadata_image_broker_count(c->image);
    um->live_brokers = kiq_arena_calloc(a, nb ? nb : 1, sizeof *um->live_brokers);
    la->live_leaders = kiq_arena_calloc(a, nb ? nb : 1, sizeof *la->live_leaders);
    for (size_t i = 0; i < nb; i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker_at(c->image, i);
        if (rb->fenced) continue;
        kiq_update_metadata_request_live_brokers_t *lb = &um->live_brokers[um->live_brokers_n++];
        kiq_update_metadata_request_live_brokers_init(lb);
        lb->id = rb->id;
        lb->rack = rb->rack ? astr(a, rb->rack) : KIQ_STR_NULL;
        lb->endpoints = kiq_arena_calloc(a, (size_t)(rb->nendpoints ? rb->nendpoints : 1), sizeof *lb->endpoints);
        for (int32_t e = 0; e < rb->nendpoints; e++) {
            kiq_update_metadata_request_live_brokers_endpoints_t *ep = &lb->endpoints[lb->endpoints_n++];
            kiq_update_metadata_request_live_brokers_endpoints_init(ep);
            ep->port = rb->endpoints[e].port;
            ep->host = astr(a, rb->endpoints[e].host);
            ep->listener = astr(a, rb->endpoints[e].name);
            ep->security_protocol = rb->endpoints[e].security_protocol;
        }
        /* every live broker, leaders or not: a follower finds its leader here */
        const kiq_broker_endpoint_t *data = endpoint(c, rb, NULL);
        if (data) {
            kiq_leader_and_isr_request_live_leaders_t *ll = &la->live_leaders[la->live_leaders_n++];
            kiq_leader_and_isr_request_live_leaders_init(ll);
            ll->broker_id = rb->id;
            ll->host_name = astr(a, data->host);
            ll->port = data->port;
        }
    }
}

/* Under mu: the dynamic configs broker acts on: the cluster-wide ones,
 * its own, the topics'. */
static void build_configs(kiq_controller_t *c, int32_t broker, kiq_arena_t *a, kiq_update_metadata_request_t *um)
{
    size_t ncfg = kiq_metadata_image_config_count(c->image);
    char self[16];
    snprintf(self, sizeof self, "%d", broker);
    um->kafkaiq_configs = kiq_arena_calloc(a, ncfg ? ncfg : 1, sizeof *um->kafkaiq_configs);
    for (size_t i = 0; i < ncfg; i++) {
        const kiq_config_entry_t *e = kiq_metadata_image_config_at(c->image, i);
        if (e->resource_type == KIQ_CONFIG_RESOURCE_BROKER && e->resource_name[0] && strcmp(e->resource_name, self) != 0)
            continue;
        kiq_update_metadata_request_kafkaiq_configs_t *o = &um->kafkaiq_configs[um->kafkaiq_configs_n++];
        kiq_update_metadata_request_kafkaiq_configs_init(o);
        o->resource_type = e->resource_type;
        o->resource_name = astr(a, e->resource_name);
        o->name = astr(a, e->name);
        o->value = astr(a, e->value);
    }
}

/* Under mu: the StopReplica deleting the partitions s still has to drop. */
static void build_stops(kiq_controller_t *c, broker_slot_t *s, int64_t broker_epoch, kiq_arena_t *a,
                        kiq_stop_replica_request_t *sr)
{
    sr->controller_id = c->node_id;
    sr->controller_epoch = CONTROLLER_EPOCH;
    sr->broker_epoch = broker_epoch;
    sr->topic_states = kiq_arena_calloc(a, (size_t)s->nstops, sizeof *sr->topic_states);
    for (int i = 0; i < s->nstops; i++) {
        kiq_stop_replica_request_topic_states_t *ts = &sr->topic_states[sr->topic_states_n++];
        kiq_stop_replica_request_topic_states_init(ts);
        ts->topic_name = astr(a, s->stops[i].topic);
        ts->partition_states = kiq_arena_calloc(a, 1, sizeof *ts->partition_states);
        ts->partition_states_n = 1;
        kiq_stop_replica_request_topic_states_partition_states_init(&ts->partition_states[0]);
        ts->partition_states[0].partition_index = s->stops[i].partition;
        ts->partition_states[0].leader_epoch = -2; /* deletion: whatever epoch */
        ts->partition_states[0].delete_partition = true;
    }
    s->stops_in_flight = s->nstops;
}

/* The sender's round for broker (broker_channel.h): the whole current
 * state, built under mu. */
static uint64_t build_round(void *ctx, int32_t broker, kiq_arena_t *a, kiq_channel_round_t *out)
{
    kiq_controller_t *c = ctx;
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *target = kiq_metadata_image_broker(c->image, broker);
    int64_t broker_epoch = target ? target->epoch : -1;
    kiq_update_metadata_request_t *um = &out->update_metadata;
    um->controller_id = c->node_id;
    um->controller_epoch = CONTROLLER_EPOCH;
    um->broker_epoch = broker_epoch;
    kiq_leader_and_isr_request_t *la = &out->leader_and_isr;
    la->controller_id = c->node_id;
    la->controller_epoch = CONTROLLER_EPOCH;
    la->broker_epoch = broker_epoch;
    build_partition_states(c, broker, a, um, la);
    build_live_brokers(c, a, um, la);
    build_configs(c, broker, a, um);
    broker_slot_t *s = slot_of(c, broker, false);
    if (s) s->building_offset = kiq_metadata_image_offset(c->image);
    out->stop = s && s->nstops > 0;
    if (out->stop) build_stops(c, s, broker_epoch, a, &out->stop_replica);
    uint64_t version = c->version;
    pthread_mutex_unlock(&c->mu);
    return version;
}

/* Under mu: whether the broker leads a partition it took the leadership of
 * after `from` and up to `to`. */
static bool took_leadership(kiq_controller_t *c, int32_t broker, int64_t from, int64_t to)
{
    size_t ntopics = kiq_metadata_image_topic_count(c->image);
    for (size_t t = 0; t < ntopics; t++) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic_at(c->image, t);
        for (int32_t p = 0; p < ti->npartitions; p++) {
            const kiq_partition_registration_t *pr = &ti->partitions[p];
            if (pr->leader == broker && pr->leader_offset > from && pr->leader_offset <= to) return true;
        }
    }
    return false;
}

static void round_sent(void *ctx, int32_t broker, uint64_t version, bool stop_sent)
{
    kiq_controller_t *c = ctx;
    (void)version;
    pthread_mutex_lock(&c->mu);
    broker_slot_t *s = slot_of(c, broker, false);
    if (s && s->building_offset > s->acked_offset) {
        int64_t from = s->acked_offset;
        s->acked_offset = s->building_offset;
        /* its new leaderships can be named now: a round for everyone */
        if (took_leadership(c, broker, from, s->acked_offset)) tell_brokers(c);
    }
    if (stop_sent && s && s->stops_in_flight > 0) {
        for (int i = 0; i < s->stops_in_flight; i++) free(s->stops[i].topic);
        memmove(s->stops, s->stops + s->stops_in_flight, (size_t)(s->nstops - s->stops_in_flight) * sizeof *s->stops);
        s->nstops -= s->stops_in_flight;
        s->stops_in_flight = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

/* Under mu: the sender to a broker, made or pointed at its (new) address. */
static void connect_channel(kiq_controller_t *c, broker_slot_t *s, bool restarted)
{
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, s->id);
    const kiq_broker_endpoint_t *e = rb ? endpoint(c, rb, c->control_listener) : NULL;
    if (!e) {
        KIQ_WARN("controller: broker %d registered no %s listener; it cannot be told anything", s->id,
                 c->control_listener);
        return;
    }
    if (!s->channel) {
        kiq_channel_owner_t owner = {.ctx = c, .build = build_round, .sent = round_sent};
        s->channel = kiq_broker_channel_new(s->id, e->host, e->port, &owner);
        if (!s->channel) {
            KIQ_ERROR("controller: %s", kiq_error_get());
            return;
        }
    } else if (restarted) {
        kiq_broker_channel_reset(s->channel, e->host, e->port);
    }
    if (restarted) s->building_offset = s->acked_offset = -1;
    kiq_broker_channel_poke(s->channel, c->version ? c->version : 1);
}

/* ---- handlers ---- */

void kiq_controller_register_broker(kiq_controller_t *c, const kiq_broker_registration_request_t *req,
                                    kiq_broker_registration_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *old = kiq_metadata_image_broker(c->image, req->broker_id);
    bool same = old && memcmp(&old->incarnation_id, &req->incarnation_id, sizeof old->incarnation_id) == 0;
    broker_slot_t *held = old && !same && !old->fenced ? slot_of(c, req->broker_id, false) : NULL;
    if (held && held->heard && kiq_clock_mono_ns() - held->last_heartbeat_ns <= c->session_timeout_ns &&
        !shares_dir(old, req)) {
        /* Its registered incarnation heartbeats and holds other
         * directories: a second process with this id, not a restart
         * (Kafka refuses it the same way while the session lasts). */
        KIQ_WARN_LIMITED("controller: a second registration of broker %d refused: the registered one heartbeats "
                         "and holds other log directories", req->broker_id);
        resp->error_code = KIQ_ERR_DUPLICATE_BROKER_REGISTRATION;
        goto out;
    }
    if (same) {
        resp->broker_epoch = old->epoch;
    } else {
        forget_impaired(c, req->broker_id); /* a new incarnation says again what it cannot trust */
        if (old) leave_partitions(c, &b, req->broker_id); /* a restart: its log may be behind its followers' */
        kiq_metadata_record_t *r = add_record(&b, KIQ_MR_REGISTER_BROKER);
        kiq_register_broker_record_t *rr = &r->m.register_broker;
        rr->broker_id = req->broker_id;
        rr->incarnation_id = req->incarnation_id;
        rr->broker_epoch = kiq_metadata_image_offset(c->image) + (int64_t)b.n;
        rr->end_points_n = req->listeners_n;
        rr->end_points = kiq_arena_calloc(&a, (size_t)(req->listeners_n > 0 ? req->listeners_n : 1), sizeof *rr->end_points);
        for (int32_t i = 0; i < req->listeners_n; i++) {
            kiq_register_broker_record_end_points_init(&rr->end_points[i]);
            rr->end_points[i].name = req->listeners[i].name;
            rr->end_points[i].host = req->listeners[i].host;
            rr->end_points[i].port = req->listeners[i].port;
            rr->end_points[i].security_protocol = req->listeners[i].security_protocol;
        }
        rr->rack = req->rack;
        rr->log_dirs = req->log_dirs;
        rr->log_dirs_n = req->log_dirs_n;
        rr->fenced = false;
        int64_t epoch = rr->broker_epoch;
        if (commit(c, &b) != 0) {
            resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            goto out;
        }
        elect_offline(c, &b);
        commit(c, &b);
        resp->broker_epoch = epoch;
        KIQ_INFO("controller: broker %d registered (epoch %lld)%s", req->broker_id, (long long)epoch,
                 old ? ", restarted" : "");
    }
    broker_slot_t *s = slot_of(c, req->broker_id, true);
    if (!s) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    s->last_heartbeat_ns = kiq_clock_mono_ns();
    s->heard = true;
    connect_channel(c, s, true); /* a registering broker (re)started: it holds no state yet */
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

void kiq_controller_heartbeat(kiq_controller_t *c, const kiq_broker_heartbeat_request_t *req,
                              kiq_broker_heartbeat_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    broker_slot_t *s = slot_of(c, req->broker_id, false);
    if (!rb || rb->epoch != req->broker_epoch || !s) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
    } else {
        s->last_heartbeat_ns = kiq_clock_mono_ns();
        s->heard = true;
        if (!s->channel) connect_channel(c, s, false); /* first word since the controller started */
        if (req->want_shut_down) {
            /* controlled shutdown: its leaderships move now, not a session
             * timeout after it is gone */
            if (!rb->fenced) {
                kiq_metadata_record_t *r = add_record(&b, KIQ_MR_FENCE_BROKER);
                r->m.fence_broker.id = rb->id;
                r->m.fence_broker.epoch = rb->epoch;
                if (commit(c, &b) == 0) {
                    leave_partitions(c, &b, rb->id);
                    commit(c, &b);
                    KIQ_INFO("controller: broker %d shut down in a controlled way", rb->id);
                }
            }
            resp->is_fenced = true;
            resp->should_shut_down = true;
        } else if (rb->fenced && !req->want_fence) {
            kiq_metadata_record_t *r = add_record(&b, KIQ_MR_UNFENCE_BROKER);
            r->m.unfence_broker.id = rb->id;
            r->m.unfence_broker.epoch = rb->epoch;
            if (commit(c, &b) == 0) {
                KIQ_INFO("controller: broker %d is back", req->broker_id);
                elect_offline(c, &b);
                commit(c, &b);
            }
        }
        /* what the image now says (the schema's default is fenced) */
        const kiq_broker_registration_t *now = kiq_metadata_image_broker(c->image, req->broker_id);
        resp->is_fenced = req->want_shut_down || req->want_fence || !now || now->fenced;
        resp->is_caught_up = true;
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

void kiq_controller_allocate_producer_ids(kiq_controller_t *c, const kiq_allocate_producer_ids_request_t *req,
                                          kiq_allocate_producer_ids_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    resp->producer_id_start = -1;
    resp->producer_id_len = 0;
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    if (!rb || rb->epoch != req->broker_epoch) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
    } else {
        int64_t start = kiq_metadata_image_next_producer_id(c->image);
        kiq_metadata_record_t *r = add_record(&b, KIQ_MR_PRODUCER_IDS);
        r->m.producer_ids.broker_id = req->broker_id;
        r->m.producer_ids.broker_epoch = req->broker_epoch;
        r->m.producer_ids.next_producer_id = start + KIQ_PRODUCER_ID_BLOCK;
        if (commit(c, &b) == 0) {
            resp->error_code = KIQ_ERR_NONE;
            resp->producer_id_start = start;
            resp->producer_id_len = KIQ_PRODUCER_ID_BLOCK;
            KIQ_DEBUG("controller: producer ids %lld..%lld to broker %d", (long long)start,
                      (long long)(start + KIQ_PRODUCER_ID_BLOCK - 1), req->broker_id);
        } else {
            resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

static int16_t check_alter(kiq_controller_t *c, const kiq_alter_partition_request_t *req, const kiq_uuid_t *topic_id,
                           const kiq_partition_registration_t *pr, const kiq_alter_partition_request_topics_partitions_t *in)
{
    if (req->broker_id != pr->leader) return KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    if (in->leader_epoch != pr->leader_epoch) return KIQ_ERR_FENCED_LEADER_EPOCH;
    if (in->partition_epoch != pr->partition_epoch) return KIQ_ERR_INVALID_UPDATE_VERSION;
    if (in->new_isr_n <= 0 || !has_id(in->new_isr, in->new_isr_n, pr->leader)) return KIQ_ERR_INVALID_REQUEST;
    for (int32_t i = 0; i < in->new_isr_n; i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, in->new_isr[i]);
        if (!has_id(pr->replicas, pr->nreplicas, in->new_isr[i]) || !rb || rb->fenced)
            return KIQ_ERR_INELIGIBLE_REPLICA;
        if (!has_id(pr->isr, pr->nisr, in->new_isr[i]) && is_impaired(c, topic_id, in->partition_index, in->new_isr[i]))
            return KIQ_ERR_INELIGIBLE_REPLICA;
    }
    return KIQ_ERR_NONE;
}

void kiq_controller_alter_partition(kiq_controller_t *c, kiq_arena_t *arena, int16_t version,
                                    const kiq_alter_partition_request_t *req, kiq_alter_partition_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    if (!rb || (req->broker_epoch >= 0 && rb->epoch != req->broker_epoch)) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
        goto out;
    }
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    const kiq_topic_image_t **tis = kiq_arena_calloc(&a, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *tis);
    for (int32_t t = 0; t < resp->topics_n; t++) {
        const kiq_alter_partition_request_topics_t *tin = &req->topics[t];
        kiq_alter_partition_response_topics_t *tout = &resp->topics[t];
        kiq_alter_partition_response_topics_init(tout);
        tout->topic_name = tin->topic_name;
        tout->topic_id = tin->topic_id;
        tis[t] = version >= 2 ? kiq_metadata_image_topic_by_id(c->image, &tin->topic_id)
                 : tin->topic_name.p ? kiq_metadata_image_topic(c->image, tin->topic_name.p, (size_t)tin->topic_name.len)
                                     : NULL;
        tout->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
        tout->partitions = kiq_arena_calloc(arena, (size_t)(tout->partitions_n ? tout->partitions_n : 1),
                                            sizeof *tout->partitions);
        for (int32_t p = 0; p < tout->partitions_n; p++) {
            const kiq_alter_partition_request_topics_partitions_t *in = &tin->partitions[p];
            kiq_alter_partition_response_topics_partitions_t *po = &tout->partitions[p];
            kiq_alter_partition_response_topics_partitions_init(po);
            po->partition_index = in->partition_index;
            const kiq_partition_registration_t *pr =
                tis[t] && in->partition_index >= 0 && in->partition_index < tis[t]->npartitions
                    ? &tis[t]->partitions[in->partition_index]
                    : NULL;
            po->error_code = pr ? check_alter(c, req, &tis[t]->id, pr, in) : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            if (po->error_code) continue;
            kiq_metadata_record_t *r = add_record(&b, KIQ_MR_PARTITION_CHANGE);
            r->m.partition_change.topic_id = tis[t]->id;
            r->m.partition_change.partition_id = in->partition_index;
            r->m.partition_change.isr = copy_ids(&a, in->new_isr, in->new_isr_n);
            r->m.partition_change.isr_n = in->new_isr_n;
        }
    }
    if (commit(c, &b) != 0) {
        resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    /* answer with the state as it is now */
    for (int32_t t = 0; t < resp->topics_n; t++) {
        const kiq_topic_image_t *ti = tis[t] ? kiq_metadata_image_topic_by_id(c->image, &tis[t]->id) : NULL;
        for (int32_t p = 0; ti && p < resp->topics[t].partitions_n; p++) {
            kiq_alter_partition_response_topics_partitions_t *po = &resp->topics[t].partitions[p];
            if (po->partition_index < 0 || po->partition_index >= ti->npartitions) continue;
            const kiq_partition_registration_t *pr = &ti->partitions[po->partition_index];
            po->leader_id = pr->leader;
            po->leader_epoch = pr->leader_epoch;
            po->isr = copy_ids(arena, pr->isr, pr->nisr);
            po->isr_n = pr->nisr;
            po->partition_epoch = pr->partition_epoch;
            po->leader_recovery_state = pr->leader_recovery_state;
            if (!po->error_code)
                KIQ_INFO("controller: %s-%d: ISR now has %d of %d replicas (partition epoch %d)", ti->name,
                         po->partition_index, pr->nisr, pr->nreplicas, pr->partition_epoch);
        }
    }
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

void kiq_controller_assign_replicas_to_dirs(kiq_controller_t *c, kiq_arena_t *arena,
                                            const kiq_assign_replicas_to_dirs_request_t *req,
                                            kiq_assign_replicas_to_dirs_response_t *resp)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    const kiq_broker_registration_t *rb = kiq_metadata_image_broker(c->image, req->broker_id);
    if (!rb || rb->epoch != req->broker_epoch) {
        resp->error_code = KIQ_ERR_STALE_BROKER_EPOCH;
        goto out;
    }
    int32_t live[256];
    size_t nlive = live_brokers(c, req->broker_id, live, 256);
    resp->directories_n = req->directories_n > 0 ? req->directories_n : 0;
    resp->directories = kiq_arena_calloc(arena, (size_t)resp->directories_n + 1, sizeof *resp->directories);
    for (int32_t d = 0; d < resp->directories_n; d++) {
        const kiq_assign_replicas_to_dirs_request_directories_t *din = &req->directories[d];
        kiq_assign_replicas_to_dirs_response_directories_t *dout = &resp->directories[d];
        kiq_assign_replicas_to_dirs_response_directories_init(dout);
        dout->id = din->id;
        bool lost = memcmp(din->id.b, KIQ_DIR_LOST.b, 16) == 0;
        dout->topics_n = din->topics_n > 0 ? din->topics_n : 0;
        dout->topics = kiq_arena_calloc(arena, (size_t)dout->topics_n + 1, sizeof *dout->topics);
        for (int32_t t = 0; t < dout->topics_n; t++) {
            const kiq_assign_replicas_to_dirs_request_directories_topics_t *tin = &din->topics[t];
            kiq_assign_replicas_to_dirs_response_directories_topics_t *tout = &dout->topics[t];
            kiq_assign_replicas_to_dirs_response_directories_topics_init(tout);
            tout->topic_id = tin->topic_id;
            const kiq_topic_image_t *ti = kiq_metadata_image_topic_by_id(c->image, &tin->topic_id);
            tout->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
            tout->partitions = kiq_arena_calloc(arena, (size_t)tout->partitions_n + 1, sizeof *tout->partitions);
            for (int32_t i = 0; i < tout->partitions_n; i++) {
                int32_t p = tin->partitions[i].partition_index;
                kiq_assign_replicas_to_dirs_response_directories_topics_partitions_t *po = &tout->partitions[i];
                kiq_assign_replicas_to_dirs_response_directories_topics_partitions_init(po);
                po->partition_index = p;
                if (!ti) {
                    po->error_code = KIQ_ERR_UNKNOWN_TOPIC_ID;
                    continue;
                }
                if (p < 0 || p >= ti->npartitions || !has_id(ti->partitions[p].replicas, ti->partitions[p].nreplicas,
                                                             req->broker_id)) {
                    po->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
                    continue;
                }
                bool was = is_impaired(c, &ti->id, p, req->broker_id);
                if (!set_impaired(c, &ti->id, p, req->broker_id, lost)) {
                    po->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
                    continue;
                }
                if (lost != was)
                    KIQ_INFO("controller: %s-%d: broker %d's replica %s", ti->name, p, req->broker_id,
                             lost ? "is impaired (LOST directory)" : "is back in a directory");
                if (lost) move_off(c, &b, ti, p, req->broker_id, live, nlive, true);
            }
        }
    }
    if (commit(c, &b) != 0) resp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
}

int kiq_controller_create_topic(kiq_controller_t *c, kiq_str_t name, int32_t partitions, int16_t replication_factor,
                                const kiq_topic_configs_t *configs, bool validate_only)
{
    const char *why;
    if (!kiq_topic_name_valid(name, &why)) return kiq_error_set("%s", why), KIQ_ERR_INVALID_TOPIC_EXCEPTION;
    if (partitions == -1) partitions = c->default_partitions;
    if (replication_factor == -1) replication_factor = c->default_replication_factor;
    if (partitions <= 0) return kiq_error_set("partitions must be positive"), KIQ_ERR_INVALID_PARTITIONS;
    if (replication_factor <= 0 || replication_factor > KIQ_MAX_REPLICAS)
        return kiq_error_set("replication factor must be 1-%d", KIQ_MAX_REPLICAS),
               KIQ_ERR_INVALID_REPLICATION_FACTOR;
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    if (kiq_metadata_image_topic(c->image, name.p, (size_t)name.len)) {
        rc = KIQ_ERR_TOPIC_ALREADY_EXISTS;
        kiq_error_set("Topic '%.*s' already exists.", (int)name.len, name.p);
        goto out;
    }
    int32_t *assign = kiq_arena_calloc(&a, (size_t)partitions * (size_t)replication_factor, sizeof *assign);
    rc = kiq_metadata_image_assign_replicas(c->image, 0, partitions, replication_factor, -1, assign);
    if (rc != 0) {
        if (rc < 0) rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    if (validate_only) goto out;
    kiq_uuid_t id;
    kiq_uuid_random(&id);
    kiq_metadata_record_t *tr = add_record(&b, KIQ_MR_TOPIC);
    tr->m.topic.name = (kiq_str_t){kiq_arena_strndup(&a, name.p, (size_t)name.len), name.len};
    tr->m.topic.topic_id = id;
    for (int32_t p = 0; p < partitions; p++) {
        kiq_metadata_record_t *pr = add_record(&b, KIQ_MR_PARTITION);
        kiq_partition_record_t *r = &pr->m.partition;
        r->partition_id = p;
        r->topic_id = id;
        r->replicas = &assign[p * replication_factor];
        r->replicas_n = replication_factor;
        r->isr = r->replicas;
        r->isr_n = replication_factor;
        r->leader = r->replicas[0];
        r->leader_epoch = 0;
        r->partition_epoch = 0;
    }
    for (int i = 0; configs && i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        if (!configs->value[i]) continue;
        kiq_metadata_record_t *cr = add_record(&b, KIQ_MR_CONFIG);
        cr->m.config.resource_type = KIQ_CONFIG_RESOURCE_TOPIC;
        cr->m.config.resource_name = tr->m.topic.name;
        cr->m.config.name = KIQ_STR(kiq_topic_config_defs[i].name);
        cr->m.config.value = (kiq_str_t){configs->value[i], (int32_t)strlen(configs->value[i])};
    }
    if (commit(c, &b) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    KIQ_INFO("controller: created topic %.*s with %d partitions, replication factor %d", (int)name.len, name.p,
             partitions, replication_factor);
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_check_growth(const char *topic, int32_t current, int32_t rf, int32_t count,
                                const kiq_create_partitions_request_topics_assignments_t *as, int32_t nassignments,
                                int (*broker_state)(void *ctx, int32_t id), void *ctx, int32_t *out)
{
    if (count < current)
        return kiq_error_set("The topic %s currently has %d partition(s); %d would not be an increase.", topic, current,
                             count),
               KIQ_ERR_INVALID_PARTITIONS;
    if (count == current) return kiq_error_set("Topic already has %d partition(s).", count), KIQ_ERR_INVALID_PARTITIONS;
    if (nassignments < 0) return KIQ_ERR_NONE;
    int32_t additional = count - current;
    if (nassignments != additional)
        return kiq_error_set("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
                             additional, nassignments),
               KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
    for (int32_t i = 0; i < nassignments; i++) {
        const kiq_create_partitions_request_topics_assignments_t *a = &as[i];
        if (a->broker_ids_n <= 0)
            return kiq_error_set("The manual partition assignment includes an empty replica list."),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        bool live = false;
        for (int32_t j = 0; j < a->broker_ids_n; j++) {
            int32_t id = a->broker_ids[j];
            if (has_id(a->broker_ids, j, id))
                return kiq_error_set("The manual partition assignment includes the broker %d more than once.", id),
                       KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
            int st = broker_state(ctx, id);
            if (st < 0)
                return kiq_error_set("The manual partition assignment includes broker %d, but no such broker is "
                                     "registered.",
                                     id),
                       KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
            live = live || st > 0;
        }
        if (a->broker_ids_n != rf)
            return kiq_error_set("The manual partition assignment includes a partition with %d replica(s), but this "
                                 "is not consistent with previous partitions, which have %d replica(s).",
                                 a->broker_ids_n, rf),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        if (!live)
            return kiq_error_set("All brokers specified in the manual partition assignment for partition %d are "
                                 "fenced or in controlled shutdown.",
                                 current + i),
                   KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
        if (out) memcpy(&out[i * rf], a->broker_ids, (size_t)rf * sizeof *out);
    }
    return KIQ_ERR_NONE;
}

/* The image's say on a broker, for kiq_controller_check_growth. */
static int image_broker_state(void *ctx, int32_t id)
{
    const kiq_broker_registration_t *br = kiq_metadata_image_broker(ctx, id);
    return !br ? -1 : br->fenced ? 0 : 1;
}

/* Under mu: Kafka's placement of a topic's new partitions: its replication
 * factor, starting from the first live broker whose id is at least that of
 * partition 0's first replica, as if the partitions had been there from
 * the start (AdminZkClient.createPartitions). */
static int place_new_partitions(kiq_controller_t *c, const kiq_topic_image_t *ti, int32_t additional, int32_t rf,
                                int32_t *out)
{
    size_t n = kiq_metadata_image_live_brokers(c->image, NULL, 0);
    int32_t *live = malloc((n ? n : 1) * sizeof *live);
    if (!live) return kiq_error_set("out of memory");
    kiq_metadata_image_live_brokers(c->image, live, n);
    int32_t first = ti->partitions[0].nreplicas > 0 ? ti->partitions[0].replicas[0] : 0, start = 0;
    while ((size_t)start < n && live[start] < first) start++;
    if ((size_t)start == n) start = 0;
    free(live);
    return kiq_metadata_image_assign_replicas(c->image, ti->npartitions, additional, rf, start, out);
}

int kiq_controller_create_partitions(kiq_controller_t *c, kiq_str_t name, int32_t count,
                                     const kiq_create_partitions_request_topics_assignments_t *assignments,
                                     int32_t nassignments, bool validate_only)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = name.p ? kiq_metadata_image_topic(c->image, name.p, (size_t)name.len) : NULL;
    if (!ti) {
        kiq_error_set("The topic '" KIQ_STR_FMT "' does not exist.", KIQ_STR_ARG(name));
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        goto out;
    }
    int32_t rf = ti->partitions[0].nreplicas > 0 ? ti->partitions[0].nreplicas : 1;
    int32_t additional = count > ti->npartitions ? count - ti->npartitions : 0;
    int32_t *assign = kiq_arena_calloc(&a, (size_t)(additional ? additional : 1) * (size_t)rf, sizeof *assign);
    rc = kiq_controller_check_growth(ti->name, ti->npartitions, rf, count, assignments, nassignments,
                                     image_broker_state, c->image, assign);
    if (rc == 0 && nassignments < 0) rc = place_new_partitions(c, ti, additional, rf, assign);
    if (rc != 0) {
        if (rc < 0) rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    if (validate_only) goto out;
    for (int32_t i = 0; i < additional; i++) {
        kiq_metadata_record_t *pr = add_record(&b, KIQ_MR_PARTITION);
        kiq_partition_record_t *r = &pr->m.partition;
        r->partition_id = ti->npartitions + i;
        r->topic_id = ti->id;
        r->replicas = &assign[i * rf];
        r->replicas_n = rf;
        /* the ISR and the leader: the replicas that are live, in order */
        int32_t *isr = kiq_arena_calloc(&a, (size_t)rf, sizeof *isr);
        int32_t nisr = 0;
        for (int32_t j = 0; j < rf; j++) {
            const kiq_broker_registration_t *br = kiq_metadata_image_broker(c->image, r->replicas[j]);
            if (br && !br->fenced) isr[nisr++] = r->replicas[j];
        }
        r->isr = isr;
        r->isr_n = nisr;
        r->leader = nisr > 0 ? isr[0] : KIQ_NO_LEADER;
        r->leader_epoch = 0;
        r->partition_epoch = 0;
    }
    char tname[256];
    snprintf(tname, sizeof tname, "%s", ti->name);
    int32_t before = ti->npartitions;
    if (commit(c, &b) != 0) {
        rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    KIQ_INFO("controller: topic %s grew from %d to %d partitions", tname, before, count);
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_delete_topic(kiq_controller_t *c, kiq_str_t name)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = name.p ? kiq_metadata_image_topic(c->image, name.p, (size_t)name.len) : NULL;
    if (!ti) {
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        kiq_error_set("This server does not host this topic-partition.");
        goto out;
    }
    /* who must drop which partitions, noted before the topic is gone */
    for (int32_t p = 0; p < ti->npartitions; p++) {
        const kiq_partition_registration_t *pr = &ti->partitions[p];
        for (int32_t i = 0; i < pr->nreplicas; i++) {
            broker_slot_t *s = slot_of(c, pr->replicas[i], true);
            if (!s) continue;
            if (s->nstops == s->cap) {
                int cap = s->cap ? s->cap * 2 : 16;
                stop_entry_t *ns = realloc(s->stops, (size_t)cap * sizeof *ns);
                if (!ns) continue;
                s->stops = ns;
                s->cap = cap;
            }
            s->stops[s->nstops++] = (stop_entry_t){strdup(ti->name), p};
        }
    }
    kiq_metadata_record_t *r = add_record(&b, KIQ_MR_REMOVE_TOPIC);
    r->m.remove_topic.topic_id = ti->id;
    KIQ_INFO("controller: deleting topic %s", ti->name);
    if (commit(c, &b) != 0) rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
out:
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_topic_configs(kiq_controller_t *c, const char *topic, size_t len, kiq_topic_configs_t *out)
{
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&c->mu);
    const kiq_topic_image_t *ti = kiq_metadata_image_topic(c->image, topic, len);
    if (!ti) {
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        kiq_error_set("Topic '%.*s' does not exist", (int)len, topic);
        goto out;
    }
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        const char *v =
            kiq_metadata_image_config(c->image, KIQ_CONFIG_RESOURCE_TOPIC, ti->name, kiq_topic_config_defs[i].name);
        if (!v) continue;
        if (!(out->value[i] = strdup(v))) {
            kiq_topic_configs_clear(out);
            rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            kiq_error_set("out of memory");
            goto out;
        }
    }
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- dynamic configs (AlterConfigs, IncrementalAlterConfigs) ---- */

/* Under mu: a ConfigRecord for each key that differs between before and
 * after (NULL: unset), after's value or null. */
static void config_records(batch_t *b, int8_t type, const char *resource, char *const *before, char *const *after,
                           int n, const char *(*name_of)(int))
{
    for (int i = 0; i < n; i++) {
        if (!before[i] == !after[i] && (!before[i] || strcmp(before[i], after[i]) == 0)) continue;
        kiq_metadata_record_t *cr = add_record(b, KIQ_MR_CONFIG);
        cr->m.config.resource_type = type;
        cr->m.config.resource_name = astr(b->a, resource);
        cr->m.config.name = astr(b->a, name_of(i));
        cr->m.config.value = after[i] ? astr(b->a, after[i]) : KIQ_STR_NULL;
    }
}

static const char *topic_config_name(int i) { return kiq_topic_config_defs[i].name; }
static const char *broker_config_name(int i) { return kiq_config_defs[i].name; }

/* Under mu: the resource's configs in the image, n of them named by
 * name_of: before points into the image, after gets copies to edit. -1
 * when out of memory (after then holds what was copied). */
static int image_configs(kiq_controller_t *c, int8_t type, const char *resource, char **before, char **after, int n,
                         const char *(*name_of)(int))
{
    for (int i = 0; i < n; i++) {
        const char *v = kiq_metadata_image_config(c->image, type, resource, name_of(i));
        before[i] = (char *)v;
        if (v && !(after[i] = strdup(v))) return kiq_error_set("out of memory");
    }
    return 0;
}

/* Under mu: one resource's change, its records into b. A Kafka error code. */
static int16_t change_configs(kiq_controller_t *c, batch_t *b, const kiq_config_order_t *e)
{
    int8_t type = kiq_config_order_type(e);
    kiq_str_t name = kiq_config_order_name(e);
    char resource[256];
    if (!name.p || name.len >= (int32_t)sizeof resource) {
        kiq_error_set("Invalid resource name");
        return KIQ_ERR_INVALID_REQUEST;
    }
    snprintf(resource, sizeof resource, KIQ_STR_FMT, KIQ_STR_ARG(name));
    int16_t err;
    if (type == KIQ_CONFIG_RESOURCE_TOPIC) {
        const kiq_topic_image_t *ti = kiq_metadata_image_topic(c->image, name.p, (size_t)name.len);
        if (!ti) {
            kiq_error_set("Topic %s does not exist", resource);
            return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        }
        kiq_topic_configs_t before = {0}, after = {0};
        if (image_configs(c, type, resource, before.value, after.value, KIQ_TOPIC_CONFIG_COUNT, topic_config_name) != 0) {
            kiq_topic_configs_clear(&after);
            return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
        err = (int16_t)kiq_config_change_topic(&after, c->cfg, e);
        if (!err) config_records(b, type, resource, before.value, after.value, KIQ_TOPIC_CONFIG_COUNT, topic_config_name);
        kiq_topic_configs_clear(&after);
        return err;
    }
    if (type != KIQ_CONFIG_RESOURCE_BROKER) {
        kiq_error_set("Unsupported resource type %d", type);
        return KIQ_ERR_INVALID_REQUEST;
    }
    /* "" is the cluster-wide default, else a registered broker's id */
    char *end;
    long id = strtol(resource, &end, 10);
    if (resource[0] && (*end || !kiq_metadata_image_broker(c->image, (int32_t)id))) {
        kiq_error_set("Unknown broker id %s (a broker config resource names a registered broker, or is empty for the "
                      "cluster default)",
                      resource);
        return KIQ_ERR_INVALID_REQUEST;
    }
    kiq_dynamic_configs_t before = {0}, after = {0};
    if (image_configs(c, type, resource, before.value, after.value, KIQ_CFG__COUNT, broker_config_name) != 0) {
        kiq_dynamic_configs_clear(&after);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    err = (int16_t)kiq_config_change_broker(&after, c->cfg, e);
    if (!err) config_records(b, type, resource, before.value, after.value, KIQ_CFG__COUNT, broker_config_name);
    kiq_dynamic_configs_clear(&after);
    return err;
}

/* Under mu: commits what the edits wrote (unless validate_only). */
static int16_t commit_configs(kiq_controller_t *c, batch_t *b, bool validate_only)
{
    if (validate_only) return KIQ_ERR_NONE;
    return commit(c, b) == 0 ? KIQ_ERR_NONE : KIQ_ERR_UNKNOWN_SERVER_ERROR;
}

static kiq_str_t error_copy(kiq_arena_t *a)
{
    const char *e = kiq_error_get();
    return (kiq_str_t){kiq_arena_strndup(a, e, strlen(e)), (int32_t)strlen(e)};
}

void kiq_controller_change_configs(kiq_controller_t *c, kiq_arena_t *arena, kiq_config_order_t *orders, int n,
                                   bool validate_only)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    batch_t b = {.a = &a};
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < n; i++) {
        kiq_error_clear();
        size_t mark = b.n;
        orders[i].error = change_configs(c, &b, &orders[i]);
        if (orders[i].error) {
            b.n = mark; /* all or nothing per resource */
            orders[i].message = error_copy(arena);
        }
    }
    int16_t err = commit_configs(c, &b, validate_only);
    if (!err && !validate_only) {
        /* unclean.leader.election.enable turned on elects at once for a
         * partition left without a leader, as Kafka's controller does */
        elect_offline(c, &b);
        commit(c, &b);
    }
    pthread_mutex_unlock(&c->mu);
    kiq_arena_reset(&a);
    for (int i = 0; err && i < n; i++)
        if (!orders[i].error) orders[i].error = err;
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
        kiq_metadata_record_t *r = add_record(&b, KIQ_MR_FENCE_BROKER);
        r->m.fence_broker.id = rb->id;
        r->m.fence_broker.epoch = rb->epoch;
        if (commit(c, &b) != 0) break;
        leave_partitions(c, &b, s->id);
        if (commit(c, &b) != 0) break;
    }
    kiq_arena_reset(&a);
}

/* The timer's round, every TIMER_MS: brokers past their session fenced,
 * leaderships moved back to preferred replicas when it is time. */
static int64_t timer_round(void *arg)
{
    kiq_controller_t *c = arg;
    pthread_mutex_lock(&c->mu);
    bool stopping = c->stopping;
    if (!stopping) {
        int64_t now = kiq_clock_mono_ns();
        fence_silent(c, now);
        if (c->rebalance_interval_ns && now >= c->next_rebalance_ns) {
            kiq_arena_t a;
            kiq_arena_init(&a);
            batch_t b = {.a = &a};
            if (elect_preferred(c, &b) > 0) commit(c, &b);
            kiq_arena_reset(&a);
            c->next_rebalance_ns = now + c->rebalance_interval_ns;
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
    return 0;
}

kiq_controller_t *kiq_controller_new(const kiq_config_t *cfg, int32_t node_id, const char *dir,
                                     const char *control_listener)
{
    kiq_controller_t *c = calloc(1, sizeof *c);
    if (!c) return kiq_error_set("out of memory"), NULL;
    c->node_id = node_id;
    snprintf(c->control_listener, sizeof c->control_listener, "%s", control_listener);
    c->session_timeout_ns = kiq_config_int(cfg, KIQ_CFG_BROKER_SESSION_TIMEOUT_MS) * 1000000;
    c->cfg = cfg;
    if (kiq_config_bool(cfg, KIQ_CFG_AUTO_LEADER_REBALANCE_ENABLE))
        c->rebalance_interval_ns = kiq_config_int(cfg, KIQ_CFG_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS) * 1000000000LL;
    c->next_rebalance_ns = kiq_clock_mono_ns() + c->rebalance_interval_ns;
    c->default_partitions = (int32_t)kiq_config_int(cfg, KIQ_CFG_NUM_PARTITIONS);
    c->default_replication_factor = (int16_t)kiq_config_int(cfg, KIQ_CFG_DEFAULT_REPLICATION_FACTOR);
    pthread_mutex_init(&c->mu, NULL);
    c->image = kiq_metadata_image_new();
    c->store = c->image ? kiq_metadata_log_new(dir) : NULL;
    if (!c->store || kiq_metadata_store_replay(c->store, replay_one, c) != 0) {
        kiq_controller_free(c);
        return NULL;
    }
    KIQ_INFO("controller %d: replayed the metadata log to offset %lld: %zu brokers, %zu topics", node_id,
             (long long)kiq_metadata_image_offset(c->image), kiq_metadata_image_broker_count(c->image),
             kiq_metadata_image_topic_count(c->image));
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
    kiq_metadata_record_t *cr = add_record(&b, KIQ_MR_CONFIG);
    cr->m.config.resource_type = KIQ_CONFIG_RESOURCE_BROKER;
    cr->m.config.resource_name = astr(&a, "");
    cr->m.config.name = astr(&a, name);
    cr->m.config.value = astr(&a, kiq_config_static_text(c->cfg, KIQ_CFG_MIN_INSYNC_REPLICAS, &is_default));
    int rc = commit(c, &b);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_controller_start(kiq_controller_t *c)
{
    pthread_mutex_lock(&c->mu);
    c->version = 1;
    if (keep_cluster_min_isr(c) != 0) {
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    int64_t now = kiq_clock_mono_ns();
    for (size_t i = 0; i < kiq_metadata_image_broker_count(c->image); i++) {
        const kiq_broker_registration_t *rb = kiq_metadata_image_broker_at(c->image, i);
        broker_slot_t *s = slot_of(c, rb->id, true);
        if (!s) continue;
        /* A session's grace to come back. Nothing is pushed before the
         * broker checks in: the replayed state may be about to change
         * (a restarted broker's leaderships move), and a broker must not
         * act on the old one meanwhile. */
        s->last_heartbeat_ns = now;
    }
    pthread_mutex_unlock(&c->mu);
    kiq_worker_config_t wc = {.name = "controller", .round = timer_round, .ctx = c, .first_delay_ms = TIMER_MS};
    return (c->timer = kiq_worker_start(&wc)) ? 0 : -1;
}

void kiq_controller_free(kiq_controller_t *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_mutex_unlock(&c->mu);
    kiq_worker_stop(c->timer);
    /* the senders lock mu to build: free them without holding it */
    for (int i = 0; i < c->nbrokers; i++) {
        kiq_broker_channel_free(c->brokers[i].channel);
        for (int j = 0; j < c->brokers[i].nstops; j++) free(c->brokers[i].stops[j].topic);
        free(c->brokers[i].stops);
    }
    free(c->brokers);
    free(c->impaired);
    kiq_metadata_store_free(c->store);
    kiq_metadata_image_free(c->image);
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
        const kiq_broker_endpoint_t *e = endpoint(c, rb, NULL);
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
            pi->replicas = copy_ids(arena, pr->replicas, pr->nreplicas);
            pi->isr = copy_ids(arena, pr->isr, pr->nisr);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

uint64_t kiq_controller_unclean_elections(kiq_controller_t *c)
{
    return atomic_load_explicit(&c->unclean_elections, memory_order_relaxed);
}
