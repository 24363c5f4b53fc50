#include "replica/leader.h"

#include "core/observer.h"
#include "log/log_flusher.h"
#include "log/log_names.h"
#include "proto/errors.h"
#include "replica/partition_replica.h"

int16_t kiq_replica_led_partition(kiq_topic_t *topic, int32_t index, int32_t current_leader_epoch, kiq_partition_t **part,
                                  kiq_partition_log_t **log)
{
    if (!topic || index < 0 || index >= topic->npartitions) return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    *part = topic->partitions[index];
    *log = (*part)->log;
    if (!*log) return KIQ_ERR_NOT_LEADER_OR_FOLLOWER; /* not a replica here */
    if (kiq_partition_log_offline(*log)) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    return kiq_partition_replica_check_leader((*part)->replica, current_leader_epoch);
}

/* What the announce of a leader's append needs besides the result. */
typedef struct appended_ctx {
    const kiq_partition_replica_t *rep;
    kiq_partition_log_t *log;
    const void *request;
    size_t len;
} appended_ctx_t;

/* Under the log's mutex, before a follower or consumer can read the
 * batches: the journey of a batch exists before any fetch of it. */
static void announce_appended(void *ctx, const kiq_log_append_result_t *res)
{
    const appended_ctx_t *a = ctx;
    char file[4096];
    kiq_event_t e = kiq_event(KIQ_POINT_APPENDED, a->rep->self);
    e.request = a->request;
    e.topic = a->rep->topic;
    e.partition = a->rep->partition;
    e.first_offset = res->base_offset;
    e.last_offset = res->last_offset;
    e.before = res->base_offset;
    e.after = res->last_offset + 1;
    /* the segment's own path when the log gives it: no formatting per append */
    if (res->segment_path)
        e.file = res->segment_path;
    else if (kiq_log_segment_path(file, sizeof file, kiq_partition_log_dir(a->log), res->segment_base,
                                  KIQ_LOG_SUFFIX) == 0)
        e.file = file;
    e.position = res->position;
    e.bytes = (int64_t)a->len;
    e.producer_id = res->txn_producer;
    kiq_observers_emit(a->rep->observers, &e);
}

int kiq_replica_append_as_leader(kiq_partition_t *part, kiq_partition_log_t *log, uint8_t *batches, size_t len,
                                 const void *request, uint64_t txn_guard, kiq_log_append_result_t *res)
{
    kiq_partition_replica_t *rep = part->replica;
    appended_ctx_t a = {rep, log, request, len};
    kiq_log_append_watch_t watch = {announce_appended, &a};
    bool watched = kiq_observers_want(rep->observers, KIQ_POINT_APPENDED);
    int rc = kiq_partition_log_append_checked(log, batches, len, kiq_partition_replica_leader_epoch(rep), txn_guard,
                                              watched ? &watch : NULL, res);
    if (rc < 0) {
        /* A move to another log directory (log/log_mover.h) refuses
         * appends while it swaps, under host_mu: after it the new log
         * takes the batches (a refused append changed nothing). */
        pthread_mutex_lock(&part->topic->host_mu);
        kiq_partition_log_t *now = atomic_load(&part->log);
        pthread_mutex_unlock(&part->topic->host_mu);
        if (now && now != log) {
            log = a.log = now;
            rc = kiq_partition_log_append_checked(log, batches, len, kiq_partition_replica_leader_epoch(rep),
                                                  txn_guard, watched ? &watch : NULL, res);
        }
    }
    if (rc != 0) return rc;
    if (res->flushed && !res->duplicate)
        kiq_log_flush_announce(rep->observers, rep->self, request, rep->topic, rep->partition, &res->flush, 0);
    kiq_partition_replica_advance_hw(rep, log);
    return 0;
}

int kiq_replica_append_marker_as_leader(kiq_partition_t *part, kiq_partition_log_t *log, const kiq_txn_marker_t *m,
                                        kiq_log_append_result_t *res)
{
    kiq_partition_replica_t *rep = part->replica;
    appended_ctx_t a = {rep, log, NULL, 0};
    kiq_log_append_watch_t watch = {announce_appended, &a};
    bool watched = kiq_observers_want(rep->observers, KIQ_POINT_APPENDED);
    int rc = kiq_partition_log_append_marker(log, m, kiq_partition_replica_leader_epoch(rep), watched ? &watch : NULL,
                                             res);
    if (rc != 0) return rc;
    if (kiq_observers_want(rep->observers, KIQ_POINT_TXN_MARKER)) {
        kiq_event_t e = kiq_event(KIQ_POINT_TXN_MARKER, rep->self);
        e.topic = rep->topic;
        e.partition = rep->partition;
        e.producer_id = m->producer_id;
        e.before = res->txn_first_offset;
        e.after = res->last_offset;
        e.extra = m->commit;
        kiq_observers_emit(rep->observers, &e);
    }
    kiq_partition_replica_advance_hw(rep, log);
    return 0;
}
