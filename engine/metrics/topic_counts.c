#include "metrics/topic_counts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/str_map.h"

/* One topic's counters: added to by any thread without a lock, since
 * every produce and fetch of every partition counts here. */
typedef struct counted {
    char topic[250];
    atomic_uint_fast64_t messages_in, bytes_in, bytes_out;
    atomic_uint_fast64_t produce_requests, failed_produce_requests, fetch_requests, failed_fetch_requests;
} counted_t;

struct kiq_topic_counts {
    uint64_t id; /* this table's, never reused: the threads' caches name it */
    /* guards the table, not the counters: read-locked to find a topic
     * the thread's cache does not hold, write-locked to add one */
    pthread_rwlock_t lock;
    kiq_str_map_t *topics; /* name -> counted_t */
    atomic_uint_fast64_t replication_in, replication_out;
};

/* Each thread's last topics looked up, by a hash of the name: found again
 * without the table's lock, whose reader count every I/O thread would
 * otherwise write at each produced and fetched partition. An entry holds
 * its table's id, so one left by a table since freed is never followed. */
enum { CACHED = 16 };
static _Atomic uint64_t next_id = 1;
static _Thread_local struct {
    uint64_t table;
    counted_t *t;
} cache[CACHED];

kiq_topic_counts_t *kiq_topic_counts_new(void)
{
    kiq_topic_counts_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->id = atomic_fetch_add(&next_id, 1);
    pthread_rwlock_init(&c->lock, NULL);
    if (!(c->topics = kiq_str_map_new())) {
        kiq_topic_counts_free(c);
        return NULL;
    }
    return c;
}

void kiq_topic_counts_free(kiq_topic_counts_t *c)
{
    if (!c) return;
    if (c->topics) {
        kiq_str_map_iter_t it;
        void *v;
        kiq_str_map_iter_init(&it, c->topics);
        while (kiq_str_map_next(&it, NULL, NULL, &v)) free(v);
        kiq_str_map_free(c->topics);
    }
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

/* The topic's counters from the table, made on first use (NULL: out of
 * memory, or a name longer than Kafka allows). */
static counted_t *lookup(kiq_topic_counts_t *c, const char *topic, size_t len)
{
    pthread_rwlock_rdlock(&c->lock);
    counted_t *t = kiq_str_map_get(c->topics, topic, len);
    pthread_rwlock_unlock(&c->lock);
    if (t || len >= sizeof t->topic) return t;
    pthread_rwlock_wrlock(&c->lock);
    /* another thread may have added it between the two locks */
    if (!(t = kiq_str_map_get(c->topics, topic, len)) && (t = calloc(1, sizeof *t))) {
        memcpy(t->topic, topic, len + 1);
        if (kiq_str_map_put(c->topics, t->topic, len, t) != 0) {
            free(t);
            t = NULL;
        }
    }
    pthread_rwlock_unlock(&c->lock);
    return t;
}

/* The topic's counters: from the thread's cache, else the table. */
static counted_t *of(kiq_topic_counts_t *c, const char *topic)
{
    size_t len = strlen(topic);
    size_t slot = kiq_hash(topic, len) % CACHED;
    if (cache[slot].table == c->id && strcmp(cache[slot].t->topic, topic) == 0) return cache[slot].t;
    counted_t *t = lookup(c, topic, len);
    if (t) {
        cache[slot].table = c->id;
        cache[slot].t = t;
    }
    return t;
}

static void add(atomic_uint_fast64_t *v, uint64_t n) { atomic_fetch_add_explicit(v, n, memory_order_relaxed); }

static void on_event(void *ctx, const kiq_event_t *e)
{
    kiq_topic_counts_t *c = ctx;
    uint64_t bytes = e->bytes > 0 ? (uint64_t)e->bytes : 0;
    if (!e->topic) return;
    if (e->point == KIQ_POINT_APPENDED) {
        if (e->flags & KIQ_EVENT_FOLLOWER) add(&c->replication_in, bytes);
    } else if (e->point == KIQ_POINT_FOLLOWER_FETCHED) {
        add(&c->replication_out, bytes);
    } else {
        counted_t *t = of(c, e->topic);
        if (t && e->point == KIQ_POINT_VALIDATED) {
            add(&t->messages_in, e->records > 0 ? (uint64_t)e->records : 0);
            add(&t->bytes_in, bytes);
        } else if (t) {
            add(&t->bytes_out, bytes);
        }
    }
}

kiq_observer_t kiq_topic_counts_observer(kiq_topic_counts_t *c)
{
    return (kiq_observer_t){on_event, c,
                            1u << KIQ_POINT_VALIDATED | 1u << KIQ_POINT_RECORDS_FETCHED | 1u << KIQ_POINT_APPENDED |
                                1u << KIQ_POINT_FOLLOWER_FETCHED};
}

void kiq_topic_counts_request(kiq_topic_counts_t *c, const char *topic, bool fetch, bool failed)
{
    counted_t *t = of(c, topic);
    if (t && fetch) {
        add(&t->fetch_requests, 1);
        if (failed) add(&t->failed_fetch_requests, 1);
    } else if (t) {
        add(&t->produce_requests, 1);
        if (failed) add(&t->failed_produce_requests, 1);
    }
}

kiq_replication_bytes_t kiq_topic_counts_replication(kiq_topic_counts_t *c)
{
    return (kiq_replication_bytes_t){atomic_load_explicit(&c->replication_in, memory_order_relaxed),
                                     atomic_load_explicit(&c->replication_out, memory_order_relaxed)};
}

static int by_topic(const void *a, const void *b)
{
    return strcmp(((const kiq_topic_count_t *)a)->topic, ((const kiq_topic_count_t *)b)->topic);
}

static uint64_t get(const atomic_uint_fast64_t *v) { return atomic_load_explicit(v, memory_order_relaxed); }

int kiq_topic_counts_snapshot(kiq_topic_counts_t *c, kiq_topic_count_t **out)
{
    pthread_rwlock_rdlock(&c->lock);
    size_t n = kiq_str_map_count(c->topics);
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out) {
        pthread_rwlock_unlock(&c->lock);
        return -1;
    }
    kiq_str_map_iter_t it;
    void *v;
    size_t i = 0;
    kiq_str_map_iter_init(&it, c->topics);
    while (kiq_str_map_next(&it, NULL, NULL, &v)) {
        const counted_t *t = v;
        kiq_topic_count_t *o = &(*out)[i++];
        memcpy(o->topic, t->topic, sizeof o->topic);
        o->messages_in = get(&t->messages_in);
        o->bytes_in = get(&t->bytes_in);
        o->bytes_out = get(&t->bytes_out);
        o->produce_requests = get(&t->produce_requests);
        o->failed_produce_requests = get(&t->failed_produce_requests);
        o->fetch_requests = get(&t->fetch_requests);
        o->failed_fetch_requests = get(&t->failed_fetch_requests);
    }
    pthread_rwlock_unlock(&c->lock);
    qsort(*out, n, sizeof **out, by_topic);
    return (int)n;
}
