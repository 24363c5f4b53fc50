/* The broker's state, built once; see broker_state.h. */
#include "server/broker_state.h"

#include "controller/quorum.h"

#include <stdio.h>
#include <string.h>

#include "controller/controller.h"
#include "controller/metadata_cache.h"
#include "core/arena.h"
#include "core/clock.h"
#include "log/log_dir.h"
#include "metrics/histogram.h"
#include "replica/partition_state.h"
#include "replica/replica_manager.h"

static void ids(const kiq_view_t *v, const char *name, const int32_t *ids, int n)
{
    v->open(v->ctx, name, true);
    for (int i = 0; i < n; i++) v->number(v->ctx, NULL, ids[i]);
    v->close(v->ctx);
}

static void processor(const kiq_view_t *v, const char *name, kiq_processor_t *p, int id)
{
    kiq_processor_stats_t st;
    kiq_processor_stats(p, &st);
    v->open(v->ctx, name, false);
    v->number(v->ctx, "id", id);
    v->number(v->ctx, "connections", st.connections);
    v->number(v->ctx, "muted", st.muted);
    v->number(v->ctx, "requests", (double)st.requests);
    v->number(v->ctx, "bytes_in", (double)st.bytes_in);
    v->number(v->ctx, "bytes_out", (double)st.bytes_out);
    v->number(v->ctx, "idle_ns", (double)st.idle_ns);
    v->number(v->ctx, "up_ns", (double)st.up_ns);
    v->close(v->ctx);
}

static void log_dirs(kiq_broker_t *b, const kiq_view_t *v)
{
    v->open(v->ctx, "log_dirs", true);
    for (int i = 0; i < b->nlog_dirs; i++) {
        int err = kiq_log_dir_error(b->log_dirs[i].health), full = kiq_log_dir_full(b->log_dirs[i].health);
        v->open(v->ctx, NULL, false);
        v->string(v->ctx, "path", b->log_dirs[i].path);
        v->boolean(v->ctx, "offline", err != 0);
        if (err) v->string(v->ctx, "error", strerror(err));
        if (full) v->string(v->ctx, "full", strerror(full)); /* read-only until there is room */
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->open(v->ctx, "offline_log_dirs", true);
    for (int i = 0; i < b->nlog_dirs; i++)
        if (kiq_log_dir_offline(b->log_dirs[i].health)) v->string(v->ctx, NULL, b->log_dirs[i].path);
    v->close(v->ctx);
}

/* The controller's view of the cluster, on the broker hosting it. */
static void controller_view(struct kiq_controller *ctl, const kiq_view_t *v)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_controller_info_t info;
    kiq_controller_describe(ctl, &a, &info);
    v->open(v->ctx, "controller_view", false);
    v->number(v->ctx, "metadata_offset", (double)info.metadata_offset);
    v->open(v->ctx, "brokers", true);
    for (int i = 0; i < info.nbrokers; i++) {
        v->open(v->ctx, NULL, false);
        v->number(v->ctx, "id", info.brokers[i].id);
        v->number(v->ctx, "epoch", (double)info.brokers[i].epoch);
        v->boolean(v->ctx, "fenced", info.brokers[i].fenced);
        v->string(v->ctx, "host", info.brokers[i].host ? info.brokers[i].host : "");
        v->number(v->ctx, "port", info.brokers[i].port);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->open(v->ctx, "partitions", true);
    for (int t = 0; t < info.ntopics; t++)
        for (int32_t p = 0; p < info.topics[t].npartitions; p++) {
            const kiq_controller_partition_info_t *pi = &info.topics[t].partitions[p];
            v->open(v->ctx, NULL, false);
            v->string(v->ctx, "topic", info.topics[t].name);
            v->number(v->ctx, "partition", p);
            v->number(v->ctx, "leader", pi->leader);
            v->number(v->ctx, "leader_epoch", pi->leader_epoch);
            ids(v, "isr", pi->isr, pi->nisr);
            v->close(v->ctx);
        }
    v->close(v->ctx);
    v->number(v->ctx, "unclean_elections", (double)kiq_controller_unclean_elections(ctl));
    v->close(v->ctx);
    kiq_arena_reset(&a);
}

/* The network layer, the I/O threads and the control plane, as counters
 * a reader turns into rates. */
static void network(kiq_broker_t *b, const kiq_view_t *v)
{
    v->open(v->ctx, "acceptor", false);
    v->number(v->ctx, "port", kiq_broker_port(b));
    v->number(v->ctx, "accepted", b->acceptor ? (double)kiq_acceptor_accepted(b->acceptor) : 0);
    v->close(v->ctx);
    v->open(v->ctx, "processors", true);
    for (int i = 0; i < b->nprocessors; i++) processor(v, NULL, b->processors[i], i);
    v->close(v->ctx);
    v->open(v->ctx, "io", false);
    v->number(v->ctx, "threads", b->nio_threads);
    v->number(v->ctx, "busy_ns", (double)atomic_load(&b->io_busy_ns));
    v->number(v->ctx, "up_ns", (double)(kiq_clock_mono_ns() - b->io_started_ns));
    v->close(v->ctx);
    if (b->has_control_plane && b->control_processor) {
        v->open(v->ctx, "control_plane", false);
        v->number(v->ctx, "port", b->control_port);
        v->number(v->ctx, "depth", (double)kiq_request_queue_depth(b->control_queue));
        processor(v, "processor", b->control_processor, 0);
        v->close(v->ctx);
    }
    if (b->replicas) {
        uint64_t shrinks = 0, expands = 0;
        kiq_replica_manager_isr_changes(b->replicas, &shrinks, &expands);
        v->open(v->ctx, "isr_changes", false);
        v->number(v->ctx, "shrinks", (double)shrinks);
        v->number(v->ctx, "expands", (double)expands);
        v->number(v->ctx, "max_lag", (double)kiq_replica_manager_max_lag(b->replicas));
        v->close(v->ctx);
    }
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    if (ctl) controller_view(ctl, v);
}

/* The request queue, how long Produce and Fetch waited in it (over the
 * broker's bounded histograms, of those served), and the purgatory. */
static void queues(kiq_broker_t *b, const kiq_view_t *v)
{
    static const struct {
        int16_t key;
        const char *name;
    } apis[] = {{0, "Produce"}, {1, "Fetch"}};
    v->open(v->ctx, "request_queue", false);
    v->number(v->ctx, "depth", (double)kiq_request_queue_depth(b->queue));
    v->number(v->ctx, "bound", (double)kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUESTS));
    v->number(v->ctx, "muted", (double)kiq_request_queue_muted(b->queue));
    v->open(v->ctx, "waits", false);
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
        kiq_histogram_t *h = kiq_request_stats_times(&b->stats, apis[i].key, KIQ_STAGE_QUEUE);
        if (!h) continue;
        uint64_t in_window = 0;
        int64_t now = kiq_clock_mono_ms(), ns[KIQ_STAGE__COUNT];
        double p50 = kiq_histogram_quantile_ms(h, 0.5, now, &in_window),
               p99 = kiq_histogram_quantile_ms(h, 0.99, now, &in_window);
        v->open(v->ctx, apis[i].name, false);
        /* served since the start; the quantiles speak of the last minute */
        v->number(v->ctx, "count", (double)kiq_request_stats_get(&b->stats, apis[i].key, ns));
        v->number(v->ctx, "p50_ms", p50);
        v->number(v->ctx, "p99_ms", p99);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->close(v->ctx);
    if (b->control_queue) {
        v->open(v->ctx, "control_queue", false);
        v->number(v->ctx, "depth", (double)kiq_request_queue_depth(b->control_queue));
        v->close(v->ctx);
    }
    kiq_purgatory_stats_t ps;
    kiq_purgatory_stats(b->purgatory, &ps);
    v->open(v->ctx, "purgatory", false);
    v->number(v->ctx, "waiting", ps.waiting);
    v->number(v->ctx, "parked", (double)ps.parked);
    v->number(v->ctx, "tried", (double)ps.tried);
    v->number(v->ctx, "expired", (double)ps.expired);
    v->close(v->ctx);
    v->open(v->ctx, "fetch_bytes", false);
    v->number(v->ctx, "sendfile", (double)atomic_load(&b->fetch_bytes_sendfile));
    v->number(v->ctx, "copied", (double)atomic_load(&b->fetch_bytes_copied));
    v->close(v->ctx);
}

static void topics(kiq_broker_t *b, int newest_segments, const kiq_view_t *v)
{
    v->open(v->ctx, "topics", false);
    int count = 0;
    kiq_topic_t **list = b->running ? kiq_topics_list(b->topics, &count) : NULL;
    for (int i = 0; i < count; i++) {
        kiq_topic_t *t = list[i];
        char id[23], index[16];
        kiq_uuid_to_base64(&t->id, id);
        v->open(v->ctx, t->name, false);
        v->string(v->ctx, "name", t->name);
        v->string(v->ctx, "id", id);
        v->number(v->ctx, "partition_count", t->npartitions);
        v->open(v->ctx, "partitions", false);
        for (int32_t p = 0; p < t->npartitions; p++) {
            snprintf(index, sizeof index, "%d", p);
            v->open(v->ctx, index, false);
            kiq_partition_state_view(t->partitions[p], newest_segments, v);
            v->close(v->ctx);
        }
        v->close(v->ctx);
        v->close(v->ctx);
    }
    if (list) kiq_topics_list_free(list, count);
    v->close(v->ctx);
}

/* This voter's place in the controller quorum: its role, the epoch and
 * leader, the log and its high watermark, the votes of its last election;
 * the leader adds each voter's log end and last fetch (ms ago). */
static void quorum_view(kiq_broker_t *b, const kiq_view_t *v)
{
    kiq_raft_view_t q;
    kiq_quorum_view(b->quorum, &q);
    int64_t now = kiq_clock_system_mono_ns() / 1000000;
    v->open(v->ctx, "quorum", false);
    v->string(v->ctx, "role", kiq_raft_role_name(q.role));
    v->number(v->ctx, "epoch", q.epoch);
    v->number(v->ctx, "leader", q.leader_id);
    v->number(v->ctx, "voted_for", q.voted_for);
    v->number(v->ctx, "high_watermark", (double)q.high_watermark);
    v->number(v->ctx, "log_start", (double)q.log_start);
    v->number(v->ctx, "log_end", (double)q.log_end);
    v->number(v->ctx, "snapshot_end", (double)(q.snapshot.epoch >= 0 ? q.snapshot.end_offset : -1));
    v->number(v->ctx, "snapshot_epoch", q.snapshot.epoch);
    v->number(v->ctx, "last_epoch", q.last_epoch);
    v->number(v->ctx, "elections", (double)q.elections);
    v->number(v->ctx, "votes_granted", q.votes_granted);
    v->open(v->ctx, "voters", true);
    for (int i = 0; i < q.n_voters; i++) {
        v->open(v->ctx, NULL, false);
        v->number(v->ctx, "id", q.voters[i].id);
        if (q.role == KIQ_RAFT_LEADER) {
            v->number(v->ctx, "log_end", (double)q.voters[i].log_end);
            v->number(v->ctx, "lag", (double)(q.voters[i].log_end < 0 ? -1 : q.log_end - q.voters[i].log_end));
            v->number(v->ctx, "last_fetch_ms_ago",
                      (double)(q.voters[i].last_fetch_ms < 0 ? -1 : now - q.voters[i].last_fetch_ms));
        }
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->close(v->ctx);
}

void kiq_broker_state_view(kiq_broker_t *b, int newest_segments, const kiq_view_t *v)
{
    v->number(v->ctx, "node_id", b->node_id);
    v->string(v->ctx, "cluster_id", b->cluster_id);
    v->number(v->ctx, "port", kiq_broker_port(b));
    if (b->has_control_plane) v->number(v->ctx, "control_port", b->control_port);
    v->boolean(v->ctx, "running", b->running);
    v->boolean(v->ctx, "cluster", b->cluster);
    v->number(v->ctx, "controller", kiq_broker_controller_id(b));
    if (b->quorum) quorum_view(b, v);
    v->open(v->ctx, "threads", false);
    v->number(v->ctx, "network", (double)kiq_config_int(b->config, KIQ_CFG_NUM_NETWORK_THREADS));
    v->number(v->ctx, "io", (double)kiq_config_int(b->config, KIQ_CFG_NUM_IO_THREADS));
    v->close(v->ctx);
    v->open(v->ctx, "startup", false);
    kiq_broker_startup_view(&b->startup, v);
    v->close(v->ctx);
    log_dirs(b, v);
    if (b->running) {
        network(b, v);
        queues(b, v);
    }
    if (b->journeys) {
        kiq_journeys_stats_t js;
        kiq_journeys_stats(b->journeys, &js);
        v->open(v->ctx, "journeys", false);
        v->number(v->ctx, "kept", (double)js.kept);
        v->number(v->ctx, "recorded", (double)js.recorded);
        v->number(v->ctx, "bytes", (double)js.bytes);
        if (js.journal) {
            v->number(v->ctx, "journal_written", (double)js.journal_written);
            v->number(v->ctx, "journal_dropped", (double)js.journal_dropped);
            v->number(v->ctx, "journal_bytes", (double)js.journal_bytes);
        }
        if (js.otlp) {
            v->number(v->ctx, "otlp_exported", (double)js.otlp_exported);
            v->number(v->ctx, "otlp_dropped", (double)js.otlp_dropped);
            v->number(v->ctx, "otlp_failed", (double)js.otlp_failed);
        }
        v->close(v->ctx);
    }
    if (b->groups) kiq_group_coordinator_view(b->groups, v);
    topics(b, newest_segments, v);
}

int kiq_broker_partition_view(kiq_broker_t *b, const char *topic, int32_t partition, const kiq_view_t *v)
{
    kiq_topic_t *t = b->running ? kiq_topics_get(b->topics, KIQ_STR(topic)) : NULL;
    if (!t) return -1;
    bool found = partition >= 0 && partition < t->npartitions;
    if (found) kiq_partition_state_view(t->partitions[partition], 0, v);
    kiq_topic_unref(t);
    return found ? 0 : -1;
}
