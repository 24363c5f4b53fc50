/* The replica manager's ISR thread: the leader's side of Kafka's ISR
 * changes (a follower behind for replica.lag.time.max.ms leaves the ISR, a
 * caught-up one joins it), asked of the controller with AlterPartition,
 * and the replicas this broker cannot trust reported with
 * AssignReplicasToDirs. See replica_manager.h. */
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

/* The ISR thread: its line to where the active controller now is. */
static void follow_controller(kiq_replica_manager_t *rm)
{
    const char *host;
    int port;
    int32_t id = rm->b.controller(rm->b.ctx, &host, &port);
    if (id != rm->line_controller) {
        rm->line_controller = id;
        kiq_peer_channel_retarget(rm->line, host, port);
    }
}

/* ---- the ISR thread ---- */

/* One ISR change asked for. */
typedef struct isr_change {
    kiq_topic_t *topic; /* borrowed from the round's list or expansions */
    int32_t partition;
    int32_t leader_epoch, partition_epoch;
    int32_t new_isr[KIQ_MAX_REPLICAS];
    int nisr;
    bool answered;
} isr_change_t;

static void log_change(const kiq_replica_manager_t *rm, const isr_change_t *c, const kiq_replica_view_t *v,
                       const char *what)
{
    char from[128] = "", to[128] = "";
    size_t n = 0;
    for (int i = 0; i < v->nisr && n < sizeof from; i++)
        n += (size_t)snprintf(from + n, sizeof from - n, "%s%d", i ? "," : "", v->isr[i]);
    n = 0;
    for (int i = 0; i < c->nisr && n < sizeof to; i++)
        n += (size_t)snprintf(to + n, sizeof to - n, "%s%d", i ? "," : "", c->new_isr[i]);
    KIQ_INFO("broker %d: %s ISR of %s-%d from [%s] to [%s]", rm->b.node_id, what, c->topic->name, c->partition, from,
             to);
}

/* A change for one led partition, begun (one at a time per partition):
 * true when *c is filled. expand_replica < 0: a shrink. */
static bool propose(kiq_replica_manager_t *rm, kiq_topic_t *topic, int32_t partition, int32_t expand_replica,
                    int64_t now, isr_change_t *c)
{
    kiq_partition_t *part = topic->partitions[partition];
    if (!atomic_load(&part->log)) return false;
    kiq_replica_view_t v;
    /* the epochs first: a LeaderAndIsr in between makes the request stale,
     * which the controller refuses, rather than wrong */
    kiq_partition_replica_view(part->replica, &v);
    if (v.role != KIQ_REPLICA_LEADER) return false;
    int n = expand_replica >= 0 ? kiq_partition_replica_expand_candidate(part->replica, expand_replica, c->new_isr)
                                : kiq_partition_replica_shrink_candidate(part->replica, now, rm->lag_ms, c->new_isr);
    if (n <= 0 || !kiq_partition_replica_begin_isr_change(part->replica)) return false;
    c->topic = topic;
    c->partition = partition;
    c->leader_epoch = v.leader_epoch;
    c->partition_epoch = v.partition_epoch;
    c->nisr = n;
    c->answered = false;
    log_change(rm, c, &v, expand_replica >= 0 ? "expanding" : "shrinking");
    return true;
}

/* Sends the changes in one AlterPartition and applies the answer. */
static void alter(kiq_replica_manager_t *rm, isr_change_t *cs, int n)
{
    const kiq_replica_context_t *b = &rm->b;
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_alter_partition_request_t req;
    kiq_alter_partition_request_init(&req);
    req.broker_id = b->node_id;
    req.broker_epoch = b->broker_epoch(b->ctx);
    req.topics = kiq_arena_calloc(&a, (size_t)n, sizeof *req.topics);
    for (int i = 0; i < n; i++) {
        kiq_alter_partition_request_topics_t *t = &req.topics[req.topics_n++];
        kiq_alter_partition_request_topics_init(t);
        t->topic_name = KIQ_STR(cs[i].topic->name);
        t->topic_id = cs[i].topic->id;
        t->partitions_n = 1;
        t->partitions = kiq_arena_calloc(&a, 1, sizeof *t->partitions);
        kiq_alter_partition_request_topics_partitions_t *p = &t->partitions[0];
        kiq_alter_partition_request_topics_partitions_init(p);
        p->partition_index = cs[i].partition;
        p->leader_epoch = cs[i].leader_epoch;
        p->partition_epoch = cs[i].partition_epoch;
        p->new_isr = cs[i].new_isr;
        p->new_isr_n = cs[i].nisr;
    }
    kiq_alter_partition_response_t resp;
    kiq_alter_partition_response_init(&resp);
    follow_controller(rm);
    if (kiq_peer_channel_request(rm->line, 56 /* AlterPartition */, ALTER_PARTITION_VERSION, &req, &a, &resp,
                                 ALTER_TIMEOUT_MS) != 0) {
        KIQ_WARN("broker %d: AlterPartition to the controller failed (retried next round): %s", b->node_id,
                 kiq_error_get());
    } else if (resp.error_code) {
        KIQ_WARN("broker %d: the controller refused AlterPartition: error %d", b->node_id, resp.error_code);
    } else {
        for (int32_t t = 0; t < resp.topics_n; t++) {
            const kiq_alter_partition_response_topics_t *tr = &resp.topics[t];
            for (int32_t j = 0; j < tr->partitions_n; j++) {
                const kiq_alter_partition_response_topics_partitions_t *pr = &tr->partitions[j];
                for (int i = 0; i < n; i++) {
                    isr_change_t *c = &cs[i];
                    if (c->answered || c->partition != pr->partition_index || !kiq_str_eq(tr->topic_name, c->topic->name))
                        continue;
                    c->answered = true;
                    kiq_partition_t *part = c->topic->partitions[c->partition];
                    if (pr->error_code) {
                        KIQ_WARN("broker %d: ISR change of %s-%d refused: error %d", b->node_id, c->topic->name,
                                 c->partition, pr->error_code);
                        break;
                    }
                    int was = kiq_partition_replica_isr_size(part->replica);
                    if (pr->isr_n != was)
                        atomic_fetch_add_explicit(pr->isr_n > was ? &rm->isr_expands : &rm->isr_shrinks, 1,
                                                  memory_order_relaxed);
                    kiq_partition_replica_set_isr(part->replica, part->log, pr->leader_epoch, pr->partition_epoch,
                                                  pr->isr, pr->isr_n > 0 ? pr->isr_n : 0, kiq_clock_mono_ms(),
                                                  rm->lag_ms);
                    break;
                }
            }
        }
    }
    for (int i = 0; i < n; i++) {
        kiq_partition_t *part = cs[i].topic->partitions[cs[i].partition];
        kiq_partition_replica_end_isr_change(part->replica);
        kiq_topics_notify_append(b->topics, cs[i].topic->name, cs[i].partition); /* the HW may have moved */
    }
    kiq_arena_reset(&a);
}

static bool has_lost(const lost_replica_t *l, int n, const lost_replica_t *x)
{
    for (int i = 0; i < n; i++)
        if (l[i].partition == x->partition && memcmp(l[i].topic_id.b, x->topic_id.b, 16) == 0) return true;
    return false;
}

/* Adds one assignment to req (arrays in a, room made by the caller). */
static void assign(kiq_assign_replicas_to_dirs_request_t *req, kiq_arena_t *a, const kiq_uuid_t *dir,
                   const lost_replica_t *r)
{
    kiq_assign_replicas_to_dirs_request_directories_t *d = &req->directories[req->directories_n++];
    kiq_assign_replicas_to_dirs_request_directories_init(d);
    d->id = *dir;
    d->topics_n = 1;
    d->topics = kiq_arena_calloc(a, 1, sizeof *d->topics);
    kiq_assign_replicas_to_dirs_request_directories_topics_init(d->topics);
    d->topics->topic_id = r->topic_id;
    d->topics->partitions_n = 1;
    d->topics->partitions = kiq_arena_calloc(a, 1, sizeof *d->topics->partitions);
    kiq_assign_replicas_to_dirs_request_directories_topics_partitions_init(d->topics->partitions);
    d->topics->partitions->partition_index = r->partition;
}

/* Tells the controller which replicas here cannot be trusted to write
 * (AssignReplicasToDirs to the LOST directory), so it moves their
 * leaderships and ISR places, and which are back in their directory:
 * when that changes, and every LOST_REPORT_MS while any is impaired. */
static void report_impaired(kiq_replica_manager_t *rm, kiq_topic_t **list, int count)
{
    const kiq_replica_context_t *b = &rm->b;
    int64_t epoch = b->broker_epoch(b->ctx);
    if (epoch < 0) return;
    int cap = 0;
    for (int i = 0; i < count; i++) cap += list[i]->npartitions;
    lost_replica_t *now = calloc((size_t)cap + 1, sizeof *now);
    if (!now) return;
    int n = 0;
    for (int i = 0; i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions && n < cap; p++) {
            kiq_partition_t *part = list[i]->partitions[p];
            kiq_partition_log_t *log = part->log;
            if (!log || kiq_partition_replica_role(part->replica) == KIQ_REPLICA_NONE) continue;
            if (!kiq_partition_log_writable(log)) {
                /* a move between log directories seals its old log while
                 * it swaps, under host_mu: the log after it is what counts */
                pthread_mutex_lock(&list[i]->host_mu);
                log = part->log;
                pthread_mutex_unlock(&list[i]->host_mu);
                if (!log) continue;
            }
            if (kiq_partition_log_writable(log) && kiq_partition_log_damaged(log, NULL, 0) < 0) continue;
            now[n++] = (lost_replica_t){list[i]->id, p, atomic_load(&part->dir_index)};
        }
    int back = 0, fresh = 0;
    for (int i = 0; i < rm->nlost; i++) back += !has_lost(now, n, &rm->lost[i]);
    for (int i = 0; i < n; i++) fresh += !has_lost(rm->lost, rm->nlost, &now[i]);
    int64_t t = kiq_clock_mono_ms();
    if (!back && !fresh && (n == 0 || t < rm->next_lost_report_ms)) {
        free(now);
        return;
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_assign_replicas_to_dirs_request_t req;
    kiq_assign_replicas_to_dirs_request_init(&req);
    req.broker_id = b->node_id;
    req.broker_epoch = epoch;
    req.directories = kiq_arena_calloc(&a, (size_t)(n + back) + 1, sizeof *req.directories);
    for (int i = 0; i < n; i++) assign(&req, &a, &KIQ_DIR_LOST, &now[i]);
    for (int i = 0; i < rm->nlost; i++) {
        const lost_replica_t *r = &rm->lost[i];
        if (has_lost(now, n, r)) continue;
        kiq_uuid_t unassigned = {{0}};
        assign(&req, &a, r->dir >= 0 && r->dir < b->nlog_dirs ? &b->log_dir_ids[r->dir] : &unassigned, r);
    }
    kiq_assign_replicas_to_dirs_response_t resp;
    kiq_assign_replicas_to_dirs_response_init(&resp);
    follow_controller(rm);
    if (kiq_peer_channel_request(rm->line, KIQ_API_ASSIGN_REPLICAS_TO_DIRS, 0, &req, &a, &resp, ALTER_TIMEOUT_MS) != 0 ||
        resp.error_code) {
        KIQ_WARN_LIMITED("broker %d: AssignReplicasToDirs to the controller failed (retried next round): %s",
                         b->node_id, resp.error_code ? kiq_error_name(resp.error_code) : kiq_error_get());
        free(now);
    } else {
        if (fresh || back)
            KIQ_INFO("broker %d: told the controller %d replica(s) here cannot be trusted to write, %d are back",
                     b->node_id, n, back);
        free(rm->lost);
        rm->lost = now;
        rm->nlost = n;
        rm->next_lost_report_ms = t + LOST_REPORT_MS;
    }
    kiq_arena_reset(&a);
}

/* One pass: lagging followers out, queued catch-ups in. */
static void isr_round(kiq_replica_manager_t *rm, isr_expand_t *ex, int nex)
{
    int count = 0;
    kiq_topic_t **list = kiq_topics_list(rm->b.topics, &count);
    int mine = 0;
    for (int i = 0; i < count; i++) mine += list[i]->npartitions;
    int cap = mine + nex;
    isr_change_t *cs = cap ? calloc((size_t)cap, sizeof *cs) : NULL;
    int n = 0;
    int64_t now = kiq_clock_mono_ms();
    /* a topic that grows meanwhile waits for the next round */
    for (int i = 0; cs && i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions && n < mine; p++)
            if (propose(rm, list[i], p, -1, now, &cs[n])) n++;
    for (int i = 0; cs && i < nex; i++)
        if (propose(rm, ex[i].topic, ex[i].partition, ex[i].replica, now, &cs[n])) n++;
    if (n > 0) alter(rm, cs, n);
    free(cs);
    report_impaired(rm, list, count);
    kiq_topics_list_free(list, count);
}

/* The ISR thread's round: the expansions queued, and every interval the
 * shrink check; how long until the next check. */
int64_t kiq_rm_isr_round_due(void *arg)
{
    kiq_replica_manager_t *rm = arg;
    pthread_mutex_lock(&rm->mu);
    isr_expand_t *ex = rm->expands;
    int nex = rm->nexpands;
    rm->expands = NULL;
    rm->nexpands = rm->expands_cap = 0;
    pthread_mutex_unlock(&rm->mu);
    int64_t now = kiq_clock_mono_ms();
    if (now >= rm->next_shrink_ms) rm->next_shrink_ms = now + rm->isr_interval_ms;
    isr_round(rm, ex, nex);
    for (int i = 0; i < nex; i++) kiq_topic_unref(ex[i].topic);
    free(ex);
    int64_t left = rm->next_shrink_ms - kiq_clock_mono_ms();
    return left > 0 ? left : 0;
}

void kiq_replica_manager_queue_isr_expand(kiq_replica_manager_t *rm, kiq_topic_t *topic, int32_t partition,
                                          int32_t replica)
{
    pthread_mutex_lock(&rm->mu);
    bool queued = false;
    for (int i = 0; i < rm->nexpands && !queued; i++)
        queued = rm->expands[i].topic == topic && rm->expands[i].partition == partition &&
                 rm->expands[i].replica == replica;
    if (!queued && rm->running && kiq_rm_grow((void **)&rm->expands, &rm->expands_cap, rm->nexpands, sizeof *rm->expands)) {
        atomic_fetch_add(&topic->refs, 1);
        rm->expands[rm->nexpands++] = (isr_expand_t){topic, partition, replica};
        kiq_worker_poke(rm->isr);
    }
    pthread_mutex_unlock(&rm->mu);
}

