#include "server/fetch_sessions.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hash.h"
#include "proto/errors.h"

#define BUCKETS 64

/* A partition of a session: what its client last asked, what its last
 * answer said. */
typedef struct cached_part {
    kiq_uuid_t topic_id;
    char *topic; /* by name (Fetch v7-12); NULL by id */
    uint64_t hash;
    kiq_fetch_request_topics_partitions_t ask;
    int64_t high_watermark, log_start_offset; /* as last answered; -1: sent next time */
    bool had_records;                         /* in this answer: moves to the end */
} cached_part_t;

/* Guarded by the cache's mutex. */
typedef struct session {
    int32_t id, epoch; /* epoch: the one the next incremental fetch must carry */
    bool follower, by_id;
    int64_t last_used_ms;
    cached_part_t *parts;
    cached_part_t *spare; /* cap parts: where an answer's reordering is built */
    int n, cap;
    int32_t *index; /* open addressing over parts by hash: slot -> part + 1; 0 empty */
    int index_cap;
    struct session *next;
} session_t;

struct kiq_fetch_sessions {
    pthread_mutex_t lock;
    session_t *buckets[BUCKETS];
    int count;
    int64_t partitions;
    uint64_t evictions;
    uint64_t rng;
};

kiq_fetch_sessions_t *kiq_fetch_sessions_new(void)
{
    kiq_fetch_sessions_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->rng = (uint64_t)kiq_clock_mono_ns() ^ (uint64_t)(uintptr_t)s;
    return s;
}

static void session_free(session_t *x)
{
    for (int i = 0; i < x->n; i++) free(x->parts[i].topic);
    free(x->parts);
    free(x->spare);
    free(x->index);
    free(x);
}

void kiq_fetch_sessions_free(kiq_fetch_sessions_t *s)
{
    if (!s) return;
    for (int i = 0; i < BUCKETS; i++)
        while (s->buckets[i]) {
            session_t *x = s->buckets[i];
            s->buckets[i] = x->next;
            session_free(x);
        }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static session_t **slot_of(kiq_fetch_sessions_t *s, int32_t id)
{
    session_t **pp = &s->buckets[(uint32_t)id % BUCKETS];
    while (*pp && (*pp)->id != id) pp = &(*pp)->next;
    return pp;
}

static void session_remove(kiq_fetch_sessions_t *s, session_t *x)
{
    session_t **pp = slot_of(s, x->id);
    *pp = x->next;
    s->count--;
    s->partitions -= x->n;
    session_free(x);
}

static void close_session(kiq_fetch_sessions_t *s, int32_t id)
{
    session_t *x = *slot_of(s, id);
    if (x) session_remove(s, x);
}

/* The session to evict for a new one, or NULL: the least recently used,
 * when idle long enough; for a follower, else the least recently used
 * consumer's. */
static session_t *victim(kiq_fetch_sessions_t *s, bool follower, const kiq_fetch_session_limits_t *l)
{
    session_t *oldest = NULL, *oldest_consumer = NULL;
    for (int i = 0; i < BUCKETS; i++)
        for (session_t *x = s->buckets[i]; x; x = x->next) {
            if (!oldest || x->last_used_ms < oldest->last_used_ms) oldest = x;
            if (!x->follower && (!oldest_consumer || x->last_used_ms < oldest_consumer->last_used_ms))
                oldest_consumer = x;
        }
    if (oldest && l->now_ms - oldest->last_used_ms >= l->eviction_ms) return oldest;
    return follower ? oldest_consumer : NULL;
}

/* A fresh positive id no session holds. */
static int32_t fresh_id(kiq_fetch_sessions_t *s)
{
    for (;;) {
        s->rng ^= s->rng << 13;
        s->rng ^= s->rng >> 7;
        s->rng ^= s->rng << 17;
        int32_t id = (int32_t)(s->rng & 0x7fffffff);
        if (id != 0 && !*slot_of(s, id)) return id;
    }
}

static uint64_t part_hash(bool by_id, const kiq_uuid_t *topic_id, kiq_str_t topic, int32_t partition)
{
    uint64_t h = by_id ? kiq_hash(topic_id->b, sizeof topic_id->b)
                       : kiq_hash(topic.p ? topic.p : "", topic.p ? (size_t)topic.len : 0);
    return (h ^ (uint32_t)partition) * KIQ_HASH_PRIME;
}

static bool part_is(const session_t *x, const cached_part_t *c, const kiq_uuid_t *topic_id, kiq_str_t topic,
                    int32_t partition)
{
    if (c->ask.partition != partition) return false;
    if (x->by_id) return memcmp(c->topic_id.b, topic_id->b, sizeof c->topic_id.b) == 0;
    size_t len = topic.p ? (size_t)topic.len : 0;
    return strlen(c->topic) == len && memcmp(c->topic, topic.p ? topic.p : "", len) == 0;
}

/* Rebuilds the index over the parts. -1 when out of memory. */
static int reindex(session_t *x)
{
    int cap = 16;
    while (cap < 2 * x->n) cap *= 2;
    if (cap != x->index_cap) {
        int32_t *idx = malloc((size_t)cap * sizeof *idx);
        if (!idx) return -1;
        free(x->index);
        x->index = idx;
        x->index_cap = cap;
    }
    memset(x->index, 0, (size_t)cap * sizeof *x->index);
    for (int i = 0; i < x->n; i++) {
        size_t k = x->parts[i].hash & (size_t)(cap - 1);
        while (x->index[k]) k = (k + 1) & (size_t)(cap - 1);
        x->index[k] = i + 1;
    }
    return 0;
}

/* Indexes part i, just added; -1 when out of memory. */
static int index_add(session_t *x, int i)
{
    if (2 * x->n > x->index_cap) return reindex(x);
    size_t k = x->parts[i].hash & (size_t)(x->index_cap - 1);
    while (x->index[k]) k = (k + 1) & (size_t)(x->index_cap - 1);
    x->index[k] = i + 1;
    return 0;
}

static int find_part(const session_t *x, const kiq_uuid_t *topic_id, kiq_str_t topic, int32_t partition)
{
    if (!x->index_cap) return -1;
    uint64_t h = part_hash(x->by_id, topic_id, topic, partition);
    for (size_t k = h & (size_t)(x->index_cap - 1); x->index[k]; k = (k + 1) & (size_t)(x->index_cap - 1)) {
        const cached_part_t *c = &x->parts[x->index[k] - 1];
        if (c->hash == h && part_is(x, c, topic_id, topic, partition)) return x->index[k] - 1;
    }
    return -1;
}

/* Adds the partition a request names (at < 0; the caller indexes it), or
 * updates what it asks. -1 when out of memory. */
static int put_part(kiq_fetch_sessions_t *s, session_t *x, const kiq_fetch_request_topics_t *t,
                    const kiq_fetch_request_topics_partitions_t *p, int at)
{
    if (at >= 0) {
        x->parts[at].ask = *p;
        return 0;
    }
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 8;
        cached_part_t *parts = realloc(x->parts, (size_t)cap * sizeof *parts);
        if (!parts) return -1;
        x->parts = parts;
        cached_part_t *spare = realloc(x->spare, (size_t)cap * sizeof *spare);
        if (!spare) return -1;
        x->spare = spare;
        x->cap = cap;
    }
    cached_part_t *c = &x->parts[x->n];
    *c = (cached_part_t){.topic_id = t->topic_id, .ask = *p, .high_watermark = -1, .log_start_offset = -1};
    if (!x->by_id) {
        size_t len = t->topic.p ? (size_t)t->topic.len : 0;
        if (!(c->topic = malloc(len + 1))) return -1;
        memcpy(c->topic, t->topic.p ? t->topic.p : "", len);
        c->topic[len] = 0;
    }
    c->hash = part_hash(x->by_id, &t->topic_id, t->topic, p->partition);
    c->ask._tags = (kiq_tags_t){0};
    x->n++;
    s->partitions++;
    return 0;
}

/* An incremental fetch's changes: partitions forgotten, then those added
 * or asked anew. -1 when out of memory. */
static int update_session(kiq_fetch_sessions_t *s, session_t *x, const kiq_fetch_request_t *req)
{
    for (int32_t i = 0; i < req->forgotten_topics_data_n; i++) {
        const kiq_fetch_request_forgotten_topics_data_t *f = &req->forgotten_topics_data[i];
        for (int32_t j = 0; j < f->partitions_n; j++) {
            int at = find_part(x, &f->topic_id, f->topic, f->partitions[j]);
            if (at < 0) continue;
            free(x->parts[at].topic);
            memmove(&x->parts[at], &x->parts[at + 1], (size_t)(x->n - at - 1) * sizeof *x->parts);
            x->n--;
            s->partitions--;
            if (reindex(x) != 0) return -1;
        }
    }
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_fetch_request_topics_t *t = &req->topics[i];
        for (int32_t j = 0; j < t->partitions_n; j++) {
            int at = find_part(x, &t->topic_id, t->topic, t->partitions[j].partition);
            if (put_part(s, x, t, &t->partitions[j], at) != 0) return -1;
            if (at < 0 && index_add(x, x->n - 1) != 0) return -1;
        }
    }
    return 0;
}

/* Every partition of the session as a fetch to read, in arena: one topic
 * entry per run of partitions of one topic. */
static int session_request(const session_t *x, const kiq_fetch_request_t *req, kiq_arena_t *arena,
                           kiq_fetch_request_t *out)
{
    *out = *req;
    out->forgotten_topics_data_n = 0;
    out->forgotten_topics_data = NULL;
    out->topics_n = 0;
    out->topics = kiq_arena_calloc(arena, (size_t)(x->n ? x->n : 1), sizeof *out->topics);
    kiq_fetch_request_topics_partitions_t *parts =
        kiq_arena_calloc(arena, (size_t)(x->n ? x->n : 1), sizeof *parts);
    if (!out->topics || !parts) return -1;
    const cached_part_t *prev = NULL;
    kiq_fetch_request_topics_t *t = NULL;
    for (int i = 0; i < x->n; i++) {
        const cached_part_t *c = &x->parts[i];
        bool same = prev && (x->by_id ? memcmp(prev->topic_id.b, c->topic_id.b, sizeof c->topic_id.b) == 0
                                      : strcmp(prev->topic, c->topic) == 0);
        if (!same) {
            t = &out->topics[out->topics_n++];
            kiq_fetch_request_topics_init(t);
            t->topic_id = c->topic_id;
            if (!x->by_id) {
                size_t len = strlen(c->topic);
                char *name = kiq_arena_alloc(arena, len + 1);
                if (!name) return -1;
                memcpy(name, c->topic, len + 1);
                t->topic = (kiq_str_t){name, (int32_t)len};
            }
            t->partitions = &parts[i];
        }
        parts[i] = c->ask;
        t->partitions_n++;
        prev = c;
    }
    return 0;
}

/* Kafka's next epoch: after INT32_MAX comes 1. */
static int32_t next_epoch(int32_t epoch) { return epoch == INT32_MAX ? 1 : epoch + 1; }

int16_t kiq_fetch_sessions_begin(kiq_fetch_sessions_t *s, int16_t version, bool follower,
                                 const kiq_fetch_session_limits_t *limits, const kiq_fetch_request_t *req,
                                 kiq_arena_t *arena, const kiq_fetch_request_t **read,
                                 kiq_fetch_session_ticket_t *t)
{
    *read = req;
    *t = (kiq_fetch_session_ticket_t){.by_id = version >= 13};
    /* sessionless and naming none (librdkafka, kafkajs): nothing to look up */
    if (version < 7 || (req->session_epoch < 0 && req->session_id == 0)) return KIQ_ERR_NONE;
    int16_t err = KIQ_ERR_NONE;
    pthread_mutex_lock(&s->lock);
    if (req->session_epoch <= 0) {
        /* a full fetch closes the session it names; epoch 0 opens another */
        if (req->session_id != 0) close_session(s, req->session_id);
        int nparts = 0;
        for (int32_t i = 0; i < req->topics_n; i++) nparts += req->topics[i].partitions_n;
        if (req->session_epoch == 0 && nparts > 0 && limits->slots > 0) {
            if (s->count >= limits->slots) {
                session_t *v = victim(s, follower, limits);
                if (v) {
                    session_remove(s, v);
                    s->evictions++;
                }
            }
            session_t *x = s->count < limits->slots ? calloc(1, sizeof *x) : NULL;
            if (x) {
                x->id = fresh_id(s);
                x->epoch = 1;
                x->follower = follower;
                x->by_id = t->by_id;
                x->last_used_ms = limits->now_ms;
                x->next = NULL;
                *slot_of(s, x->id) = x;
                s->count++;
                if (update_session(s, x, req) == 0)
                    t->id = x->id;
                else
                    session_remove(s, x); /* out of memory: sessionless */
            }
        }
    } else {
        session_t *x = *slot_of(s, req->session_id);
        kiq_fetch_request_t *full = NULL;
        if (!x || req->session_id == 0) {
            err = KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND;
        } else if (x->epoch != req->session_epoch) {
            err = KIQ_ERR_INVALID_FETCH_SESSION_EPOCH;
        } else if (x->by_id != t->by_id) {
            err = KIQ_ERR_FETCH_SESSION_TOPIC_ID_ERROR;
        } else if (update_session(s, x, req) != 0 || !(full = kiq_arena_alloc(arena, sizeof *full)) ||
                   session_request(x, req, arena, full) != 0) {
            /* out of memory: the session cannot be trusted any more */
            session_remove(s, x);
            err = KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND;
        } else if (x->n == 0) {
            /* everything forgotten: Kafka closes it and answers sessionless */
            session_remove(s, x);
            *read = req;
        } else {
            x->last_used_ms = limits->now_ms;
            x->epoch = next_epoch(x->epoch);
            t->id = x->id;
            t->incremental = true;
            *read = full;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return err;
}

static bool has_records(const kiq_fetch_response_responses_partitions_t *pr)
{
    return pr->records.len > 0 || (pr->records_file && pr->records_file->n > 0);
}

/* Whether the answer tells the client something new, remembering what
 * it said (Kafka's CachedPartition.maybeUpdateResponseData). */
static bool news(cached_part_t *c, const kiq_fetch_response_responses_partitions_t *pr)
{
    bool must = has_records(pr) || pr->error_code != 0 || pr->diverging_epoch.epoch >= 0 ||
                pr->preferred_read_replica >= 0 || c->high_watermark != pr->high_watermark ||
                c->log_start_offset != pr->log_start_offset;
    /* after an error the partition goes out again once it is gone */
    c->high_watermark = pr->error_code ? -1 : pr->high_watermark;
    c->log_start_offset = pr->log_start_offset;
    c->had_records = has_records(pr);
    return must;
}

/* Partitions that returned records go to the end, in their order. Built
 * in the session's spare array, which then becomes its parts: nothing is
 * allocated, and the index keeps its size (reindex cannot fail). */
static void rotate(session_t *x)
{
    int moved = 0;
    for (int i = 0; i < x->n; i++) moved += x->parts[i].had_records;
    if (moved == 0 || moved == x->n) return;
    int front = 0, back = x->n - moved;
    for (int i = 0; i < x->n; i++) x->spare[x->parts[i].had_records ? back++ : front++] = x->parts[i];
    cached_part_t *was = x->parts;
    x->parts = x->spare;
    x->spare = was;
    reindex(x);
}

void kiq_fetch_sessions_answer(kiq_fetch_sessions_t *s, const kiq_fetch_session_ticket_t *t,
                               kiq_fetch_response_t *resp)
{
    resp->session_id = t->id;
    if (!t->id || resp->error_code) return;
    pthread_mutex_lock(&s->lock);
    session_t *x = *slot_of(s, t->id);
    if (!x) {
        /* evicted or closed meanwhile: the answer goes out whole */
        pthread_mutex_unlock(&s->lock);
        return;
    }
    for (int i = 0; i < x->n; i++) x->parts[i].had_records = false;
    int32_t ntopics = 0;
    for (int32_t i = 0; i < resp->responses_n; i++) {
        kiq_fetch_response_responses_t *tr = &resp->responses[i];
        int32_t kept = 0;
        for (int32_t j = 0; j < tr->partitions_n; j++) {
            kiq_fetch_response_responses_partitions_t *pr = &tr->partitions[j];
            int at = find_part(x, &tr->topic_id, tr->topic, pr->partition_index);
            bool must = at < 0 || news(&x->parts[at], pr);
            if (!t->incremental || must) tr->partitions[kept++] = *pr;
        }
        tr->partitions_n = kept;
        if (!t->incremental || kept > 0) resp->responses[ntopics++] = *tr;
    }
    resp->responses_n = ntopics;
    rotate(x);
    pthread_mutex_unlock(&s->lock);
}

void kiq_fetch_sessions_stats(kiq_fetch_sessions_t *s, kiq_fetch_sessions_stats_t *out)
{
    pthread_mutex_lock(&s->lock);
    *out = (kiq_fetch_sessions_stats_t){.sessions = s->count, .partitions = s->partitions, .evictions = s->evictions};
    pthread_mutex_unlock(&s->lock);
}
