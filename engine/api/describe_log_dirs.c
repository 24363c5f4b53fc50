/* DescribeLogDirs: each of this broker's log directories (log.dirs), with
 * the partitions it holds, their sizes and how far the high watermark
 * lags the log end, and the copies being moved there (isFutureKey, their
 * lag behind the current log); an offline directory says
 * KAFKA_STORAGE_ERROR. From v4, the volume's total and usable bytes
 * (statvfs). A null topic list asks for every partition. */
#include <limits.h>
#include <stdlib.h>
#include <sys/statvfs.h>

#include "api/api.h"
#include "api/authorize.h"

/* Whether the request asks for topic's partition p (topics NULL: all). */
static bool wanted(const kiq_describe_log_dirs_request_t *req, const char *topic, int32_t p)
{
    if (req->topics_n < 0) return true;
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_describe_log_dirs_request_topics_t *t = &req->topics[i];
        if (!kiq_str_eq(t->topic, topic)) continue;
        for (int32_t j = 0; j < t->partitions_n; j++)
            if (t->partitions[j] == p) return true;
    }
    return false;
}

/* Directory d's answer: the wanted partitions placed in it (the
 * registry's directories are the broker's, in log.dirs order). */
static void describe_dir(kiq_broker_t *b, kiq_request_t *r, const kiq_describe_log_dirs_request_t *req, int d,
                         const kiq_broker_log_dir_t *dir, kiq_topic_t **list, int count,
                         kiq_describe_log_dirs_response_results_t *out)
{
    char abs[PATH_MAX];
    out->log_dir = kiq_request_str(r, realpath(dir->path, abs) ? abs : dir->path);
    if (kiq_log_dir_offline(dir->health)) {
        out->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
        return;
    }
    struct statvfs vfs;
    if (statvfs(dir->path, &vfs) == 0) {
        out->total_bytes = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
        out->usable_bytes = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
    }
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(count ? count : 1), sizeof *out->topics);
    for (int i = 0; i < count; i++) {
        kiq_topic_t *topic = list[i];
        int32_t np = topic->npartitions;
        kiq_describe_log_dirs_response_results_topics_t *t = &out->topics[out->topics_n];
        kiq_describe_log_dirs_response_results_topics_init(t);
        t->name = kiq_request_str(r, topic->name);
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(np ? np : 1), sizeof *t->partitions);
        for (int32_t p = 0; p < np; p++) {
            kiq_partition_t *part = topic->partitions[p];
            kiq_partition_log_t *log = part->log;
            if (!wanted(req, topic->name, p)) continue;
            kiq_log_future_t f;
            bool future = b->mover && kiq_log_mover_future(b->mover, topic, p, &f) && f.dir == d;
            if (!future && (!log || atomic_load(&part->dir_index) != d)) continue;
            kiq_describe_log_dirs_response_results_topics_partitions_t *o = &t->partitions[t->partitions_n++];
            kiq_describe_log_dirs_response_results_topics_partitions_init(o);
            o->partition_index = p;
            if (future) {
                /* the copy a move fills here (AlterReplicaLogDirs) */
                o->partition_size = (int64_t)f.size;
                o->offset_lag = f.lag;
                o->is_future_key = true;
                continue;
            }
            o->partition_size = (int64_t)kiq_partition_log_size(log);
            o->offset_lag = kiq_partition_log_end_offset(log) - kiq_partition_log_high_watermark(log);
        }
        if (t->partitions_n > 0) out->topics_n++;
    }
}

int kiq_api_describe_log_dirs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_log_dirs_request_t *req = request;
    kiq_describe_log_dirs_response_t *out = response;
    /* as Kafka: DESCRIBE on the cluster, else no directories (v3+ say why) */
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_DESCRIBE)) {
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    int count;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    out->results_n = b->nlog_dirs;
    out->results = kiq_arena_calloc(&r->arena, (size_t)(b->nlog_dirs ? b->nlog_dirs : 1), sizeof *out->results);
    for (int d = 0; d < b->nlog_dirs; d++) {
        kiq_describe_log_dirs_response_results_init(&out->results[d]);
        describe_dir(b, r, req, d, &b->log_dirs[d], list, count, &out->results[d]);
    }
    kiq_topics_list_free(list, count);
    return KIQ_HANDLER_RESPOND;
}
