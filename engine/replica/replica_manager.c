/* The broker's replicas in cluster mode; see replica_manager.h. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/controller.h"
#include "controller/metadata_cache.h"
#include "controller/metadata_record.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/log_names.h"
#include "log/log_retention.h"
#include "net/peer_channel.h"
#include "proto/errors.h"
#include "replica/partition_replica.h"
#include "replica/replica_fetcher.h"
#include "replica/replica_manager.h"
#include "replica/replica_manager_internal.h"

/* ---- fetchers ---- */

/* Which of a leader's fetchers takes a partition: spread by a hash of its
 * name and index, as Kafka does. */
static int fetcher_index(const kiq_replica_manager_t *rm, const char *topic, int32_t partition)
{
    uint32_t h = 2166136261u;
    for (const char *c = topic; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
    h = (h ^ (uint32_t)partition) * 16777619u;
    return (int)(h % (uint32_t)rm->nfetchers_per_leader);
}

static bool is_paused_locked(const kiq_replica_manager_t *rm, int32_t leader)
{
    for (int i = 0; i < rm->npaused; i++)
        if (rm->paused[i] == leader) return true;
    return false;
}

/* Under mu: the fetcher for (leader, index) at host:port, made if needed
 * (one at another address is replaced: the leader came back elsewhere).
 * NULL with the reason. */
static kiq_replica_fetcher_t *fetcher_locked(kiq_replica_manager_t *rm, int32_t leader, int index, const char *host,
                                             int port)
{
    if (rm->stopped) return kiq_error_set("the broker is shutting down"), NULL;
    for (int i = 0; i < rm->nslots; i++) {
        fetcher_slot_t *s = &rm->slots[i];
        if (s->leader != leader || s->index != index) continue;
        if (s->port == port && strcmp(s->host, host) == 0) return s->f;
        KIQ_INFO("broker %d: leader %d moved to %s:%d; new fetcher", rm->b.node_id, leader, host, port);
        kiq_replica_fetcher_free(s->f);
        rm->slots[i] = rm->slots[--rm->nslots];
        break;
    }
    if (!kiq_rm_grow((void **)&rm->slots, &rm->slots_cap, rm->nslots, sizeof *rm->slots))
        return kiq_error_set("out of memory"), NULL;
    kiq_replica_fetcher_config_t cfg = {
        .self = rm->b.node_id,
        .leader = leader,
        .host = host,
        .port = port,
        .max_wait_ms = rm->fetch_wait_ms,
        .max_bytes = rm->fetch_max_bytes,
        .index = index,
        .metrics = rm->b.metrics,
        .security = rm->b.peer_security,
    };
    kiq_replica_fetcher_t *f = kiq_replica_fetcher_new(&cfg);
    if (!f) return NULL;
    if (is_paused_locked(rm, leader)) kiq_replica_fetcher_pause(f, true);
    fetcher_slot_t *s = &rm->slots[rm->nslots++];
    memset(s, 0, sizeof *s);
    s->leader = leader;
    s->index = index;
    snprintf(s->host, sizeof s->host, "%s", host);
    s->port = port;
    s->f = f;
    return f;
}

/* Under mu: the partition leaves every fetcher but `keep` (NULL: all). */
static void unfollow_locked(kiq_replica_manager_t *rm, const kiq_topic_t *topic, int32_t partition,
                            const kiq_replica_fetcher_t *keep)
{
    for (int i = 0; i < rm->nslots; i++)
        if (rm->slots[i].f != keep) kiq_replica_fetcher_remove(rm->slots[i].f, topic, partition);
}

/* Under mu: fetchers left with nothing to fetch go (their threads and
 * connections with them). */
static void drop_idle_locked(kiq_replica_manager_t *rm)
{
    for (int i = 0; i < rm->nslots;) {
        if (kiq_replica_fetcher_count(rm->slots[i].f) == 0) {
            kiq_replica_fetcher_free(rm->slots[i].f);
            rm->slots[i] = rm->slots[--rm->nslots];
        } else {
            i++;
        }
    }
}

/* ---- LeaderAndIsr ---- */

/* One partition's state, from either request layout. */
typedef struct pstate {
    int32_t partition, leader, leader_epoch, partition_epoch;
    const int32_t *isr, *replicas;
    int nisr, nreplicas;
    int16_t error; /* the answer */
} pstate_t;

static const kiq_leader_and_isr_request_live_leaders_t *live_leader(const kiq_leader_and_isr_request_t *req,
                                                                    int32_t id)
{
    for (int32_t i = 0; i < req->live_leaders_n; i++)
        if (req->live_leaders[i].broker_id == id) return &req->live_leaders[i];
    return NULL;
}

static bool is_offsets_topic(const kiq_topic_t *topic) { return strcmp(topic->name, KIQ_OFFSETS_TOPIC) == 0; }

/* The topics whose leaders coordinate: groups, transactional ids. */
static bool is_coordinator_topic(const kiq_topic_t *topic)
{
    return is_offsets_topic(topic) || strcmp(topic->name, KIQ_TXN_TOPIC) == 0;
}

/* __consumer_offsets as Kafka makes it: compacted, its own segment size. */
static int offsets_topic_configs(const kiq_replica_context_t *b, kiq_topic_configs_t *cfg)
{
    char seg[32];
    snprintf(seg, sizeof seg, "%" PRId64, kiq_config_int(b->config, KIQ_CFG_OFFSETS_TOPIC_SEGMENT_BYTES));
    if (kiq_topic_configs_set(cfg, "cleanup.policy", 14, "compact", 7) != 0 ||
        kiq_topic_configs_set(cfg, "segment.bytes", 13, seg, (int)strlen(seg)) != 0)
        return -1;
    return 0;
}

static int16_t stop_one(kiq_replica_manager_t *rm, kiq_str_t name, int32_t partition, int32_t leader_epoch,
                        bool delete_partition);

/* A topic here that the controller's metadata does not have (it was
 * deleted, perhaps while this broker was down, perhaps created again with a
 * new id): its replicas are stray and deleted, as Kafka does. A deletion is
 * routine (its metadata arrives before its StopReplica); only an id that
 * changed under this broker is worth a warning. */
static void drop_stray(kiq_replica_manager_t *rm, kiq_str_t name, const char *why, bool id_changed)
{
    const kiq_replica_context_t *b = &rm->b;
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (!topic) return;
    kiq_say(id_changed ? KIQ_SAY_WARN : KIQ_SAY_INFO,
            "broker %d: topic " KIQ_STR_FMT " here is not the controller's (%s): deleting its replicas here",
            b->node_id, KIQ_STR_ARG(name), why);
    int32_t np = atomic_load(&topic->npartitions);
    kiq_topic_unref(topic);
    for (int32_t p = 0; p < np; p++) stop_one(rm, name, p, -2, true);
    /* stop_one deletes it once it hosts nothing; one hosting nothing before */
    if ((topic = kiq_topics_get(b->topics, name))) kiq_topics_delete(b->topics, topic);
    kiq_topic_unref(topic);
}

/* Whether this broker's replica of topic's partition p is stray: the
 * metadata assigns p to other brokers only (a reassignment moved it away,
 * perhaps while this broker was down). A view older than what this
 * replica was last told (a lower leader epoch) decides nothing, nor one
 * that lists no replica at all. */
static bool stray_replica(kiq_replica_manager_t *rm, kiq_topic_t *topic, int32_t p)
{
    kiq_partition_t *part = topic->partitions[p];
    if (!atomic_load(&part->log)) return false;
    kiq_cached_partition_t cp;
    if (!kiq_metadata_cache_partition(rm->b.metadata, topic->name, strlen(topic->name), p, &cp) || cp.nreplicas == 0)
        return false;
    for (int i = 0; i < cp.nreplicas; i++)
        if (cp.replicas[i] == rm->b.node_id) return false;
    return kiq_partition_replica_role(part->replica) == KIQ_REPLICA_NONE ||
           cp.leader_epoch >= kiq_partition_replica_leader_epoch(part->replica);
}

/* Kafka's stray detection (KIP-858): the replicas here that the
 * controller's metadata no longer assigns to this broker are stopped and
 * deleted, so no controller has to remember a removal this broker missed. */
static void drop_stray_replicas(kiq_replica_manager_t *rm, kiq_topic_t *topic)
{
    int32_t np = atomic_load(&topic->npartitions);
    for (int32_t p = 0; p < np; p++) {
        if (!stray_replica(rm, topic, p)) continue;
        KIQ_INFO("broker %d: %s-%d is assigned to other brokers now: deleting its replica here", rm->b.node_id,
                 topic->name, p);
        stop_one(rm, KIQ_STR(topic->name), p, -2, true);
    }
}

void kiq_replica_manager_drop_strays(kiq_replica_manager_t *rm)
{
    const kiq_replica_context_t *b = &rm->b;
    int count;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    for (int i = 0; list && i < count; i++) {
        kiq_str_t name = KIQ_STR(list[i]->name);
        kiq_uuid_t id;
        bool known = kiq_metadata_cache_topic_id(b->metadata, name.p, (size_t)name.len, &id);
        if (known && (kiq_uuid_is_zero(&id) || kiq_topics_adopt_id(b->topics, list[i], &id) == 0)) {
            drop_stray_replicas(rm, list[i]);
            continue;
        }
        drop_stray(rm, name, known ? "another topic id" : "deleted", known);
    }
    kiq_topics_list_free(list, count);
}

/* The topic, created here hosting the partitions in ps when it is not.
 * A reference, or NULL with ps' errors set. */
static kiq_topic_t *hosted_topic(kiq_replica_manager_t *rm, kiq_str_t name, const kiq_uuid_t *id, pstate_t *ps,
                                 int n)
{
    const kiq_replica_context_t *b = &rm->b;
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    if (topic) {
        if (!id || kiq_uuid_is_zero(id) || kiq_topics_adopt_id(b->topics, topic, id) == 0) return topic;
        /* an older topic of that name whose deletion this broker missed:
         * the controller's topic is hosted in its place */
        kiq_topic_unref(topic);
        drop_stray(rm, name, "LeaderAndIsr names another id for it", true);
    }
    int32_t count = kiq_metadata_cache_partition_count(b->metadata, name.p, (size_t)name.len);
    if (count <= 0) {
        KIQ_WARN("broker %d: LeaderAndIsr for " KIQ_STR_FMT " before its metadata", b->node_id, KIQ_STR_ARG(name));
        for (int i = 0; i < n; i++) ps[i].error = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return NULL;
    }
    bool *hosted = calloc((size_t)count, sizeof *hosted);
    if (!hosted) {
        for (int i = 0; i < n; i++) ps[i].error = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (ps[i].partition >= 0 && ps[i].partition < count) hosted[ps[i].partition] = true;
    kiq_uuid_t tid;
    const kiq_uuid_t *idp = id && !kiq_uuid_is_zero(id) ? id : NULL;
    if (!idp && kiq_metadata_cache_topic_id(b->metadata, name.p, (size_t)name.len, &tid)) idp = &tid;
    kiq_topic_configs_t cfg = {0};
    bool offsets = kiq_str_eq(name, KIQ_OFFSETS_TOPIC);
    /* the configs came with the metadata that named the topic (the
     * controller pushes them all with each UpdateMetadata) */
    if (!offsets && kiq_metadata_cache_topic_configs(b->metadata, name.p, (size_t)name.len, &cfg) != 0)
        KIQ_WARN("broker %d: hosting " KIQ_STR_FMT " without its configs: %s", b->node_id, KIQ_STR_ARG(name),
                 kiq_error_get());
    int rc = offsets && offsets_topic_configs(b, &cfg) != 0
                 ? KIQ_ERR_UNKNOWN_SERVER_ERROR
                 : kiq_topics_create_hosted(b->topics, name, idp, count, (int16_t)(n > 0 ? ps[0].nreplicas : 1),
                                            hosted, &cfg);
    kiq_topic_configs_clear(&cfg);
    free(hosted);
    if (rc != KIQ_ERR_NONE && rc != KIQ_ERR_TOPIC_ALREADY_EXISTS) {
        KIQ_ERROR("broker %d: cannot host " KIQ_STR_FMT ": %s", b->node_id, KIQ_STR_ARG(name), kiq_error_get());
        for (int i = 0; i < n; i++) ps[i].error = (int16_t)rc;
        return NULL;
    }
    KIQ_INFO("broker %d: hosting " KIQ_STR_FMT " (%d partitions in all)", b->node_id, KIQ_STR_ARG(name), count);
    topic = kiq_topics_get(b->topics, name);
    if (!topic) {
        for (int i = 0; i < n; i++) ps[i].error = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return NULL;
    }
    kiq_log_retention_apply_topic(topic, b->config);
    /* a replica of nothing until the controller's word is applied below */
    for (int32_t p = 0; p < topic->npartitions; p++) kiq_partition_replica_stop(topic->partitions[p]->replica);
    return topic;
}

/* One partition takes the role the controller gives it. */
static int16_t become(kiq_replica_manager_t *rm, const kiq_leader_and_isr_request_t *req, kiq_topic_t *topic,
                      const pstate_t *s)
{
    const kiq_replica_context_t *b = &rm->b;
    kiq_partition_t *part = topic->partitions[s->partition];
    kiq_partition_log_t *log = part->log;
    kiq_partition_replica_t *rep = part->replica;
    if (!log) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    kiq_replica_view_t before;
    kiq_partition_replica_view(rep, &before);
    if (s->leader == b->node_id) {
        /* a stale request changes nothing, the fetchers included */
        if (kiq_replica_view_stale(&before, s->leader_epoch)) return KIQ_ERR_FENCED_LEADER_EPOCH;
        /* no fetcher applies an answer to the log once it leads */
        pthread_mutex_lock(&rm->mu);
        unfollow_locked(rm, topic, s->partition, NULL);
        pthread_mutex_unlock(&rm->mu);
        if (kiq_partition_replica_become_leader(rep, s->leader_epoch, s->partition_epoch, s->replicas, s->nreplicas,
                                                s->isr, s->nisr, kiq_clock_mono_ms(), log, rm->lag_ms) != 0)
            return KIQ_ERR_FENCED_LEADER_EPOCH;
        kiq_partition_replica_advance_hw(rep, log);
        if (before.role != KIQ_REPLICA_LEADER || before.leader_epoch != s->leader_epoch)
            KIQ_INFO("broker %d: leader of %s-%d at epoch %d (ISR of %d, log end %" PRId64 ", high watermark %" PRId64
                     ")",
                     b->node_id, topic->name, s->partition, s->leader_epoch, s->nisr,
                     kiq_partition_log_end_offset(log), kiq_partition_log_high_watermark(log));
        if (is_coordinator_topic(topic)) b->coordinator_partition_led(b->ctx, topic->name, s->partition, true);
        return KIQ_ERR_NONE;
    }
    if (kiq_partition_replica_become_follower(rep, s->leader, s->leader_epoch, s->partition_epoch, s->replicas,
                                              s->nreplicas, s->isr, s->nisr) != 0)
        return KIQ_ERR_FENCED_LEADER_EPOCH;
    if (is_coordinator_topic(topic)) b->coordinator_partition_led(b->ctx, topic->name, s->partition, false);
    const kiq_leader_and_isr_request_live_leaders_t *ll = s->leader >= 0 ? live_leader(req, s->leader) : NULL;
    kiq_replica_fetcher_t *f = NULL;
    pthread_mutex_lock(&rm->mu);
    if (ll && ll->host_name.p) {
        char host[256];
        snprintf(host, sizeof host, KIQ_STR_FMT, KIQ_STR_ARG(ll->host_name));
        f = fetcher_locked(rm, s->leader, fetcher_index(rm, topic->name, s->partition), host, ll->port);
        if (!f || kiq_replica_fetcher_add(f, topic, s->partition) != 0) {
            /* while the broker stops, a late LeaderAndIsr finds no fetchers: expected */
            if (!rm->stopped)
                KIQ_ERROR("broker %d: cannot follow %s-%d from broker %d: %s", b->node_id, topic->name,
                          s->partition, s->leader, kiq_error_get());
            f = NULL;
        }
    } else if (s->leader >= 0) {
        KIQ_WARN("broker %d: leader %d of %s-%d is not among the live leaders", b->node_id, s->leader, topic->name,
                 s->partition);
    }
    unfollow_locked(rm, topic, s->partition, f);
    pthread_mutex_unlock(&rm->mu);
    if (before.role != KIQ_REPLICA_FOLLOWER || before.leader_epoch != s->leader_epoch || before.leader != s->leader)
        KIQ_INFO("broker %d: follower of %s-%d (leader %d, epoch %d)", b->node_id, topic->name, s->partition, s->leader,
                 s->leader_epoch);
    return KIQ_ERR_NONE;
}

/* The partitions of one topic, in a request. */
static void apply_topic(kiq_replica_manager_t *rm, const kiq_leader_and_isr_request_t *req, kiq_str_t name,
                        const kiq_uuid_t *id, pstate_t *ps, int n)
{
    const kiq_replica_context_t *b = &rm->b;
    if (!name.p) {
        for (int i = 0; i < n; i++) ps[i].error = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    kiq_topic_t *topic = hosted_topic(rm, name, id, ps, n);
    if (!topic) return;
    /* partitions added since this broker made the topic (CreatePartitions);
     * the controller pushes the metadata that counts them first */
    int32_t want = kiq_metadata_cache_partition_count(b->metadata, name.p, (size_t)name.len);
    if (want > topic->npartitions && kiq_topics_add_partitions(b->topics, topic, want, false) != 0)
        KIQ_ERROR("broker %d: cannot grow %s to %d partitions: %s", b->node_id, topic->name, want, kiq_error_get());
    for (int i = 0; i < n; i++) {
        pstate_t *s = &ps[i];
        if (s->partition < 0 || s->partition >= topic->npartitions) {
            s->error = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        if (!topic->partitions[s->partition]->log) {
            int rc = kiq_topics_host_partition(b->topics, topic, s->partition);
            if (rc != 0 || !topic->partitions[s->partition]->log) {
                KIQ_ERROR("broker %d: cannot host %s-%d: %s", b->node_id, topic->name, s->partition, kiq_error_get());
                s->error = KIQ_ERR_KAFKA_STORAGE_ERROR;
                continue;
            }
            kiq_log_retention_apply_topic(topic, b->config);
        }
        s->error = become(rm, req, topic, s);
    }
    kiq_topic_unref(topic);
}

int kiq_replica_manager_apply_leader_and_isr(kiq_replica_manager_t *rm, const kiq_leader_and_isr_request_t *req,
                                             kiq_arena_t *a, kiq_leader_and_isr_response_t *resp)
{
    pthread_mutex_lock(&rm->mu);
    bool stale = req->controller_epoch < rm->controller_epoch;
    if (!stale) rm->controller_epoch = req->controller_epoch;
    pthread_mutex_unlock(&rm->mu);
    if (stale) {
        resp->error_code = KIQ_ERR_STALE_CONTROLLER_EPOCH;
        return 0;
    }
    /* v5+: by topic (with ids) */
    int32_t nt = req->topic_states_n > 0 ? req->topic_states_n : 0;
    resp->topics_n = nt;
    resp->topics = kiq_arena_calloc(a, (size_t)(nt ? nt : 1), sizeof *resp->topics);
    for (int32_t t = 0; t < nt; t++) {
        const kiq_leader_and_isr_request_topic_states_t *ts = &req->topic_states[t];
        int n = ts->partition_states_n > 0 ? ts->partition_states_n : 0;
        pstate_t *ps = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *ps);
        for (int i = 0; i < n; i++) {
            const kiq_leader_and_isr_request_topic_states_partition_states_t *in = &ts->partition_states[i];
            ps[i] = (pstate_t){in->partition_index, in->leader, in->leader_epoch, in->partition_epoch,
                               in->isr, in->replicas, in->isr_n > 0 ? in->isr_n : 0,
                               in->replicas_n > 0 ? in->replicas_n : 0, 0};
        }
        apply_topic(rm, req, ts->topic_name, &ts->topic_id, ps, n);
        kiq_leader_and_isr_response_topics_t *out = &resp->topics[t];
        kiq_leader_and_isr_response_topics_init(out);
        out->topic_id = ts->topic_id;
        out->partition_errors_n = n;
        out->partition_errors = kiq_arena_calloc(a, (size_t)(n ? n : 1), sizeof *out->partition_errors);
        for (int i = 0; i < n; i++) {
            kiq_leader_and_isr_response_topics_partition_errors_init(&out->partition_errors[i]);
            out->partition_errors[i].partition_index = ps[i].partition;
            out->partition_errors[i].error_code = ps[i].error;
        }
    }
    /* v0-4: one state per partition, each naming its topic */
    int32_t nu = req->ungrouped_partition_states_n > 0 ? req->ungrouped_partition_states_n : 0;
    resp->partition_errors_n = nu;
    resp->partition_errors = kiq_arena_calloc(a, (size_t)(nu ? nu : 1), sizeof *resp->partition_errors);
    for (int32_t i = 0; i < nu; i++) {
        const kiq_leader_and_isr_request_ungrouped_partition_states_t *in = &req->ungrouped_partition_states[i];
        pstate_t s = {in->partition_index, in->leader, in->leader_epoch, in->partition_epoch,
                      in->isr, in->replicas, in->isr_n > 0 ? in->isr_n : 0,
                      in->replicas_n > 0 ? in->replicas_n : 0, 0};
        apply_topic(rm, req, in->topic_name, NULL, &s, 1);
        kiq_leader_and_isr_response_partition_errors_init(&resp->partition_errors[i]);
        resp->partition_errors[i].topic_name = in->topic_name;
        resp->partition_errors[i].partition_index = in->partition_index;
        resp->partition_errors[i].error_code = s.error;
    }
    pthread_mutex_lock(&rm->mu);
    drop_idle_locked(rm);
    pthread_mutex_unlock(&rm->mu);
    /* parked produces and fetches see the new roles (a former leader's
     * waiters answer NOT_LEADER_OR_FOLLOWER) and moved high watermarks */
    kiq_topics_notify_append(rm->b.topics, NULL, -1);
    return 0;
}

/* ---- StopReplica ---- */

static int16_t stop_one(kiq_replica_manager_t *rm, kiq_str_t name, int32_t partition, int32_t leader_epoch,
                        bool delete_partition)
{
    const kiq_replica_context_t *b = &rm->b;
    kiq_topic_t *topic = name.p ? kiq_topics_get(b->topics, name) : NULL;
    if (!topic || partition < 0 || partition >= topic->npartitions) {
        kiq_topic_unref(topic);
        return KIQ_ERR_NONE; /* nothing here to stop */
    }
    kiq_partition_t *part = topic->partitions[partition];
    /* -1 and -2 (a deletion) stop whatever the epoch */
    int32_t current = kiq_partition_replica_leader_epoch(part->replica);
    if (leader_epoch >= 0 && leader_epoch < current && kiq_partition_replica_role(part->replica) != KIQ_REPLICA_NONE) {
        kiq_topic_unref(topic);
        return KIQ_ERR_FENCED_LEADER_EPOCH;
    }
    pthread_mutex_lock(&rm->mu);
    unfollow_locked(rm, topic, partition, NULL);
    pthread_mutex_unlock(&rm->mu);
    if (is_coordinator_topic(topic)) b->coordinator_partition_led(b->ctx, topic->name, partition, false);
    kiq_partition_replica_stop(part->replica);
    int16_t err = KIQ_ERR_NONE;
    if (delete_partition) {
        if (kiq_topics_unhost_partition(b->topics, topic, partition, true) != 0) {
            KIQ_ERROR("broker %d: cannot delete %s-%d: %s", b->node_id, topic->name, partition, kiq_error_get());
            err = KIQ_ERR_KAFKA_STORAGE_ERROR;
        } else {
            KIQ_INFO("broker %d: deleted its replica of %s-%d", b->node_id, topic->name, partition);
            /* the topic's last replica here gone: its name is free for a
             * new topic (a deleted topic created again has a new id) */
            if (!kiq_topic_hosts_any(topic)) kiq_topics_delete(b->topics, topic);
        }
    }
    kiq_topic_unref(topic);
    return err;
}

int kiq_replica_manager_stop_replica(kiq_replica_manager_t *rm, const kiq_stop_replica_request_t *req,
                                     kiq_arena_t *a, kiq_stop_replica_response_t *resp)
{
    pthread_mutex_lock(&rm->mu);
    bool stale = req->controller_epoch < rm->controller_epoch;
    pthread_mutex_unlock(&rm->mu);
    if (stale) {
        resp->error_code = KIQ_ERR_STALE_CONTROLLER_EPOCH;
        return 0;
    }
    int total = 0;
    for (int32_t t = 0; t < req->topic_states_n; t++)
        total += req->topic_states[t].partition_states_n > 0 ? req->topic_states[t].partition_states_n : 0;
    for (int32_t t = 0; t < req->topics_n; t++)
        total += req->topics[t].partition_indexes_n > 0 ? req->topics[t].partition_indexes_n : 0;
    total += req->ungrouped_partitions_n > 0 ? req->ungrouped_partitions_n : 0;
    resp->partition_errors = kiq_arena_calloc(a, (size_t)(total ? total : 1), sizeof *resp->partition_errors);
    resp->partition_errors_n = 0;
#define ANSWER(name_, partition_, err_)                                                                             \
    do {                                                                                                           \
        kiq_stop_replica_response_partition_errors_t *e_ = &resp->partition_errors[resp->partition_errors_n++];  \
        kiq_stop_replica_response_partition_errors_init(e_);                                                       \
        e_->topic_name = (name_);                                                                                  \
        e_->partition_index = (partition_);                                                                        \
        e_->error_code = (err_);                                                                                   \
    } while (0)
    /* v3: per partition, with its epoch and whether to delete */
    for (int32_t t = 0; t < req->topic_states_n; t++) {
        const kiq_stop_replica_request_topic_states_t *ts = &req->topic_states[t];
        for (int32_t i = 0; i < ts->partition_states_n; i++) {
            const kiq_stop_replica_request_topic_states_partition_states_t *ps = &ts->partition_states[i];
            ANSWER(ts->topic_name, ps->partition_index,
                   stop_one(rm, ts->topic_name, ps->partition_index, ps->leader_epoch, ps->delete_partition));
        }
    }
    /* v1-2 by topic, v0 one by one; delete_partitions for all */
    for (int32_t t = 0; t < req->topics_n; t++) {
        const kiq_stop_replica_request_topics_t *ts = &req->topics[t];
        for (int32_t i = 0; i < ts->partition_indexes_n; i++)
            ANSWER(ts->name, ts->partition_indexes[i],
                   stop_one(rm, ts->name, ts->partition_indexes[i], -1, req->delete_partitions));
    }
    for (int32_t i = 0; i < req->ungrouped_partitions_n; i++) {
        const kiq_stop_replica_request_ungrouped_partitions_t *up = &req->ungrouped_partitions[i];
        ANSWER(up->topic_name, up->partition_index,
               stop_one(rm, up->topic_name, up->partition_index, -1, req->delete_partitions));
    }
#undef ANSWER
    pthread_mutex_lock(&rm->mu);
    drop_idle_locked(rm);
    pthread_mutex_unlock(&rm->mu);
    kiq_topics_notify_append(rm->b.topics, NULL, -1);
    return 0;
}

/* ---- link control ---- */

void kiq_replica_manager_pause_fetching(kiq_replica_manager_t *rm, int32_t leader, bool paused)
{
    pthread_mutex_lock(&rm->mu);
    int at = -1;
    for (int i = 0; i < rm->npaused; i++)
        if (rm->paused[i] == leader) at = i;
    if (paused && at < 0 && kiq_rm_grow((void **)&rm->paused, &rm->paused_cap, rm->npaused, sizeof *rm->paused))
        rm->paused[rm->npaused++] = leader;
    if (!paused && at >= 0) rm->paused[at] = rm->paused[--rm->npaused];
    for (int i = 0; i < rm->nslots; i++)
        if (rm->slots[i].leader == leader) kiq_replica_fetcher_pause(rm->slots[i].f, paused);
    pthread_mutex_unlock(&rm->mu);
    KIQ_INFO("broker %d: fetching from broker %d %s", rm->b.node_id, leader, paused ? "paused" : "resumed");
}

int64_t kiq_replica_manager_max_lag(kiq_replica_manager_t *rm)
{
    pthread_mutex_lock(&rm->mu);
    int64_t lag = 0;
    for (int i = 0; i < rm->nslots; i++) {
        int64_t l = kiq_replica_fetcher_max_lag(rm->slots[i].f);
        if (l > lag) lag = l;
    }
    pthread_mutex_unlock(&rm->mu);
    return lag;
}

/* ---- lifecycle ---- */

kiq_replica_manager_t *kiq_replica_manager_new(const kiq_replica_context_t *b)
{
    kiq_replica_manager_t *rm = calloc(1, sizeof *rm);
    if (!rm) return kiq_error_set("out of memory"), NULL;
    rm->b = *b;
    rm->nfetchers_per_leader = (int)kiq_config_int(b->config, KIQ_CFG_NUM_REPLICA_FETCHERS);
    if (rm->nfetchers_per_leader < 1) rm->nfetchers_per_leader = 1;
    rm->lag_ms = kiq_config_int(b->config, KIQ_CFG_REPLICA_LAG_TIME_MAX_MS);
    rm->fetch_wait_ms = (int)kiq_config_int(b->config, KIQ_CFG_REPLICA_FETCH_WAIT_MAX_MS);
    rm->fetch_max_bytes = (int)kiq_config_int(b->config, KIQ_CFG_REPLICA_FETCH_MAX_BYTES);
    rm->isr_interval_ms = rm->lag_ms / 2 < ISR_CHECK_MAX_MS ? rm->lag_ms / 2 : ISR_CHECK_MAX_MS;
    if (rm->isr_interval_ms < 1) rm->isr_interval_ms = 1;
    char id[32];
    snprintf(id, sizeof id, "kafkaiq-isr-%d", b->node_id);
    const char *host;
    int port;
    rm->line_controller = b->controller(b->ctx, &host, &port);
    kiq_peer_channel_config_t lc = {.name = "alter-partition", .peer = "controller", .host = host,
                                    .port = port, .client_id = id, .metrics = b->metrics,
                                    .security = b->controller_security};
    if (!(rm->line = kiq_peer_channel_open(&lc))) {
        free(rm);
        return NULL;
    }
    pthread_mutex_init(&rm->mu, NULL);
    /* what the disk holds is no one's until the controller says: not led,
     * not followed (a stale client must not write here meanwhile) */
    int count = 0;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    for (int i = 0; i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions; p++) kiq_partition_replica_stop(list[i]->partitions[p]->replica);
    kiq_topics_list_free(list, count);
    return rm;
}

int kiq_replica_manager_start(kiq_replica_manager_t *rm)
{
    char name[24];
    snprintf(name, sizeof name, "isr-%d", rm->b.node_id);
    rm->next_shrink_ms = kiq_clock_mono_ms() + rm->isr_interval_ms;
    kiq_worker_config_t wc = {name, kiq_rm_isr_round_due, rm, rm->isr_interval_ms};
    pthread_mutex_lock(&rm->mu);
    rm->running = true;
    rm->isr = kiq_worker_start(&wc);
    if (!rm->isr) rm->running = false;
    pthread_mutex_unlock(&rm->mu);
    return rm->isr ? 0 : -1;
}

void kiq_replica_manager_stop(kiq_replica_manager_t *rm)
{
    if (!rm) return;
    pthread_mutex_lock(&rm->mu);
    rm->running = false;
    rm->stopped = true;
    kiq_worker_t *isr = rm->isr;
    rm->isr = NULL;
    pthread_mutex_unlock(&rm->mu);
    kiq_peer_channel_stop(rm->line);
    kiq_worker_stop(isr);
    pthread_mutex_lock(&rm->mu);
    for (int i = 0; i < rm->nslots; i++) kiq_replica_fetcher_free(rm->slots[i].f);
    rm->nslots = 0;
    pthread_mutex_unlock(&rm->mu);
}

void kiq_replica_manager_free(kiq_replica_manager_t *rm)
{
    if (!rm) return;
    kiq_replica_manager_stop(rm);
    kiq_peer_channel_free(rm->line);
    free(rm->slots);
    for (int i = 0; i < rm->nexpands; i++) kiq_topic_unref(rm->expands[i].topic);
    free(rm->expands);
    free(rm->lost);
    free(rm->paused);
    pthread_mutex_destroy(&rm->mu);
    free(rm);
}

void kiq_replica_manager_lead_all_alone(kiq_topics_t *t)
{
    int count = 0;
    kiq_topic_t **list = kiq_topics_list(t, &count);
    for (int i = 0; i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_t *part = list[i]->partitions[p];
            kiq_partition_log_t *log = part->log;
            if (log) kiq_partition_replica_advance_hw(part->replica, log);
        }
    kiq_topics_list_free(list, count);
}

void kiq_replica_manager_isr_changes(kiq_replica_manager_t *rm, uint64_t *shrinks, uint64_t *expands)
{
    *shrinks = atomic_load_explicit(&rm->isr_shrinks, memory_order_relaxed);
    *expands = atomic_load_explicit(&rm->isr_expands, memory_order_relaxed);
}
