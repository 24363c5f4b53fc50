#include "server/broker_set.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "server/broker.h"

#define MAX_BROKERS 64
#define MAX_QUEUED 64

const char *const kiq_broker_op_names[KIQ__BROKER_OPS] = {"kill", "stop", "restart", "pause", "resume"};

typedef struct member {
    kiq_broker_t *b;
    int32_t id;
    bool paused;
    int pending;          /* queued operations */
    bool busy;            /* the supervisor is stopping or starting it */
    int last;             /* the last operation done, -1: none */
    char error[256];      /* why the last one failed, "" when it did not */
} member_t;

struct kiq_broker_set {
    member_t m[MAX_BROKERS];
    int n;
    kiq_worker_t *supervisor;
    pthread_mutex_t lock; /* guards the members' paused..error, the queue and cut */
    struct {
        int32_t id;
        enum kiq_broker_op op;
    } queue[MAX_QUEUED];
    int head, count;
    bool cut[MAX_BROKERS][MAX_BROKERS]; /* [leader][follower] by member index */
};

int kiq_broker_op_parse(const char *name)
{
    for (int i = 0; i < KIQ__BROKER_OPS; i++)
        if (strcmp(name, kiq_broker_op_names[i]) == 0) return i;
    return -1;
}

static member_t *member(kiq_broker_set_t *s, int32_t id)
{
    for (int i = 0; i < s->n; i++)
        if (s->m[i].id == id) return &s->m[i];
    return NULL;
}

/* Follower f's fetching from every other broker as its pause and links
 * say; its Raft traffic too (with a voter cut either way, none). */
static void apply_links(kiq_broker_set_t *s, int f)
{
    kiq_broker_pause_quorum(s->m[f].b, s->m[f].paused);
    for (int l = 0; l < s->n; l++) {
        if (l == f) continue;
        kiq_broker_pause_fetching(s->m[f].b, s->m[l].id, s->m[f].paused || s->cut[l][f]);
        kiq_broker_cut_quorum(s->m[f].b, s->m[l].id, s->cut[l][f] || s->cut[f][l]);
    }
}

/* The supervisor: one queued operation a round, outside the lock. */
static int64_t supervise(void *ctx)
{
    kiq_broker_set_t *s = ctx;
    pthread_mutex_lock(&s->lock);
    if (!s->count) {
        pthread_mutex_unlock(&s->lock);
        return -1;
    }
    int32_t id = s->queue[s->head].id;
    enum kiq_broker_op op = s->queue[s->head].op;
    s->head = (s->head + 1) % MAX_QUEUED;
    s->count--;
    member_t *m = member(s, id);
    m->busy = true;
    pthread_mutex_unlock(&s->lock);
    int rc = 0;
    if (op == KIQ_BROKER_KILL) {
        kiq_broker_kill(m->b);
    } else {
        kiq_broker_stop(m->b);
        if (op == KIQ_BROKER_RESTART && (rc = kiq_broker_start(m->b)) != 0) kiq_broker_kill(m->b);
    }
    pthread_mutex_lock(&s->lock);
    m->pending--;
    m->busy = false;
    m->last = op;
    snprintf(m->error, sizeof m->error, "%s", rc ? kiq_error_get() : "");
    if (op == KIQ_BROKER_RESTART && rc == 0) { /* a new start: not paused, its links as they are */
        m->paused = false;
        apply_links(s, (int)(m - s->m));
    }
    pthread_mutex_unlock(&s->lock);
    if (rc) KIQ_WARN("broker %d: restart failed: %s", id, m->error);
    return 0;
}

int kiq_broker_set_on_controller(kiq_broker_set_t *s, int (*fn)(struct kiq_controller *c, void *arg), void *arg,
                                 int *result)
{
    pthread_mutex_lock(&s->lock);
    struct kiq_controller *ctl = NULL;
    for (int i = 0; i < s->n && !ctl; i++)
        if (!s->m[i].busy) ctl = kiq_broker_active_controller(s->m[i].b);
    if (ctl) *result = fn(ctl, arg);
    pthread_mutex_unlock(&s->lock);
    return ctl ? 0 : kiq_error_set("no controller runs in this process now");
}

kiq_broker_set_t *kiq_broker_set_new(void)
{
    kiq_broker_set_t *s = calloc(1, sizeof *s);
    if (!s) return kiq_error_set("out of memory"), NULL;
    pthread_mutex_init(&s->lock, NULL);
    kiq_worker_config_t wc = {.name = "supervisor", .round = supervise, .ctx = s, .first_delay_ms = -1};
    if (!(s->supervisor = kiq_worker_start(&wc))) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

int kiq_broker_set_add(kiq_broker_set_t *s, kiq_broker_t *b)
{
    int32_t id = b->node_id;
    if (s->n == MAX_BROKERS) return kiq_error_set("at most %d brokers in a process", MAX_BROKERS);
    if (member(s, id)) return kiq_error_set("broker %d is already in the set", id);
    s->m[s->n++] = (member_t){.b = b, .id = id, .last = -1};
    b->set = s;
    return 0;
}

void kiq_broker_set_free(kiq_broker_set_t *s)
{
    if (!s) return;
    kiq_worker_stop(s->supervisor);
    for (int i = 0; i < s->n; i++) s->m[i].b->set = NULL;
    pthread_mutex_destroy(&s->lock);
    free(s);
}

kiq_broker_t *kiq_broker_set_find(kiq_broker_set_t *s, int32_t id)
{
    member_t *m = member(s, id);
    return m ? m->b : NULL;
}

int kiq_broker_set_do(kiq_broker_set_t *s, int32_t id, enum kiq_broker_op op)
{
    member_t *m = member(s, id);
    if (!m) return kiq_error_set("no broker %d in this process", id);
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    if (op == KIQ_BROKER_PAUSE || op == KIQ_BROKER_RESUME) {
        m->paused = op == KIQ_BROKER_PAUSE;
        kiq_broker_pause_heartbeats(m->b, m->paused);
        apply_links(s, (int)(m - s->m));
        m->last = op;
    } else if (s->count == MAX_QUEUED) {
        rc = kiq_error_set("%d operations are queued already", MAX_QUEUED);
    } else {
        s->queue[(s->head + s->count++) % MAX_QUEUED].id = id;
        s->queue[(s->head + s->count - 1) % MAX_QUEUED].op = op;
        m->pending++;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc == 0 && op != KIQ_BROKER_PAUSE && op != KIQ_BROKER_RESUME) kiq_worker_poke(s->supervisor);
    return rc;
}

int kiq_broker_set_cut(kiq_broker_set_t *s, int32_t from, int32_t to, bool cut)
{
    member_t *l = member(s, from), *f = member(s, to);
    if (!l || !f || l == f)
        return kiq_error_set(l && f ? "a link joins two brokers" : "no broker %d in this process", l ? to : from);
    pthread_mutex_lock(&s->lock);
    s->cut[l - s->m][f - s->m] = cut;
    apply_links(s, (int)(f - s->m));
    apply_links(s, (int)(l - s->m));
    pthread_mutex_unlock(&s->lock);
    return 0;
}

void kiq_broker_set_view(kiq_broker_set_t *s, const kiq_view_t *v)
{
    pthread_mutex_lock(&s->lock);
    v->open(v->ctx, "brokers", true);
    for (int i = 0; i < s->n; i++) {
        const member_t *m = &s->m[i];
        v->open(v->ctx, NULL, false);
        v->number(v->ctx, "id", m->id);
        v->boolean(v->ctx, "running", m->b->running);
        v->boolean(v->ctx, "ready", m->b->running && kiq_broker_ready(m->b));
        v->boolean(v->ctx, "paused", m->paused);
        v->number(v->ctx, "pending", m->pending);
        if (m->last >= 0) v->string(v->ctx, "last", kiq_broker_op_names[m->last]);
        if (m->error[0]) v->string(v->ctx, "error", m->error);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    v->open(v->ctx, "links", true);
    for (int l = 0; l < s->n; l++)
        for (int f = 0; f < s->n; f++) {
            if (!s->cut[l][f]) continue;
            v->open(v->ctx, NULL, false);
            v->number(v->ctx, "from", s->m[l].id);
            v->number(v->ctx, "to", s->m[f].id);
            v->close(v->ctx);
        }
    v->close(v->ctx);
    pthread_mutex_unlock(&s->lock);
}

const char *kiq_broker_set_failed(kiq_broker_set_t *s, int32_t *id)
{
    const char *why = NULL;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->n && !why; i++)
        if (!s->m[i].busy && (why = kiq_broker_failed(s->m[i].b))) *id = s->m[i].id;
    pthread_mutex_unlock(&s->lock);
    return why;
}
