/* A background thread that runs one job round after round until stopped
 * (Kafka's scheduler tasks: retention, flushing, cleaning, the ISR check,
 * heartbeats, group timers): each round says how long to sleep before the
 * next, any thread may poke it to run sooner, and stopping wakes it at
 * once and joins it. The sleep is a timed wait by the monotonic clock
 * (core/cond.h), so wall-clock jumps move nothing.
 *
 * The worker is owned by whoever starts it; kiq_worker_poke may be called
 * from any thread (including the worker's own) until kiq_worker_stop. */
#ifndef KIQ_CORE_WORKER_H
#define KIQ_CORE_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct kiq_worker kiq_worker_t;

typedef struct kiq_worker_config {
    const char *name; /* the thread's name in log lines (copied) */
    /* One round, on the worker's thread: returns how many ms to sleep
     * before the next (< 0: wait for a poke or the stop). */
    int64_t (*round)(void *ctx);
    void *ctx;
    int64_t first_delay_ms; /* before the first round; 0: at once */
} kiq_worker_config_t;

/* Starts the thread; NULL with the reason in the error slot. */
kiq_worker_t *kiq_worker_start(const kiq_worker_config_t *cfg);
/* Any thread: the next round runs now (or, if one is running, right after it). */
void kiq_worker_poke(kiq_worker_t *w);
/* Wakes the worker, waits for a round in progress to end, joins the
 * thread, frees. Not from the worker's own thread. NULL is fine. */
void kiq_worker_stop(kiq_worker_t *w);

#endif
