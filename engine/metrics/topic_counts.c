#include "metrics/topic_counts.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/str_map.h"

struct kiq_topic_counts {
    pthread_mutex_t mu;    /* guards topics */
    kiq_str_map_t *topics; /* name -> kiq_topic_count_t */
    kiq_replication_bytes_t replication;
};

kiq_topic_counts_t *kiq_topic_counts_new(void)
{
    kiq_topic_counts_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
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
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Under mu: the topic's counts, made on first use (NULL: out of memory). */
static kiq_topic_count_t *of(kiq_topic_counts_t *c, const char *topic)
{
    size_t len = strlen(topic);
    kiq_topic_count_t *t = kiq_str_map_get(c->topics, topic, len);
    if (t || len >= sizeof t->topic) return t;
    if (!(t = calloc(1, sizeof *t))) return NULL;
    memcpy(t->topic, topic, len + 1);
    if (kiq_str_map_put(c->topics, t->topic, len, t) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

static void on_event(void *ctx, const kiq_event_t *e)
{
    kiq_topic_counts_t *c = ctx;
    uint64_t bytes = e->bytes > 0 ? (uint64_t)e->bytes : 0;
    if (!e->topic) return;
    pthread_mutex_lock(&c->mu);
    if (e->point == KIQ_POINT_APPENDED) {
        if (e->flags & KIQ_EVENT_FOLLOWER) c->replication.in += bytes;
    } else if (e->point == KIQ_POINT_FOLLOWER_FETCHED) {
        c->replication.out += bytes;
    } else {
        kiq_topic_count_t *t = of(c, e->topic);
        if (t && e->point == KIQ_POINT_VALIDATED) {
            t->messages_in += e->records > 0 ? (uint64_t)e->records : 0;
            t->bytes_in += bytes;
        } else if (t) {
            t->bytes_out += bytes;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

kiq_observer_t kiq_topic_counts_observer(kiq_topic_counts_t *c)
{
    return (kiq_observer_t){on_event, c,
                            1u << KIQ_POINT_VALIDATED | 1u << KIQ_POINT_RECORDS_FETCHED | 1u << KIQ_POINT_APPENDED |
                                1u << KIQ_POINT_FOLLOWER_FETCHED};
}

void kiq_topic_counts_request(kiq_topic_counts_t *c, const char *topic, bool fetch, bool failed)
{
    pthread_mutex_lock(&c->mu);
    kiq_topic_count_t *t = of(c, topic);
    if (t && fetch) {
        t->fetch_requests++;
        t->failed_fetch_requests += failed;
    } else if (t) {
        t->produce_requests++;
        t->failed_produce_requests += failed;
    }
    pthread_mutex_unlock(&c->mu);
}

kiq_replication_bytes_t kiq_topic_counts_replication(kiq_topic_counts_t *c)
{
    pthread_mutex_lock(&c->mu);
    kiq_replication_bytes_t r = c->replication;
    pthread_mutex_unlock(&c->mu);
    return r;
}

static int by_topic(const void *a, const void *b)
{
    return strcmp(((const kiq_topic_count_t *)a)->topic, ((const kiq_topic_count_t *)b)->topic);
}

int kiq_topic_counts_snapshot(kiq_topic_counts_t *c, kiq_topic_count_t **out)
{
    pthread_mutex_lock(&c->mu);
    size_t n = kiq_str_map_count(c->topics);
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out) {
        pthread_mutex_unlock(&c->mu);
        return -1;
    }
    kiq_str_map_iter_t it;
    void *v;
    size_t i = 0;
    kiq_str_map_iter_init(&it, c->topics);
    while (kiq_str_map_next(&it, NULL, NULL, &v)) (*out)[i++] = *(kiq_topic_count_t *)v;
    pthread_mutex_unlock(&c->mu);
    qsort(*out, n, sizeof **out, by_topic);
    return (int)n;
}
