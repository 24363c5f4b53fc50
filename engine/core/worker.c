#include "core/worker.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"

struct kiq_worker {
    kiq_worker_config_t cfg;
    char name[32];
    pthread_t thread;
    pthread_mutex_t mu; /* guards poked and stopping */
    pthread_cond_t wake;
    bool poked, stopping;
};

static void *worker_main(void *arg)
{
    kiq_worker_t *w = arg;
    kiq_say_thread_name(w->name);
    int64_t sleep_ms = w->cfg.first_delay_ms;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        int64_t deadline = sleep_ms >= 0 ? kiq_clock_mono_ns() + sleep_ms * 1000000 : INT64_MAX;
        while (!w->stopping && !w->poked && kiq_clock_mono_ns() < deadline) {
            if (deadline == INT64_MAX)
                pthread_cond_wait(&w->wake, &w->mu);
            else
                kiq_cond_wait_until(&w->wake, &w->mu, deadline);
        }
        if (w->stopping) break;
        w->poked = false;
        pthread_mutex_unlock(&w->mu);
        sleep_ms = w->cfg.round(w->cfg.ctx);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

kiq_worker_t *kiq_worker_start(const kiq_worker_config_t *cfg)
{
    kiq_worker_t *w = calloc(1, sizeof *w);
    if (!w) return kiq_error_set("out of memory"), NULL;
    w->cfg = *cfg;
    snprintf(w->name, sizeof w->name, "%s", cfg->name);
    pthread_mutex_init(&w->mu, NULL);
    kiq_cond_init_monotonic(&w->wake);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        kiq_error_errno("cannot start the %s thread", w->name);
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void kiq_worker_poke(kiq_worker_t *w)
{
    pthread_mutex_lock(&w->mu);
    w->poked = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

void kiq_worker_stop(kiq_worker_t *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
