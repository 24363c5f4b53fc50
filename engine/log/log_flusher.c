#include "log/log_flusher.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "core/error.h"
#include "core/say.h"

/* stop is guarded by mu; the other fields belong to the worker thread
 * once it runs. */
struct kiq_log_flusher {
    kiq_topics_t *topics;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC, signalled to stop */
    bool stop;
    pthread_t thread;
    /* What the last checkpoint written held (a sum over all partitions,
     * enough to notice that some recovery point moved) and when. */
    int64_t saved_sum;
    int64_t saved_at;
};

int kiq_log_flusher_run(kiq_topics_t *topics, int64_t now_ms)
{
    int count, flushed = 0;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    if (!list) return 0;
    for (int i = 0; i < count; i++) {
        if (atomic_load(&list[i]->deleted)) continue;
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&list[i]->partitions[p]->log);
            if (!l) continue; /* not hosted here */
            int rc = kiq_partition_log_flush_if_due(l, now_ms);
            if (rc < 0) KIQ_ERROR("flushing %s-%d: %s", list[i]->name, p, kiq_error_get());
            if (rc > 0) flushed++;
        }
    }
    kiq_topics_list_free(list, count);
    return flushed;
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

static void *flusher_main(void *arg)
{
    kiq_log_flusher_t *f = arg;
    kiq_say_thread_name("log-flusher");
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)KIQ_LOG_FLUSH_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = 0;
        while (!f->stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&f->cond, &f->mu, &until);
        if (f->stop) break;
        pthread_mutex_unlock(&f->mu);
        int64_t now = kiq_partition_log_now_ms();
        kiq_log_flusher_run(f->topics, now);
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
        pthread_mutex_lock(&f->mu);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
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
    f->saved_at = INT64_MIN / 2;
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&f->thread, NULL, flusher_main, f) != 0) {
        kiq_error_errno("cannot start the log flusher thread");
        pthread_cond_destroy(&f->cond);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
}

void kiq_log_flusher_free(kiq_log_flusher_t *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_signal(&f->cond);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
