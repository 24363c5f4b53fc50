#include "server/purgatory.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/say.h"

#define NBUCKETS 1024

/* One key an operation watches: a link in that key's bucket. */
typedef struct kiq_watch {
    kiq_delayed_op_t *op;
    uint64_t key;
    struct kiq_watch *next;
} watch_t;

/* A candidate taken out for a try; its watches kept apart, as a finished
 * operation's memory is gone once its try returns. */
typedef struct candidate {
    kiq_delayed_op_t *op;
    watch_t *watches;
    int nkeys;
    enum kiq_delayed_kind kind;
    bool expired;
} candidate_t;

struct kiq_purgatory {
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;
    watch_t *buckets[NBUCKETS];
    kiq_delayed_op_t **heap; /* by deadline */
    size_t nheap, heap_cap;
    uint64_t *pending; /* keys notified since the last round */
    size_t npending, pending_cap;
    bool pending_all;
    kiq_delayed_op_t *fresh; /* parked since the last round */
    uint64_t round;
    /* a round's operations are being tried (out of the watch lists), by
     * the thread or by a notifier (kiq_purgatory_notify_here): every
     * notified key is kept for the next round, watched or not, and no
     * other round starts */
    bool trying;
    bool held_off; /* the thread waits for a notifier's round to end */
    /* when the thread, asleep, wakes by itself (INT64_MAX: not before a
     * signal; 0: it is awake and looks at the heap before it sleeps) */
    int64_t sleep_until;
    bool stopping, started;
    kiq_purgatory_stats_t stats; /* but notified, counted apart */
    pthread_t thread;
    /* Not under the lock: per bucket, the keys there of operations parked
     * and not finished (in the watch lists or out for a try). A notifier
     * that finds its key's bucket at 0 returns without the lock, so an
     * append that nobody waits for (the common case under many producers)
     * costs no lock all I/O threads share. Safe because every operation is
     * tried once after it is counted here: a notifier that read 0 made its
     * change before that try could look. */
    atomic_int watchers[NBUCKETS];
    atomic_uint_fast64_t notified;
};

const char *const kiq_delayed_kind_names[KIQ_DELAYED__KINDS] = {"Fetch", "Produce", "OffsetCommit", "Interceptor"};

uint64_t kiq_purgatory_key(const char *topic, size_t len, int32_t partition)
{
    return kiq_hash_partition(topic, len, partition);
}

/* The metadata keys: the topic's partition 0 is the quorum's log, -1
 * (which no real partition has) the metadata a broker applied. */
static const char METADATA_TOPIC[] = "__cluster_metadata";

uint64_t kiq_purgatory_metadata_key(void) { return kiq_purgatory_key(METADATA_TOPIC, sizeof METADATA_TOPIC - 1, -1); }

uint64_t kiq_purgatory_quorum_key(void) { return kiq_purgatory_key(METADATA_TOPIC, sizeof METADATA_TOPIC - 1, 0); }

uint64_t kiq_purgatory_producer_ids_key(void)
{
    static const char name[] = "__producer_ids";
    return kiq_purgatory_key(name, sizeof name - 1, -1);
}

static size_t bucket_of(uint64_t key) { return (size_t)(key ^ key >> 29) % NBUCKETS; }

/* An operation's keys start (delta 1) or stop (-1) being waited for. */
static void count_watchers(kiq_purgatory_t *p, const watch_t *watches, int n, int delta)
{
    for (int i = 0; i < n; i++) atomic_fetch_add(&p->watchers[bucket_of(watches[i].key)], delta);
}

/* Whether an operation may wait for key: false means none does, and none
 * parked from now on can miss the change made before this call. */
static bool maybe_watched(kiq_purgatory_t *p, uint64_t key)
{
    atomic_fetch_add_explicit(&p->notified, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load(&p->watchers[bucket_of(key)]) != 0;
}

/* Fills the watches' keys, counted as waited for, before op's first try. */
static void start_watching(kiq_purgatory_t *p, kiq_delayed_op_t *op, watch_t *watches)
{
    for (int i = 0; i < op->nkeys; i++) watches[i].key = op->keys[i];
    count_watchers(p, watches, op->nkeys, 1);
}

/* ---- the deadline heap (under lock) ---- */

static void heap_set(kiq_purgatory_t *p, size_t i, kiq_delayed_op_t *op)
{
    p->heap[i] = op;
    op->heap_index = i;
}

static void heap_up(kiq_purgatory_t *p, size_t i)
{
    kiq_delayed_op_t *op = p->heap[i];
    while (i > 0 && p->heap[(i - 1) / 2]->deadline_ns > op->deadline_ns) {
        heap_set(p, i, p->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(p, i, op);
}

static void heap_down(kiq_purgatory_t *p, size_t i)
{
    kiq_delayed_op_t *op = p->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= p->nheap) break;
        if (c + 1 < p->nheap && p->heap[c + 1]->deadline_ns < p->heap[c]->deadline_ns) c++;
        if (p->heap[c]->deadline_ns >= op->deadline_ns) break;
        heap_set(p, i, p->heap[c]);
        i = c;
    }
    heap_set(p, i, op);
}

static int heap_push(kiq_purgatory_t *p, kiq_delayed_op_t *op)
{
    if (p->nheap == p->heap_cap) {
        size_t cap = p->heap_cap ? 2 * p->heap_cap : 64;
        kiq_delayed_op_t **h = realloc(p->heap, cap * sizeof *h);
        if (!h) return -1;
        p->heap = h;
        p->heap_cap = cap;
    }
    heap_set(p, p->nheap++, op);
    heap_up(p, op->heap_index);
    return 0;
}

static void heap_remove(kiq_purgatory_t *p, kiq_delayed_op_t *op)
{
    size_t i = op->heap_index;
    kiq_delayed_op_t *last = p->heap[--p->nheap];
    if (i == p->nheap) return;
    heap_set(p, i, last);
    heap_up(p, i);
    heap_down(p, last->heap_index);
}

/* ---- watching (under lock) ---- */

static void link_op(kiq_purgatory_t *p, kiq_delayed_op_t *op, watch_t *watches)
{
    op->watches = watches;
    for (int i = 0; i < op->nkeys; i++) {
        watch_t *w = &watches[i];
        *w = (watch_t){op, op->keys[i], NULL};
        size_t b = bucket_of(w->key);
        w->next = p->buckets[b];
        p->buckets[b] = w;
    }
}

static void unwatch(kiq_purgatory_t *p, watch_t *watches, int n)
{
    for (int i = 0; i < n; i++) {
        watch_t **pp = &p->buckets[bucket_of(watches[i].key)];
        while (*pp != &watches[i]) pp = &(*pp)->next;
        *pp = watches[i].next;
    }
}

static void unlink_op(kiq_purgatory_t *p, kiq_delayed_op_t *op)
{
    unwatch(p, op->watches, op->nkeys);
    heap_remove(p, op);
}

/* Under lock: op watches its keys again and waits for its deadline; -1
 * (out of memory) leaves it unlinked. */
static int relink(kiq_purgatory_t *p, kiq_delayed_op_t *op, watch_t *watches)
{
    link_op(p, op, watches);
    if (heap_push(p, op) == 0) return 0;
    unwatch(p, watches, op->nkeys);
    return -1;
}

/* Adds op to the round's candidates once (round marks who is in). */
static int take(kiq_purgatory_t *p, candidate_t **c, size_t *n, size_t *cap, kiq_delayed_op_t *op, bool expired)
{
    if (op->round == p->round) return 0;
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 16;
        candidate_t *m = realloc(*c, ncap * sizeof *m);
        if (!m) return -1;
        *c = m;
        *cap = ncap;
    }
    op->round = p->round;
    (*c)[(*n)++] = (candidate_t){op, op->watches, op->nkeys, op->kind, expired};
    return 0;
}

/* Under lock: the operations this round tries, taken out of the watch
 * lists and the heap. */
static size_t collect(kiq_purgatory_t *p, candidate_t **c, size_t *cap)
{
    size_t n = 0;
    int64_t now = kiq_clock_mono_ns();
    p->round++;
    while (p->nheap > 0 && (p->stopping || p->heap[0]->deadline_ns <= now)) {
        kiq_delayed_op_t *op = p->heap[0];
        if (take(p, c, &n, cap, op, true) != 0) break;
        unlink_op(p, op);
    }
    for (kiq_delayed_op_t *op = p->fresh; op; op = op->next_fresh) take(p, c, &n, cap, op, false);
    p->fresh = NULL;
    if (p->pending_all) {
        for (size_t i = 0; i < p->nheap; i++) take(p, c, &n, cap, p->heap[i], false);
    } else {
        for (size_t k = 0; k < p->npending; k++)
            for (watch_t *w = p->buckets[bucket_of(p->pending[k])]; w; w = w->next)
                if (w->key == p->pending[k]) take(p, c, &n, cap, w->op, false);
    }
    p->npending = 0;
    p->pending_all = false;
    for (size_t i = 0; i < n; i++)
        if (!(*c)[i].expired) unlink_op(p, (*c)[i].op);
    return n;
}

static bool idle(const kiq_purgatory_t *p)
{
    return p->trying || (!p->stopping && !p->fresh && !p->pending_all && p->npending == 0 &&
                         (p->nheap == 0 || p->heap[0]->deadline_ns > kiq_clock_mono_ns()));
}

/* Under lock, after a round's n tries (done finished, expired of them at
 * their deadline), made with the lock released: the counts, and the
 * operations not finished watch again. */
static void end_round(kiq_purgatory_t *p, candidate_t *c, size_t n, size_t done, size_t expired)
{
    p->trying = false;
    p->stats.tried += n;
    p->stats.expired += expired;
    p->stats.waiting -= (int)done;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].op) {
            p->stats.waiting_by_kind[c[i].kind]--;
            count_watchers(p, c[i].watches, c[i].nkeys, -1);
            free(c[i].watches);
            continue;
        }
        if (relink(p, c[i].op, c[i].watches) != 0) {
            /* out of memory: answer it now rather than lose it */
            pthread_mutex_unlock(&p->lock);
            c[i].op->try_complete(c[i].op, true);
            pthread_mutex_lock(&p->lock);
            count_watchers(p, c[i].watches, c[i].nkeys, -1);
            free(c[i].watches);
            p->stats.waiting--;
            p->stats.waiting_by_kind[c[i].kind]--;
        }
    }
}

static void *purgatory_main(void *arg)
{
    kiq_purgatory_t *p = arg;
    kiq_say_thread_name("purgatory");
    candidate_t *c = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (idle(p)) {
            p->held_off = p->trying;
            if (p->nheap == 0 || p->trying) {
                p->sleep_until = INT64_MAX;
                pthread_cond_wait(&p->cond, &p->lock);
            } else {
                p->sleep_until = p->heap[0]->deadline_ns;
                kiq_cond_wait_until(&p->cond, &p->lock, p->sleep_until);
            }
            p->sleep_until = 0;
        }
        bool stopping = p->stopping;
        size_t n = collect(p, &c, &cap);
        p->trying = true;
        pthread_mutex_unlock(&p->lock);
        size_t done = 0, expired = 0;
        for (size_t i = 0; i < n; i++) {
            bool force = stopping || c[i].expired;
            if (c[i].op->try_complete(c[i].op, force)) {
                c[i].op = NULL; /* its memory went with its request */
                done++;
                expired += force;
            }
        }
        pthread_mutex_lock(&p->lock);
        end_round(p, c, n, done, expired);
        if (stopping && p->stats.waiting == 0) break;
    }
    pthread_mutex_unlock(&p->lock);
    free(c);
    return NULL;
}

kiq_purgatory_t *kiq_purgatory_new(void)
{
    kiq_purgatory_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    pthread_mutex_init(&p->lock, NULL);
    kiq_cond_init_monotonic(&p->cond);
    return p;
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
    free(p->heap);
    free(p->pending);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
}

void kiq_purgatory_park(kiq_purgatory_t *p, kiq_delayed_op_t *op)
{
    watch_t *watches = op->nkeys > 0 ? malloc((size_t)op->nkeys * sizeof *watches) : NULL;
    pthread_mutex_lock(&p->lock);
    /* once stopping, the thread may already have drained everything; out
     * of memory, the operation cannot wait: either way it finishes now */
    if (p->stopping || (op->nkeys > 0 && !watches)) {
        pthread_mutex_unlock(&p->lock);
        free(watches);
        op->try_complete(op, true);
        return;
    }
    op->round = 0;
    if (relink(p, op, watches) != 0) {
        pthread_mutex_unlock(&p->lock);
        free(watches);
        op->try_complete(op, true);
        return;
    }
    /* linked with its keys: counted before the thread's first try */
    count_watchers(p, watches, op->nkeys, 1);
    op->next_fresh = p->fresh;
    p->fresh = op;
    p->stats.parked++;
    p->stats.waiting++;
    p->stats.waiting_by_kind[op->kind]++;
    pthread_mutex_unlock(&p->lock);
    /* after the unlock, so the woken thread does not block on it at once */
    pthread_cond_signal(&p->cond);
}

/* Under lock: key waits for the thread's next round; whether the thread
 * must be woken for it. */
static bool note_pending(kiq_purgatory_t *p, uint64_t key)
{
    bool watched = p->trying;
    for (watch_t *w = p->buckets[bucket_of(key)]; w && !watched; w = w->next) watched = w->key == key;
    if (watched && !p->pending_all) {
        bool seen = false;
        for (size_t i = 0; i < p->npending && !seen; i++) seen = p->pending[i] == key;
        if (!seen) {
            if (p->npending == p->pending_cap) {
                size_t cap = p->pending_cap ? 2 * p->pending_cap : 16;
                uint64_t *m = realloc(p->pending, cap * sizeof *m);
                if (m) {
                    p->pending = m;
                    p->pending_cap = cap;
                }
            }
            if (p->npending < p->pending_cap)
                p->pending[p->npending++] = key;
            else
                p->pending_all = true; /* out of memory: try everyone */
        }
    }
    return watched;
}

void kiq_purgatory_park_here(kiq_purgatory_t *p, kiq_delayed_op_t *op)
{
    watch_t *watches = op->nkeys > 0 ? malloc((size_t)op->nkeys * sizeof *watches) : NULL;
    pthread_mutex_lock(&p->lock);
    if (p->trying || p->stopping || (op->nkeys > 0 && !watches)) {
        pthread_mutex_unlock(&p->lock);
        free(watches);
        kiq_purgatory_park(p, op);
        return;
    }
    /* its first try here, as a round of one: what is notified meanwhile
     * waits as pending for the thread's round, which finds it watching */
    p->trying = true;
    p->stats.parked++;
    p->stats.tried++;
    start_watching(p, op, watches);
    int nkeys = op->nkeys;
    pthread_mutex_unlock(&p->lock);
    bool done = op->try_complete(op, false); /* done: op's memory is gone */
    pthread_mutex_lock(&p->lock);
    p->trying = false;
    bool wake = p->held_off;
    p->held_off = false;
    if (done) count_watchers(p, watches, nkeys, -1);
    if (!done) {
        op->round = 0;
        if (relink(p, op, watches) != 0) {
            count_watchers(p, watches, nkeys, -1);
            pthread_mutex_unlock(&p->lock);
            free(watches);
            op->try_complete(op, true);
            if (wake) pthread_cond_signal(&p->cond);
            return;
        }
        watches = NULL;
        p->stats.waiting++;
        p->stats.waiting_by_kind[op->kind]++;
        /* the thread is woken only if it would sleep past this deadline */
        wake |= op->deadline_ns < p->sleep_until;
    }
    pthread_mutex_unlock(&p->lock);
    free(watches);
    if (wake) pthread_cond_signal(&p->cond);
}

void kiq_purgatory_notify(kiq_purgatory_t *p, uint64_t key)
{
    if (!maybe_watched(p, key)) return;
    pthread_mutex_lock(&p->lock);
    bool watched = note_pending(p, key);
    pthread_mutex_unlock(&p->lock);
    if (watched) pthread_cond_signal(&p->cond);
}

/* The most waiters of one key a notifier tries itself; more go to the thread. */
enum { HERE_MAX = 16 };

void kiq_purgatory_notify_here(kiq_purgatory_t *p, uint64_t key)
{
    candidate_t c[HERE_MAX];
    size_t n = 0;
    bool many = false;
    if (!maybe_watched(p, key)) return;
    pthread_mutex_lock(&p->lock);
    if (!p->trying && !p->stopping) {
        p->round++;
        /* parked since the thread's last round: its next round, which
         * comes after this notify, tries them (they stay on p->fresh) */
        for (kiq_delayed_op_t *op = p->fresh; op; op = op->next_fresh) op->round = p->round;
        for (watch_t *w = p->buckets[bucket_of(key)]; w && !many; w = w->next) {
            if (w->key != key || w->op->round == p->round) continue;
            if (n == HERE_MAX) {
                many = true;
                break;
            }
            w->op->round = p->round;
            c[n++] = (candidate_t){w->op, w->op->watches, w->op->nkeys, w->op->kind, false};
        }
    }
    if (p->trying || p->stopping || many) {
        bool watched = note_pending(p, key);
        pthread_mutex_unlock(&p->lock);
        if (watched) pthread_cond_signal(&p->cond);
        return;
    }
    if (n == 0) {
        pthread_mutex_unlock(&p->lock);
        return;
    }
    for (size_t i = 0; i < n; i++) unlink_op(p, c[i].op);
    p->trying = true;
    pthread_mutex_unlock(&p->lock);
    size_t done = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].op->try_complete(c[i].op, false)) {
            c[i].op = NULL; /* its memory went with its request */
            done++;
        }
    }
    pthread_mutex_lock(&p->lock);
    end_round(p, c, n, done, 0);
    /* the thread waited for this round (what came meanwhile is its own) */
    bool wake = p->held_off;
    p->held_off = false;
    pthread_mutex_unlock(&p->lock);
    if (wake) pthread_cond_signal(&p->cond);
}

void kiq_purgatory_notify_all(kiq_purgatory_t *p)
{
    pthread_mutex_lock(&p->lock);
    if (p->nheap > 0 || p->trying) {
        p->pending_all = true;
        pthread_cond_signal(&p->cond);
    }
    pthread_mutex_unlock(&p->lock);
}

void kiq_purgatory_stats(kiq_purgatory_t *p, kiq_purgatory_stats_t *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->stats;
    pthread_mutex_unlock(&p->lock);
    out->notified = atomic_load_explicit(&p->notified, memory_order_relaxed);
}
