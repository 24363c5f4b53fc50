/* WriteTxnMarkers: another broker's transaction coordinator has this
 * leader append COMMIT or ABORT markers; each partition answers once its
 * marker is replicated. Brokers of the cluster may send any marker (Kafka
 * asks for ClusterAction); a client only the ABORT of a transaction that
 * is open in the partition at the producer's current epoch: the admin
 * abort of a hanging transaction (KIP-664, `kafka-transactions.sh abort`,
 * which finds it with DescribeProducers). Anything else from a client (a
 * request whose client id is not "kafkaiq-broker-<id>" of a live broker,
 * and every request to a standalone broker) gets
 * CLUSTER_AUTHORIZATION_FAILED, and nothing is appended. With an
 * authorizer, Kafka's rule alone: ClusterAction on the cluster (brokers
 * sign in as super users), no admin abort without it, so no client can
 * abort another producer's transaction. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/peer_broker.h"
#include "api/replication_wait.h"
#include "controller/metadata_cache.h"
#include "core/error.h"
#include "core/say.h"
#include "replica/leader.h"
#include "txn/txn_coordinator.h"


/* A client's marker: the admin abort of a transaction open in the
 * partition at exactly that producer epoch. */
static bool admin_abort(kiq_broker_t *b, const kiq_write_txn_markers_request_markers_t *m, kiq_str_t topic,
                        int32_t partition)
{
    if (m->transaction_result) return false;
    kiq_topic_t *t = kiq_topics_get(b->topics, topic);
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    kiq_producer_entry_t e;
    bool open = kiq_replica_led_partition(t, partition, -1, &p, &log) == KIQ_ERR_NONE &&
                kiq_partition_log_producer(log, m->producer_id, &e) == 1 && e.txn_first_offset >= 0 &&
                e.epoch == m->producer_epoch;
    kiq_topic_unref(t);
    return open;
}

static void timed_out(void *response)
{
    kiq_write_txn_markers_response_t *out = response;
    for (int32_t i = 0; i < out->markers_n; i++)
        for (int32_t j = 0; j < out->markers[i].topics_n; j++)
            for (int32_t k = 0; k < out->markers[i].topics[j].partitions_n; k++) {
                int16_t *e = &out->markers[i].topics[j].partitions[k].error_code;
                if (*e == KIQ_ERR_NONE) *e = KIQ_ERR_REQUEST_TIMED_OUT;
            }
}

int kiq_api_write_txn_markers_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_write_txn_markers_request_t *req = request;
    kiq_write_txn_markers_response_t *out = response;
    bool broker = b->authorizer ? kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION) : kiq_api_peer_broker(b, r) >= 0;
    int32_t nm = req->markers_n > 0 ? req->markers_n : 0;
    int total = 0;
    for (int32_t i = 0; i < nm; i++)
        for (int32_t j = 0; j < (req->markers[i].topics_n > 0 ? req->markers[i].topics_n : 0); j++)
            total += req->markers[i].topics[j].partition_indexes_n > 0 ? req->markers[i].topics[j].partition_indexes_n : 0;
    kiq_api_replication_need_t *needs = kiq_arena_calloc(&r->arena, (size_t)(total ? total : 1), sizeof *needs);
    int nneeds = 0;
    out->markers_n = nm;
    out->markers = kiq_arena_calloc(&r->arena, (size_t)(nm ? nm : 1), sizeof *out->markers);
    for (int32_t i = 0; i < nm; i++) {
        const kiq_write_txn_markers_request_markers_t *m = &req->markers[i];
        kiq_write_txn_markers_response_markers_t *om = &out->markers[i];
        kiq_write_txn_markers_response_markers_init(om);
        om->producer_id = m->producer_id;
        int32_t nt = m->topics_n > 0 ? m->topics_n : 0;
        om->topics_n = nt;
        om->topics = kiq_arena_calloc(&r->arena, (size_t)(nt ? nt : 1), sizeof *om->topics);
        kiq_txn_marker_t marker = {m->producer_id, m->producer_epoch, m->coordinator_epoch, m->transaction_result};
        for (int32_t j = 0; j < nt; j++) {
            const kiq_write_txn_markers_request_markers_topics_t *t = &m->topics[j];
            kiq_write_txn_markers_response_markers_topics_t *ot = &om->topics[j];
            kiq_write_txn_markers_response_markers_topics_init(ot);
            ot->name = t->name;
            int32_t np = t->partition_indexes_n > 0 ? t->partition_indexes_n : 0;
            ot->partitions_n = np;
            ot->partitions = kiq_arena_calloc(&r->arena, (size_t)(np ? np : 1), sizeof *ot->partitions);
            const char *name = kiq_arena_strndup(&r->arena, t->name.p ? t->name.p : "", t->name.p ? (size_t)t->name.len : 0);
            for (int32_t k = 0; k < np; k++) {
                kiq_write_txn_markers_response_markers_topics_partitions_init(&ot->partitions[k]);
                ot->partitions[k].partition_index = t->partition_indexes[k];
                if (!broker && (b->authorizer || !admin_abort(b, m, t->name, t->partition_indexes[k]))) {
                    KIQ_WARN_LIMITED("WriteTxnMarkers from client " KIQ_STR_FMT " (%s) for %s-%d refused: %s "
                                     "(producer %lld epoch %d)",
                                     KIQ_STR_ARG(r->header.client_id), r->principal, name, t->partition_indexes[k],
                                     b->authorizer ? "no ClusterAction on the cluster"
                                                   : "a client may only abort a transaction open there",
                                     (long long)m->producer_id, m->producer_epoch);
                    ot->partitions[k].error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
                    continue;
                }
                if (!broker)
                    KIQ_INFO("transaction of producer %lld at %s-%d aborted by client " KIQ_STR_FMT " (admin abort)",
                             (long long)m->producer_id, name, t->partition_indexes[k], KIQ_STR_ARG(r->header.client_id));
                int64_t need;
                int16_t err = kiq_txn_marker_append(kiq_txn_coordinator_markers(b->txns), &marker, t->name,
                                                    t->partition_indexes[k], &need);
                ot->partitions[k].error_code = err;
                if (err)
                    KIQ_DEBUG("WriteTxnMarkers for producer %lld at %s-%d: %s", (long long)m->producer_id, name,
                              t->partition_indexes[k], kiq_error_get());
                else
                    needs[nneeds++] = (kiq_api_replication_need_t){name, t->partition_indexes[k], need};
            }
        }
    }
    return kiq_api_respond_when_all_replicated(b, r, response, needs, nneeds, KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS,
                                               timed_out);
}
