#include "log/log_flusher.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"

/* The fields below the worker belong to its thread. */
struct kiq_log_flusher {
    kiq_topics_t *topics;
    kiq_worker_t *worker;
    /* What the last checkpoint written held (a sum over all partitions,
     * enough to notice that some recovery point moved) and when. */
    int64_t saved_sum;
    int64_t saved_at;
    /* When the active segment files were last checked. */
    int64_t checked_at;
};

int kiq_log_flusher_run(kiq_topics_t *topics, int64_t now_ms)
{
    int count, flushed = 0;
    int32_t broker;
    const kiq_observers_t *observers = kiq_topics_observers(topics, &broker);
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    if (!list) return 0;
    for (int i = 0; i < count; i++) {
        if (atomic_load(&list[i]->deleted)) continue;
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&list[i]->partitions[p]->log);
            if (!l) continue; /* not hosted here */
            kiq_log_flush_t done;
            int rc = kiq_partition_log_flush_if_due(l, now_ms, &done);
            if (rc < 0) KIQ_ERROR("flushing %s-%d: %s", list[i]->name, p, kiq_error_get());
            if (rc > 0) flushed++;
            if (rc > 0) kiq_log_flush_announce(observers, broker, NULL, list[i]->name, p, &done, KIQ_EVENT_FLUSHER);
        }
    }
    kiq_topics_list_free(list, count);
    return flushed;
}

void kiq_log_flush_announce(const kiq_observers_t *observers, int32_t broker, const void *request, const char *topic,
                            int32_t partition, const kiq_log_flush_t *f, int flags)
{
    if (!kiq_observers_want(observers, KIQ_POINT_FLUSHED)) return;
    kiq_event_t e = kiq_event(KIQ_POINT_FLUSHED, broker);
    e.t_ns = f->ended_ns;
    e.request = request;
    e.topic = topic;
    e.partition = partition;
    e.before = f->from;
    e.after = f->to;
    int64_t us = (f->ended_ns - f->started_ns) / 1000;
    e.extra = us > INT32_MAX ? INT32_MAX : (int32_t)us;
    e.flags = flags;
    e.records = f->messages;
    kiq_observers_emit(observers, &e);
}

static int64_t recovery_point_sum(kiq_topics_t *topics)
{
    int count;
    int64_t sum = 0;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    if (!list) return -1;
    for (int i = 0; i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&list[i]->partitions[p]->log);
            if (l) sum += kiq_partition_log_recovery_point(l) + 1; /* +1: hosting one changes the sum */
        }
    kiq_topics_list_free(list, count);
    return sum;
}

static void check_active_files(kiq_topics_t *topics)
{
    int count;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    for (int i = 0; list && i < count; i++) {
        if (atomic_load(&list[i]->deleted)) continue;
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&list[i]->partitions[p]->log);
            if (l) kiq_partition_log_check_files(l, false);
        }
    }
    if (list) kiq_topics_list_free(list, count);
}

static int64_t flusher_round(void *arg)
{
    kiq_log_flusher_t *f = arg;
    int64_t now = kiq_partition_log_now_ms();
    kiq_log_flusher_run(f->topics, now);
    if (now - f->checked_at >= KIQ_LOG_FLUSH_CHECKPOINT_MS) {
        check_active_files(f->topics);
        f->checked_at = now;
    }
    if (now - f->saved_at >= KIQ_LOG_FLUSH_CHECKPOINT_MS) {
        int64_t sum = recovery_point_sum(f->topics);
        if (sum != f->saved_sum) {
            if (kiq_topics_checkpoint_recovery_points(f->topics) == 0)
                f->saved_sum = sum;
            else
                KIQ_WARN("cannot save the recovery points: %s", kiq_error_get());
            f->saved_at = now;
        }
    }
    return KIQ_LOG_FLUSH_TICK_MS;
}

kiq_log_flusher_t *kiq_log_flusher_new(kiq_topics_t *topics)
{
    kiq_log_flusher_t *f = calloc(1, sizeof *f);
    if (!f) {
        kiq_error_set("out of memory");
        return NULL;
    }
    f->topics = topics;
    f->saved_sum = -1;
    f->saved_at = f->checked_at = INT64_MIN / 2;
    kiq_worker_config_t wc = {"log-flusher", flusher_round, f, KIQ_LOG_FLUSH_TICK_MS};
    if (!(f->worker = kiq_worker_start(&wc))) {
        free(f);
        return NULL;
    }
    return f;
}

void kiq_log_flusher_free(kiq_log_flusher_t *f)
{
    if (!f) return;
    kiq_worker_stop(f->worker);
    free(f);
}
