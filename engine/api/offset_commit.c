/* OffsetCommit: committed offsets go to __consumer_offsets, then to the
 * coordinator's cache; the answer waits until the partition's high
 * watermark passes them (at once when the coordinator is alone in the
 * ISR), so an acknowledged commit survives a coordinator failover. A
 * commit not replicated within offsets.commit.timeout.ms is answered
 * COORDINATOR_NOT_AVAILABLE, as Kafka does, and the client retries. */
#include "api/api.h"
#include "core/clock.h"
#include "group/group_coordinator.h"

/* A commit waiting for its replication; in the request's arena. */
typedef struct commit_wait {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    kiq_offset_commit_response_t *resp;
    int32_t partition;
    int64_t need; /* the high watermark that covers the commit */
    uint64_t key; /* the partition's, what it waits on */
} commit_wait_t;

static bool replicated(kiq_broker_t *b, int32_t partition, int64_t need)
{
    kiq_topic_t *t = kiq_topics_get(b->topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    kiq_partition_log_t *log = t && partition < t->npartitions ? t->partitions[partition]->log : NULL;
    bool done = !log || kiq_partition_log_high_watermark(log) >= need;
    kiq_topic_unref(t);
    return done;
}

static bool try_complete(kiq_delayed_op_t *op, bool expired)
{
    commit_wait_t *w = (commit_wait_t *)op;
    bool done = replicated(w->b, w->partition, w->need);
    if (!done && !expired) return false;
    if (!done) {
        for (int32_t i = 0; i < w->resp->topics_n; i++)
            for (int32_t j = 0; j < w->resp->topics[i].partitions_n; j++)
                if (!w->resp->topics[i].partitions[j].error_code)
                    w->resp->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    kiq_request_respond(w->r, w->resp);
    return true;
}

int kiq_api_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    int32_t partition = -1;
    int64_t need = -1;
    kiq_group_commit_offsets(b->groups, r, req, resp, &partition, &need);
    if (need < 0 || replicated(b, partition, need)) return KIQ_HANDLER_RESPOND;
    commit_wait_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    w->op.deadline_ns = kiq_clock_mono_ns() + kiq_config_int(b->config, KIQ_CFG_OFFSETS_COMMIT_TIMEOUT_MS) * 1000000;
    w->op.kind = KIQ_DELAYED_COMMIT;
    w->op.try_complete = try_complete;
    w->key = kiq_purgatory_key(KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC), partition);
    w->op.keys = &w->key;
    w->op.nkeys = 1;
    w->b = b;
    w->r = r;
    w->resp = resp;
    w->partition = partition;
    w->need = need;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &w->op);
    return KIQ_HANDLER_PARKED;
}
