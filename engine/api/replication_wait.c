/* Answers waiting for a coordinator's write to replicate; see replication_wait.h. */
#include "api/replication_wait.h"

#include <string.h>

#include "core/clock.h"

/* A request waiting for its writes' replication; in the request's arena. */
typedef struct replication_wait {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    void *resp;
    kiq_api_replication_need_t *needs;
    int n;
    uint64_t *keys; /* the partitions', what it waits on */
    void (*timed_out)(void *resp);
} replication_wait_t;

static bool replicated(kiq_broker_t *b, const kiq_api_replication_need_t *w)
{
    if (w->need < 0) return true;
    kiq_topic_t *t = kiq_topics_get(b->topics, KIQ_STR(w->topic));
    kiq_partition_log_t *log = t && w->partition >= 0 && w->partition < t->npartitions ? t->partitions[w->partition]->log
                                                                                       : NULL;
    bool done = !log || kiq_partition_log_high_watermark(log) >= w->need;
    kiq_topic_unref(t);
    return done;
}

static bool all_replicated(kiq_broker_t *b, const kiq_api_replication_need_t *needs, int n)
{
    for (int i = 0; i < n; i++)
        if (!replicated(b, &needs[i])) return false;
    return true;
}

static bool try_complete(kiq_delayed_op_t *op, bool expired)
{
    replication_wait_t *w = (replication_wait_t *)op;
    bool done = all_replicated(w->b, w->needs, w->n);
    if (!done && !expired) return false;
    if (!done) w->timed_out(w->resp);
    kiq_request_respond(w->r, w->resp);
    return true;
}

int kiq_api_respond_when_all_replicated(kiq_broker_t *b, kiq_request_t *r, void *resp,
                                        const kiq_api_replication_need_t *needs, int n, int64_t timeout_ms,
                                        void (*timed_out)(void *resp))
{
    if (all_replicated(b, needs, n)) return KIQ_HANDLER_RESPOND;
    replication_wait_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    w->op.deadline_ns = kiq_clock_mono_ns() + timeout_ms * 1000000;
    w->op.kind = KIQ_DELAYED_COMMIT;
    w->op.try_complete = try_complete;
    w->needs = kiq_arena_alloc(&r->arena, (size_t)n * sizeof *w->needs);
    w->keys = kiq_arena_alloc(&r->arena, (size_t)n * sizeof *w->keys);
    memcpy(w->needs, needs, (size_t)n * sizeof *needs);
    for (int i = 0; i < n; i++) w->keys[i] = kiq_purgatory_key(needs[i].topic, strlen(needs[i].topic), needs[i].partition);
    w->op.keys = w->keys;
    w->op.nkeys = n;
    w->b = b;
    w->r = r;
    w->resp = resp;
    w->n = n;
    w->timed_out = timed_out;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &w->op);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_respond_when_replicated(kiq_broker_t *b, kiq_request_t *r, void *resp, const char *topic,
                                    int32_t partition, int64_t need, int64_t timeout_ms,
                                    void (*timed_out)(void *resp))
{
    kiq_api_replication_need_t one = {topic, partition, need};
    return kiq_api_respond_when_all_replicated(b, r, resp, &one, 1, timeout_ms, timed_out);
}
