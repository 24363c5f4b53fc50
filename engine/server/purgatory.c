#include "server/purgatory.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"

struct kiq_purgatory {
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;
    kiq_delayed_op_t *ops;
    int count;
    bool poked, stopping, started;
    pthread_t thread;
};

kiq_purgatory_t *kiq_purgatory_new(void)
{
    kiq_purgatory_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->lock, NULL);
    kiq_cond_init_monotonic(&p->cond);
    return p;
}

/* Runs every parked op once; those that finish leave the list. Called on the
 * purgatory thread without the lock held, on a list taken out of it. */
static kiq_delayed_op_t *run_ops(kiq_delayed_op_t *ops, bool force, int *finished)
{
    int64_t now = kiq_clock_mono_ns();
    kiq_delayed_op_t *keep = NULL;
    *finished = 0;
    while (ops) {
        kiq_delayed_op_t *op = ops;
        ops = op->next;
        op->next = NULL;
        if (op->try_complete(op, force || now >= op->deadline_ns)) {
            (*finished)++;
        } else {
            op->next = keep;
            keep = op;
        }
    }
    return keep;
}

static void *purgatory_main(void *arg)
{
    kiq_purgatory_t *p = arg;
    kiq_say_thread_name("purgatory");
    pthread_mutex_lock(&p->lock);
    for (;;) {
        int64_t next = INT64_MAX;
        for (kiq_delayed_op_t *op = p->ops; op; op = op->next)
            if (op->deadline_ns < next) next = op->deadline_ns;
        if (!p->poked && !p->stopping && kiq_clock_mono_ns() < next) {
            if (next == INT64_MAX)
                pthread_cond_wait(&p->cond, &p->lock);
            else
                kiq_cond_wait_until(&p->cond, &p->lock, next);
            continue;
        }
        bool stopping = p->stopping;
        p->poked = false;
        kiq_delayed_op_t *ops = p->ops;
        p->ops = NULL;
        pthread_mutex_unlock(&p->lock);
        int finished;
        kiq_delayed_op_t *keep = run_ops(ops, stopping, &finished);
        pthread_mutex_lock(&p->lock);
        p->count -= finished;
        while (keep) {
            kiq_delayed_op_t *op = keep;
            keep = op->next;
            op->next = p->ops;
            p->ops = op;
        }
        if (stopping && !p->ops) break;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int kiq_purgatory_start(kiq_purgatory_t *p)
{
    if (pthread_create(&p->thread, NULL, purgatory_main, p) != 0)
        return kiq_error_errno("purgatory: cannot start thread");
    p->started = true;
    return 0;
}

void kiq_purgatory_stop(kiq_purgatory_t *p)
{
    if (!p || !p->started) return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    p->started = false;
}

void kiq_purgatory_free(kiq_purgatory_t *p)
{
    if (!p) return;
    kiq_purgatory_stop(p);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
}

void kiq_purgatory_park(kiq_purgatory_t *p, kiq_delayed_op_t *op)
{
    pthread_mutex_lock(&p->lock);
    /* once stopping, the thread may already have drained its list */
    if (p->stopping) {
        pthread_mutex_unlock(&p->lock);
        op->try_complete(op, true);
        return;
    }
    op->next = p->ops;
    p->ops = op;
    p->count++;
    /* data may have arrived between the handler's read and now */
    p->poked = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

void kiq_purgatory_poke(void *purgatory)
{
    kiq_purgatory_t *p = purgatory;
    pthread_mutex_lock(&p->lock);
    if (p->count > 0) {
        p->poked = true;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
}

int kiq_purgatory_size(kiq_purgatory_t *p)
{
    pthread_mutex_lock(&p->lock);
    int n = p->count;
    pthread_mutex_unlock(&p->lock);
    return n;
}
