/* Answers waiting for a coordinator's write to replicate; see replication_wait.h. */
#include "api/replication_wait.h"

#include <string.h>

#include "core/clock.h"

/* A request waiting for its write's replication; in the request's arena. */
typedef struct replication_wait {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    void *resp;
    const char *topic;
    int32_t partition;
    int64_t need; /* the high watermark that covers the write */
    uint64_t key; /* the partition's, what it waits on */
    void (*timed_out)(void *resp);
} replication_wait_t;

static bool replicated(kiq_broker_t *b, const char *topic, int32_t partition, int64_t need)
{
    kiq_topic_t *t = kiq_topics_get(b->topics, KIQ_STR(topic));
    kiq_partition_log_t *log = t && partition < t->npartitions ? t->partitions[partition]->log : NULL;
    bool done = !log || kiq_partition_log_high_watermark(log) >= need;
    kiq_topic_unref(t);
    return done;
}

static bool try_complete(kiq_delayed_op_t *op, bool expired)
{
    replication_wait_t *w = (replication_wait_t *)op;
    bool done = replicated(w->b, w->topic, w->partition, w->need);
    if (!done && !expired) return false;
    if (!done) w->timed_out(w->resp);
    kiq_request_respond(w->r, w->resp);
    return true;
}

int kiq_api_respond_when_replicated(kiq_broker_t *b, kiq_request_t *r, void *resp, const char *topic,
                                    int32_t partition, int64_t need, int64_t timeout_ms,
                                    void (*timed_out)(void *resp))
{
    if (need < 0 || replicated(b, topic, partition, need)) return KIQ_HANDLER_RESPOND;
    replication_wait_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    w->op.deadline_ns = kiq_clock_mono_ns() + timeout_ms * 1000000;
    w->op.kind = KIQ_DELAYED_COMMIT;
    w->op.try_complete = try_complete;
    w->key = kiq_purgatory_key(topic, strlen(topic), partition);
    w->op.keys = &w->key;
    w->op.nkeys = 1;
    w->b = b;
    w->r = r;
    w->resp = resp;
    w->topic = topic;
    w->partition = partition;
    w->need = need;
    w->timed_out = timed_out;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &w->op);
    return KIQ_HANDLER_PARKED;
}
