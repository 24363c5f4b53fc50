/* Answers waiting for a coordinator's write to replicate; see replication_wait.h.
 * A write made in a leadership that ended before it replicated is answered
 * as timed out: the new leader may have truncated it. */
#include "api/replication_wait.h"

#include <string.h>

#include "core/clock.h"
#include "replica/leader.h"
#include "replica/partition_replica.h"

/* A request waiting for its writes' replication; in the request's arena. */
typedef struct replication_wait {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    void *resp;
    kiq_api_replication_need_t *needs;
    int32_t *epochs; /* the leader epoch each write was made in */
    int n;
    uint64_t *keys; /* the partitions', what it waits on */
    void (*timed_out)(void *resp);
} replication_wait_t;

/* The leader epoch of a partition led here, -1 when it is not. */
static int32_t led_epoch(kiq_broker_t *b, const char *topic, int32_t partition)
{
    kiq_topic_t *t = kiq_topics_get(b->topics, KIQ_STR(topic));
    kiq_partition_t *p;
    kiq_partition_log_t *log;
    int32_t epoch = kiq_replica_led_partition(t, partition, -1, &p, &log) == KIQ_ERR_NONE
                        ? kiq_partition_replica_leader_epoch(p->replica)
                        : -1;
    kiq_topic_unref(t);
    return epoch;
}

/* 1: replicated; 0: not yet; -1: lost (the leadership it was written in
 * ended, so a high watermark past it may cover another leader's data). */
static int replicated(kiq_broker_t *b, const kiq_api_replication_need_t *w, int32_t epoch)
{
    if (w->need < 0) return 1;
    kiq_topic_t *t = kiq_topics_get(b->topics, KIQ_STR(w->topic));
    kiq_partition_log_t *log = t && w->partition >= 0 && w->partition < t->npartitions ? t->partitions[w->partition]->log
                                                                                       : NULL;
    int done = !log || kiq_partition_log_high_watermark(log) >= w->need;
    kiq_topic_unref(t);
    if (epoch >= 0 && led_epoch(b, w->topic, w->partition) != epoch) return -1;
    return done;
}

/* 1 when every write is replicated, -1 when one is lost, else 0. */
static int all_replicated(kiq_broker_t *b, const kiq_api_replication_need_t *needs, const int32_t *epochs, int n)
{
    int all = 1;
    for (int i = 0; i < n; i++) {
        int r = replicated(b, &needs[i], epochs ? epochs[i] : -1);
        if (r < 0) return -1;
        if (r == 0) all = 0;
    }
    return all;
}

static bool try_complete(kiq_delayed_op_t *op, bool expired)
{
    replication_wait_t *w = (replication_wait_t *)op;
    int done = all_replicated(w->b, w->needs, w->epochs, w->n);
    if (done == 0 && !expired) return false;
    if (done != 1) w->timed_out(w->resp);
    kiq_request_respond(w->r, w->resp);
    return true;
}

int kiq_api_respond_when_all_replicated(kiq_broker_t *b, kiq_request_t *r, void *resp,
                                        const kiq_api_replication_need_t *needs, int n, int64_t timeout_ms,
                                        void (*timed_out)(void *resp))
{
    if (all_replicated(b, needs, NULL, n) == 1) return KIQ_HANDLER_RESPOND;
    replication_wait_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    w->op.deadline_ns = kiq_clock_mono_ns() + timeout_ms * 1000000;
    w->op.kind = KIQ_DELAYED_COMMIT;
    w->op.try_complete = try_complete;
    w->needs = kiq_arena_alloc(&r->arena, (size_t)n * sizeof *w->needs);
    w->keys = kiq_arena_alloc(&r->arena, (size_t)n * sizeof *w->keys);
    w->epochs = kiq_arena_alloc(&r->arena, (size_t)n * sizeof *w->epochs);
    memcpy(w->needs, needs, (size_t)n * sizeof *needs);
    for (int i = 0; i < n; i++) w->epochs[i] = needs[i].need >= 0 ? led_epoch(b, needs[i].topic, needs[i].partition) : -1;
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
