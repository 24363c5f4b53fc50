/* AlterReplicaLogDirs: moves this broker's replicas to the log
 * directories named (log/log_mover.h does the copy in the background; the
 * answer comes at once). As Kafka's broker answers: a path that is not
 * one of log.dirs gets LOG_DIR_NOT_FOUND, an offline one
 * KAFKA_STORAGE_ERROR, a partition the cluster does not know
 * UNKNOWN_TOPIC_OR_PARTITION, one not hosted here REPLICA_NOT_AVAILABLE
 * (and goes to that directory if it comes later). A path is matched as
 * written in log.dirs or as the absolute path DescribeLogDirs shows. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "controller/metadata_cache.h"
#include "core/say.h"

/* The index in log.dirs of path, -1 when it is none of them. */
static int find_dir(const kiq_broker_t *b, kiq_str_t path)
{
    char want[PATH_MAX], abs[PATH_MAX];
    if (path.len <= 0 || (size_t)path.len >= sizeof want) return -1;
    memcpy(want, path.p, (size_t)path.len);
    want[path.len] = '\0';
    for (int d = 0; d < b->nlog_dirs; d++)
        if (strcmp(b->log_dirs[d].path, want) == 0 ||
            (realpath(b->log_dirs[d].path, abs) && strcmp(abs, want) == 0))
            return d;
    return -1;
}

/* Whether the cluster has the partition (a broker's metadata, or a
 * standalone broker's own topics). */
static bool known(kiq_broker_t *b, kiq_request_t *r, kiq_topic_t *topic, kiq_str_t name, int32_t partition)
{
    if (partition < 0) return false;
    if (b->cluster) {
        kiq_cached_topic_t ct;
        return name.p && kiq_metadata_cache_topic(b->metadata, name.p, (size_t)name.len, &r->arena, &ct) &&
               partition < ct.npartitions;
    }
    return topic && partition < atomic_load(&topic->npartitions);
}

static int16_t move_one(kiq_broker_t *b, kiq_request_t *r, int d, kiq_topic_t *topic, kiq_str_t name,
                        int32_t partition)
{
    if (d < 0) return KIQ_ERR_LOG_DIR_NOT_FOUND;
    if (!known(b, r, topic, name, partition)) return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (kiq_log_dir_offline(b->log_dirs[d].health)) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    if (topic) return (int16_t)kiq_log_mover_move(b->mover, topic, partition, d);
    /* not created yet: it is made in d when it comes, as Kafka does */
    return kiq_topics_prefer_dir(b->topics, name, partition, d) == 0 ? KIQ_ERR_REPLICA_NOT_AVAILABLE
                                                                     : KIQ_ERR_UNKNOWN_SERVER_ERROR;
}

int kiq_api_alter_replica_log_dirs_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_replica_log_dirs_request_t *req = request;
    kiq_alter_replica_log_dirs_response_t *out = response;
    int32_t n = 0;
    for (int32_t i = 0; i < req->dirs_n; i++) n += req->dirs[i].topics_n > 0 ? req->dirs[i].topics_n : 0;
    /* as Kafka: ALTER on the cluster, else every partition refused */
    bool allowed = kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER);
    out->results = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->results);
    for (int32_t i = 0; i < req->dirs_n; i++) {
        const kiq_alter_replica_log_dirs_request_dirs_t *dir = &req->dirs[i];
        int d = find_dir(b, dir->path);
        for (int32_t j = 0; j < dir->topics_n; j++) {
            const kiq_alter_replica_log_dirs_request_dirs_topics_t *t = &dir->topics[j];
            kiq_alter_replica_log_dirs_response_results_t *res = &out->results[out->results_n++];
            kiq_alter_replica_log_dirs_response_results_init(res);
            res->topic_name = t->name;
            int32_t np = t->partitions_n > 0 ? t->partitions_n : 0;
            res->partitions_n = np;
            res->partitions = kiq_arena_calloc(&r->arena, (size_t)(np ? np : 1), sizeof *res->partitions);
            kiq_topic_t *topic = kiq_topics_get(b->topics, t->name);
            for (int32_t k = 0; k < np; k++) {
                kiq_alter_replica_log_dirs_response_results_partitions_t *po = &res->partitions[k];
                kiq_alter_replica_log_dirs_response_results_partitions_init(po);
                po->partition_index = t->partitions[k];
                if (!allowed) {
                    po->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
                    continue;
                }
                po->error_code = move_one(b, r, d, topic, t->name, t->partitions[k]);
                if (po->error_code && po->error_code != KIQ_ERR_REPLICA_NOT_AVAILABLE &&
                    po->error_code != KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION)
                    KIQ_WARN_LIMITED("[KafkaIQ broker %d] AlterReplicaLogDirs " KIQ_STR_FMT "-%d to " KIQ_STR_FMT
                                     ": %s",
                                     b->node_id, KIQ_STR_ARG(t->name), t->partitions[k], KIQ_STR_ARG(dir->path),
                                     kiq_error_name(po->error_code));
            }
            kiq_topic_unref(topic);
        }
    }
    return KIQ_HANDLER_RESPOND;
}
