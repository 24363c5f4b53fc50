#include "http/wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "controller/metadata_cache.h"
#include "core/arena.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/worker.h"
#include "group/group_coordinator.h"
#include "server/broker_set.h"
#include "server/broker_state.h"

#define DEFAULT_TIMEOUT_MS 10000
#define MAX_TIMEOUT_MS 600000
#define MAX_WAITERS 256
#define LOOK_EVERY_MS 5

enum cond_kind { BROKER_STATE, LEADER, ISR, HIGH_WATERMARK, LOG_START_OFFSET, GROUP_STATE };

typedef struct cond {
    enum cond_kind kind;
    int32_t broker;      /* BROKER_STATE */
    char topic[250];     /* LEADER, ISR, HIGH_WATERMARK */
    int32_t partition;
    int64_t n;           /* LEADER: the id, -1 any; ISR: exactly; HIGH_WATERMARK, LOG_START_OFFSET: at least */
    char name[256];      /* GROUP_STATE: the group */
    char state[32];      /* BROKER_STATE, GROUP_STATE */
    char what[400];      /* the condition in words */
} cond_t;

/* One waiting request: the polling thread's, then the worker's from the
 * list until resumed (waits.lock guards the list and `done`). */
struct kiq_http_waiter {
    kiq_http_waiter_t *next;
    struct MHD_Connection *c;
    cond_t cond;
    int64_t began_ns, deadline_ns;
    bool done;
    unsigned status;
    json_t *answer;
};

struct kiq_http_waits {
    kiq_broker_t *b;
    kiq_worker_t *worker;
    pthread_mutex_t lock;
    kiq_http_waiter_t *list;
    int n;
};

/* ---- conditions ---- */

static kiq_broker_t *broker_of(kiq_broker_t *b, int32_t id)
{
    if (b->set) return kiq_broker_set_find(b->set, id);
    return id == b->node_id ? b : NULL;
}

/* The partition as this broker's metadata says (alone: led here when it
 * has it). */
static int partition_json(void *arg, const kiq_view_t *v);

static bool partition_of(kiq_broker_t *b, const cond_t *c, kiq_cached_partition_t *p)
{
    if (b->cluster) return kiq_metadata_cache_partition(b->metadata, c->topic, strlen(c->topic), c->partition, p);
    const void *args[2] = {b, c};
    json_t *j = kiq_http_json_of(partition_json, (void *)args);
    memset(p, 0, sizeof *p);
    p->leader = j ? b->node_id : -1;
    p->nisr = j ? 1 : 0;
    p->isr[0] = b->node_id;
    json_decref(j);
    return j != NULL;
}

static int partition_json(void *arg, const kiq_view_t *v)
{
    void **args = arg;
    const cond_t *c = args[1];
    return kiq_broker_partition_view(args[0], c->topic, c->partition, v);
}

/* The group's state on whichever broker of the process coordinates it. */
static bool group_state(kiq_broker_t *b, const char *group, char *out, size_t size)
{
    for (int32_t id = 0; id < 64; id++) {
        kiq_broker_t *o = b->set ? kiq_broker_set_find(b->set, id) : (id == 0 ? b : NULL);
        if (!o || !o->running || !o->groups) continue;
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_group_info_t *gs;
        int n = kiq_group_coordinator_snapshot(o->groups, &a, &gs);
        bool found = false;
        for (int i = 0; i < n && !found; i++)
            if (strcmp(gs[i].id, group) == 0) {
                snprintf(out, size, "%s", gs[i].state);
                found = true;
            }
        kiq_arena_reset(&a);
        if (found) return true;
    }
    return false;
}

/* Whether c holds now; *value what was seen (a new JSON value). */
static bool met(kiq_broker_t *b, const cond_t *c, json_t **value)
{
    kiq_cached_partition_t p;
    switch (c->kind) {
    case BROKER_STATE: {
        kiq_broker_t *o = broker_of(b, c->broker);
        bool running = o && o->running, ready = running && kiq_broker_ready(o);
        const char *now = ready ? "ready" : running ? "running" : "stopped";
        *value = json_string(now);
        return strcmp(now, c->state) == 0 || (strcmp(c->state, "running") == 0 && ready);
    }
    case LEADER:
    case ISR:
        if (!partition_of(b, c, &p)) {
            *value = json_null();
            return false;
        }
        if (c->kind == ISR) {
            *value = json_integer(p.nisr);
            return p.nisr == c->n;
        }
        *value = json_integer(p.leader);
        return p.leader >= 0 && (c->n < 0 || p.leader == c->n);
    case HIGH_WATERMARK:
    case LOG_START_OFFSET: {
        kiq_broker_t *leader = partition_of(b, c, &p) && p.leader >= 0 ? broker_of(b, p.leader) : NULL;
        const void *args[2] = {leader, c};
        json_t *j = leader ? kiq_http_json_of(partition_json, (void *)args) : NULL;
        json_t *hw = json_object_get(j, c->kind == HIGH_WATERMARK ? "high_watermark" : "log_start_offset");
        *value = hw ? json_incref(hw) : json_null();
        json_decref(j);
        return hw && json_integer_value(hw) >= c->n;
    }
    case GROUP_STATE: {
        char state[64];
        if (!group_state(b, c->name, state, sizeof state)) {
            *value = json_null();
            return false;
        }
        *value = json_string(state);
        return strcasecmp(state, c->state) == 0;
    }
    }
    return false;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static bool number(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long n = s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || n < lo || n > hi) return false;
    *out = n;
    return true;
}

/* The condition the query asks for; -1 with why. */
static int parse(struct MHD_Connection *mc, cond_t *c, int64_t *timeout_ms)
{
    memset(c, 0, sizeof *c);
    const char *broker = arg(mc, "broker"), *topic = arg(mc, "topic"), *group = arg(mc, "group"),
               *state = arg(mc, "state"), *timeout = arg(mc, "timeout_ms");
    int64_t n;
    *timeout_ms = DEFAULT_TIMEOUT_MS;
    if (timeout && !number(timeout, 0, MAX_TIMEOUT_MS, timeout_ms))
        return kiq_error_set("timeout_ms must be a whole number of ms up to %d", MAX_TIMEOUT_MS);
    if (broker) {
        if (!number(broker, 0, INT32_MAX, &n)) return kiq_error_set("broker must be a broker id");
        if (!state || (strcmp(state, "ready") && strcmp(state, "running") && strcmp(state, "stopped")))
            return kiq_error_set("a broker's state is ready, running or stopped");
        c->kind = BROKER_STATE;
        c->broker = (int32_t)n;
        snprintf(c->state, sizeof c->state, "%s", state);
        snprintf(c->what, sizeof c->what, "broker %d %s", c->broker, state);
        return 0;
    }
    if (group) {
        if (!state || !*state || strlen(state) >= sizeof c->state) return kiq_error_set("a group needs a state");
        if (strlen(group) >= sizeof c->name) return kiq_error_set("group id too long");
        c->kind = GROUP_STATE;
        snprintf(c->name, sizeof c->name, "%s", group);
        snprintf(c->state, sizeof c->state, "%s", state);
        snprintf(c->what, sizeof c->what, "group %s %s", group, state);
        return 0;
    }
    if (!topic || !*topic || strlen(topic) >= sizeof c->topic || !number(arg(mc, "partition"), 0, INT32_MAX, &n))
        return kiq_error_set("wait for broker=ID&state=..., group=G&state=..., or topic=T&partition=P with "
                             "leader=any|ID, isr=N, high_watermark=N or log_start_offset=N");
    snprintf(c->topic, sizeof c->topic, "%s", topic);
    c->partition = (int32_t)n;
    const char *leader = arg(mc, "leader"), *isr = arg(mc, "isr"), *hw = arg(mc, "high_watermark"),
               *lso = arg(mc, "log_start_offset");
    if (leader) {
        c->kind = LEADER;
        c->n = -1;
        if (strcmp(leader, "any") && !number(leader, 0, INT32_MAX, &c->n))
            return kiq_error_set("leader is any or a broker id");
        snprintf(c->what, sizeof c->what, "a leader (%s) for %s-%d", leader, topic, c->partition);
    } else if (isr) {
        c->kind = ISR;
        if (!number(isr, 1, 64, &c->n)) return kiq_error_set("isr is how many replicas in sync, 1 to 64");
        snprintf(c->what, sizeof c->what, "exactly %lld in sync for %s-%d", (long long)c->n, topic, c->partition);
    } else if (hw) {
        c->kind = HIGH_WATERMARK;
        if (!number(hw, 0, INT64_MAX, &c->n)) return kiq_error_set("high_watermark is an offset");
        snprintf(c->what, sizeof c->what, "high watermark %lld of %s-%d", (long long)c->n, topic, c->partition);
    } else if (lso) {
        c->kind = LOG_START_OFFSET;
        if (!number(lso, 0, INT64_MAX, &c->n)) return kiq_error_set("log_start_offset is an offset");
        snprintf(c->what, sizeof c->what, "log start offset %lld of %s-%d", (long long)c->n, topic, c->partition);
    } else {
        return kiq_error_set("for a partition, wait for leader=any|ID, isr=N, high_watermark=N or "
                             "log_start_offset=N");
    }
    return 0;
}

/* ---- waiters ---- */

static json_t *result(const kiq_http_waiter_t *wt, json_t *value, bool ok)
{
    int64_t waited = (kiq_clock_mono_ns() - wt->began_ns) / 1000000;
    json_t *j = json_pack("{sssbsIso}", "condition", wt->cond.what, "met", ok, "waited_ms", (json_int_t)waited,
                          "value", value ? value : json_null());
    if (j && !ok) {
        char msg[512];
        snprintf(msg, sizeof msg, "timed out after %lld ms waiting for %s", (long long)waited, wt->cond.what);
        json_object_set_new(j, "error", json_string(msg));
    }
    return j;
}

/* The worker: each waiter met or past its bound is answered and resumed. */
static int64_t look(void *ctx)
{
    kiq_http_waits_t *w = ctx;
    int64_t now = kiq_clock_mono_ns();
    struct MHD_Connection *resume[MAX_WAITERS];
    int nresume = 0;
    pthread_mutex_lock(&w->lock);
    for (kiq_http_waiter_t *wt = w->list; wt; wt = wt->next) {
        if (wt->done) continue;
        json_t *value = NULL;
        bool ok = met(w->b, &wt->cond, &value);
        if (!ok && now < wt->deadline_ns) {
            json_decref(value);
            continue;
        }
        wt->answer = result(wt, value, ok);
        wt->status = ok ? 200 : 408;
        wt->done = true;
        resume[nresume++] = wt->c;
    }
    bool left = false;
    for (kiq_http_waiter_t *wt = w->list; wt && !left; wt = wt->next) left = !wt->done;
    pthread_mutex_unlock(&w->lock);
    /* outside the lock (libmicrohttpd takes its own); a suspended
     * connection and its waiter stay until resumed */
    for (int i = 0; i < nresume; i++) MHD_resume_connection(resume[i]);
    return left ? LOOK_EVERY_MS : -1;
}

kiq_http_waits_t *kiq_http_waits_new(kiq_broker_t *b)
{
    kiq_http_waits_t *w = calloc(1, sizeof *w);
    if (!w) return kiq_error_set("out of memory"), NULL;
    w->b = b;
    pthread_mutex_init(&w->lock, NULL);
    char name[32];
    snprintf(name, sizeof name, "http-wait-%d", b->node_id);
    kiq_worker_config_t wc = {.name = name, .round = look, .ctx = w, .first_delay_ms = -1};
    if (!(w->worker = kiq_worker_start(&wc))) {
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

void kiq_http_waits_stop(kiq_http_waits_t *w)
{
    if (!w) return;
    kiq_worker_stop(w->worker);
    w->worker = NULL;
    struct MHD_Connection *resume[MAX_WAITERS];
    int nresume = 0;
    pthread_mutex_lock(&w->lock);
    for (kiq_http_waiter_t *wt = w->list; wt; wt = wt->next) {
        if (wt->done) continue;
        wt->answer = json_pack("{ss}", "error", "the HTTP listener is stopping");
        wt->status = 503;
        wt->done = true;
        resume[nresume++] = wt->c;
    }
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < nresume; i++) MHD_resume_connection(resume[i]);
}

void kiq_http_waits_free(kiq_http_waits_t *w)
{
    if (!w) return;
    kiq_worker_stop(w->worker);
    while (w->list) {
        kiq_http_waiter_t *wt = w->list;
        w->list = wt->next;
        json_decref(wt->answer);
        free(wt);
    }
    pthread_mutex_destroy(&w->lock);
    free(w);
}

bool kiq_http_wait_begin(kiq_http_waits_t *w, struct MHD_Connection *c, kiq_http_waiter_t **waiter,
                         kiq_http_view_t *v)
{
    kiq_http_waiter_t *wt = calloc(1, sizeof *wt);
    int64_t timeout_ms;
    if (!wt) {
        kiq_http_error(v, 500, "out of memory");
        return true;
    }
    if (parse(c, &wt->cond, &timeout_ms) != 0) {
        free(wt);
        kiq_http_error(v, 400, kiq_error_get());
        return true;
    }
    wt->c = c;
    wt->began_ns = kiq_clock_mono_ns();
    wt->deadline_ns = wt->began_ns + timeout_ms * 1000000;
    json_t *value = NULL;
    if (met(w->b, &wt->cond, &value)) {
        kiq_http_take_json(v, 200, result(wt, value, true));
        free(wt);
        return true;
    }
    json_decref(value);
    pthread_mutex_lock(&w->lock);
    bool room = w->n < MAX_WAITERS && w->worker;
    if (room) {
        wt->next = w->list;
        w->list = wt;
        w->n++;
        MHD_suspend_connection(c);
    }
    pthread_mutex_unlock(&w->lock);
    if (!room) {
        free(wt);
        kiq_http_error(v, 503, "too many waits on this listener");
        return true;
    }
    *waiter = wt;
    kiq_worker_poke(w->worker);
    return false;
}

static void unlink_waiter(kiq_http_waits_t *w, kiq_http_waiter_t *wt)
{
    pthread_mutex_lock(&w->lock);
    for (kiq_http_waiter_t **p = &w->list; *p; p = &(*p)->next)
        if (*p == wt) {
            *p = wt->next;
            w->n--;
            break;
        }
    pthread_mutex_unlock(&w->lock);
}

void kiq_http_waiter_answer(kiq_http_waits_t *w, kiq_http_waiter_t *wt, kiq_http_view_t *v)
{
    unlink_waiter(w, wt);
    kiq_http_take_json(v, wt->status, wt->answer);
    free(wt);
}

void kiq_http_waiter_drop(kiq_http_waits_t *w, kiq_http_waiter_t *wt)
{
    unlink_waiter(w, wt);
    json_decref(wt->answer);
    free(wt);
}
