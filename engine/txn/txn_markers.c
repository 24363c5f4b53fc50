/* Transaction markers; see txn_markers.h. */
#include "txn/txn_markers.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "log/log_names.h"
#include "net/client.h"
#include "proto/errors.h"
#include "replica/leader.h"
#include "txn/broker_peers.h"

/* How often a marker written here is checked for replication. */
#define REPLICATION_POLL_NS 1000000L

int16_t kiq_txn_marker_append(const kiq_txn_markers_context_t *c, const kiq_txn_marker_t *m, kiq_str_t topic,
                              int32_t partition, int64_t *need)
{
    *need = -1;
    kiq_topic_t *t = kiq_topics_get(c->topics, topic);
    kiq_partition_t *part;
    kiq_partition_log_t *log;
    int16_t err = kiq_replica_led_partition(t, partition, -1, &part, &log);
    if (err) {
        kiq_error_set("the marker's partition " KIQ_STR_FMT "-%d is not led here (error %d)", KIQ_STR_ARG(topic),
                      partition, err);
        kiq_topic_unref(t);
        return err;
    }
    kiq_log_append_result_t res;
    int rc = kiq_replica_append_marker_as_leader(part, log, m, &res);
    if (rc == 0) {
        *need = res.last_offset + 1;
        /* followers waiting to fetch it, consumers waiting past the LSO */
        kiq_topics_notify_append(c->topics, t->name, partition);
        if (c->offsets_marker && strcmp(t->name, KIQ_OFFSETS_TOPIC) == 0)
            c->offsets_marker(c->ctx, partition, m->producer_id, m->commit);
        KIQ_DEBUG("%s marker of producer %" PRId64 " epoch %d at %s-%d offset %" PRId64,
                  m->commit ? "COMMIT" : "ABORT", m->producer_id, m->producer_epoch, t->name, partition,
                  res.last_offset);
    }
    kiq_topic_unref(t);
    if (rc < 0) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    return (int16_t)rc;
}

/* ---- the coordinator's sender ---- */

struct kiq_txn_markers {
    kiq_txn_markers_context_t c;
    atomic_bool stopping;
    kiq_broker_peers_t *peers;
};

kiq_txn_markers_t *kiq_txn_markers_new(const kiq_txn_markers_context_t *c)
{
    kiq_txn_markers_t *mk = calloc(1, sizeof *mk);
    if (!mk) return NULL;
    mk->c = *c;
    if (!(mk->peers = kiq_broker_peers_new(c->metadata, c->security, c->node_id, "txn-markers", false, c->metrics))) {
        free(mk);
        return NULL;
    }
    return mk;
}

void kiq_txn_markers_free(kiq_txn_markers_t *mk)
{
    if (!mk) return;
    kiq_broker_peers_free(mk->peers);
    free(mk);
}

void kiq_txn_markers_shutdown(kiq_txn_markers_t *mk)
{
    atomic_store(&mk->stopping, true);
    kiq_broker_peers_shutdown(mk->peers);
}

/* The high watermark of a partition led here reaches need before the
 * deadline (CLOCK_MONOTONIC ns). */
static bool wait_replicated(kiq_txn_markers_t *mk, const char *topic, int32_t partition, int64_t need,
                            int64_t deadline_ns)
{
    for (;;) {
        kiq_topic_t *t = kiq_topics_get(mk->c.topics, KIQ_STR(topic));
        kiq_partition_log_t *log = t && partition < t->npartitions ? t->partitions[partition]->log : NULL;
        bool done = !log || kiq_partition_log_high_watermark(log) >= need;
        kiq_topic_unref(t);
        if (done) return true;
        if (atomic_load(&mk->stopping) || kiq_clock_mono_ns() >= deadline_ns) return false;
        struct timespec ts = {0, REPLICATION_POLL_NS};
        nanosleep(&ts, NULL);
    }
}

/* Whether a partition's answer means there is nothing more to do there. */
static bool settled(int16_t err)
{
    /* a deleted partition needs no marker; a fenced marker is a newer
     * coordinator's business (Kafka drops it the same way) */
    return err == KIQ_ERR_NONE || err == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION || err == KIQ_ERR_INVALID_PRODUCER_EPOCH ||
           err == KIQ_ERR_TRANSACTION_COORDINATOR_FENCED;
}

/* WriteTxnMarkers to broker `leader` for the partitions at idx[0..k). */
static void deliver_remote(kiq_txn_markers_t *mk, int32_t leader, const kiq_txn_marker_t *m,
                           const kiq_txn_partition_t *ps, const int *idx, int k, bool *done, int timeout_ms)
{
    kiq_peer_channel_t *line = kiq_broker_peers_line(mk->peers, leader);
    int16_t v = line ? kiq_peer_channel_version(line, KIQ_API_WRITE_TXN_MARKERS) : -1;
    if (v < 0) {
        KIQ_WARN("transaction markers of producer %" PRId64 " to broker %d: %s", m->producer_id, leader,
                 kiq_error_get());
        return;
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_write_txn_markers_request_t req;
    kiq_write_txn_markers_request_init(&req);
    kiq_write_txn_markers_request_markers_t mark;
    kiq_write_txn_markers_request_markers_init(&mark);
    mark.producer_id = m->producer_id;
    mark.producer_epoch = m->producer_epoch;
    mark.transaction_result = m->commit;
    mark.coordinator_epoch = m->coordinator_epoch;
    mark.topics_n = k;
    mark.topics = kiq_arena_calloc(&a, (size_t)k, sizeof *mark.topics);
    for (int i = 0; i < k; i++) {
        kiq_write_txn_markers_request_markers_topics_init(&mark.topics[i]);
        mark.topics[i].name = KIQ_STR(ps[idx[i]].topic);
        mark.topics[i].partition_indexes_n = 1;
        mark.topics[i].partition_indexes = (int32_t *)&ps[idx[i]].partition;
    }
    req.markers_n = 1;
    req.markers = &mark;
    kiq_write_txn_markers_response_t resp;
    if (kiq_peer_channel_request(line, KIQ_API_WRITE_TXN_MARKERS, v, &req, &a, &resp, timeout_ms) != 0) {
        KIQ_WARN("transaction markers of producer %" PRId64 " to broker %d: %s", m->producer_id, leader,
                 kiq_error_get());
        kiq_arena_reset(&a);
        return;
    }
    for (int32_t i = 0; i < resp.markers_n; i++)
        for (int32_t j = 0; j < resp.markers[i].topics_n; j++) {
            const kiq_write_txn_markers_response_markers_topics_t *t = &resp.markers[i].topics[j];
            for (int32_t q = 0; q < t->partitions_n; q++)
                for (int x = 0; x < k; x++) {
                    const kiq_txn_partition_t *p = &ps[idx[x]];
                    if (done[idx[x]] || p->partition != t->partitions[q].partition_index ||
                        !kiq_str_eq(t->name, p->topic))
                        continue;
                    int16_t err = t->partitions[q].error_code;
                    done[idx[x]] = settled(err);
                    if (err)
                        KIQ_DEBUG("marker of producer %" PRId64 " at %s-%d on broker %d: error %d", m->producer_id,
                                  p->topic, p->partition, leader, err);
                }
        }
    kiq_arena_reset(&a);
}

int kiq_txn_markers_deliver(kiq_txn_markers_t *mk, const kiq_txn_marker_t *m, const kiq_txn_partition_t *ps, int n,
                            bool *done, int timeout_ms)
{
    int64_t deadline = kiq_clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    int *remote = malloc((size_t)(n ? n : 1) * sizeof *remote);
    int32_t *leaders = malloc((size_t)(n ? n : 1) * sizeof *leaders);
    int nremote = 0;
    for (int i = 0; i < n && remote && leaders; i++) {
        if (done[i]) continue;
        int64_t need;
        int16_t err = kiq_txn_marker_append(&mk->c, m, KIQ_STR(ps[i].topic), ps[i].partition, &need);
        if (err == KIQ_ERR_NONE) {
            done[i] = wait_replicated(mk, ps[i].topic, ps[i].partition, need, deadline);
            continue;
        }
        kiq_cached_partition_t cp;
        bool known = mk->c.metadata &&
                     kiq_metadata_cache_partition(mk->c.metadata, ps[i].topic, strlen(ps[i].topic), ps[i].partition, &cp);
        /* a broker with no replica of any of the topic's partitions has no
         * topic to ask: UNKNOWN_TOPIC_OR_PARTITION, yet the cluster knows it */
        bool elsewhere = err == KIQ_ERR_NOT_LEADER_OR_FOLLOWER || err == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        if (elsewhere && known && cp.leader >= 0 && cp.leader != mk->c.node_id) {
            remote[nremote] = i;
            leaders[nremote++] = cp.leader;
        } else if (err == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION) {
            done[i] = !known; /* deleted; known: leaderless or not yet here, so again later */
        } else {
            done[i] = settled(err);
            if (!done[i])
                KIQ_DEBUG("marker of producer %" PRId64 " at %s-%d: %s", m->producer_id, ps[i].topic, ps[i].partition,
                          kiq_error_get());
        }
    }
    /* one request per leader */
    int *batch = malloc((size_t)(nremote ? nremote : 1) * sizeof *batch);
    for (int i = 0; i < nremote && batch; i++) {
        if (leaders[i] < 0) continue;
        int k = 0;
        int32_t leader = leaders[i];
        for (int j = i; j < nremote; j++)
            if (leaders[j] == leader) {
                batch[k++] = remote[j];
                leaders[j] = -1;
            }
        int left_ms = (int)((deadline - kiq_clock_mono_ns()) / 1000000);
        if (left_ms > 0 && !atomic_load(&mk->stopping)) deliver_remote(mk, leader, m, ps, batch, k, done, left_ms);
    }
    free(batch);
    free(remote);
    free(leaders);
    int left = 0;
    for (int i = 0; i < n; i++) left += !done[i];
    return left;
}
