/* Topics as Metadata-style answers describe them (partitions with leader,
 * leader epoch, replicas, ISR, offline replicas), the same in both modes:
 * in cluster mode from the metadata cache, standalone from this broker's
 * own topics, which it alone leads. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "controller/metadata_cache.h"

/* A standalone topic: every partition led here, at its leader epoch; one
 * whose log directory failed has no leader and its replica offline, as
 * Kafka's controller leaves it. */
static void standalone_view(kiq_broker_t *b, kiq_request_t *r, kiq_topic_t *topic, kiq_cached_topic_t *out)
{
    int32_t n = topic->npartitions; /* once: the topic may grow meanwhile */
    *out = (kiq_cached_topic_t){kiq_arena_strndup(&r->arena, topic->name, strlen(topic->name)), strlen(topic->name),
                                topic->id, n, kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->partitions)};
    for (int32_t i = 0; i < n; i++) {
        kiq_cached_partition_t *p = &out->partitions[i];
        kiq_partition_t *part = topic->partitions[i];
        kiq_partition_log_t *log = part->log;
        p->leader_epoch = part->leader_epoch;
        p->nreplicas = p->nisr = 1;
        p->replicas[0] = p->isr[0] = b->node_id;
        p->leader = b->node_id;
        if (!log || kiq_partition_log_offline(log)) {
            p->leader = -1;
            p->noffline = 1;
            p->offline[0] = b->node_id;
        }
    }
}

bool kiq_api_topic_view(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name, const kiq_uuid_t *id,
                        kiq_cached_topic_t *out)
{
    if (b->cluster)
        return name.p ? kiq_metadata_cache_topic(b->metadata, name.p, (size_t)name.len, &r->arena, out)
                      : kiq_metadata_cache_topic_by_id(b->metadata, id, &r->arena, out);
    kiq_topic_t *topic = name.p ? kiq_topics_get(b->topics, name) : kiq_topics_get_by_id(b->topics, id);
    if (!topic) return false;
    standalone_view(b, r, topic, out);
    kiq_topic_unref(topic);
    return true;
}

int kiq_api_topic_views(kiq_broker_t *b, kiq_request_t *r, kiq_cached_topic_t **out)
{
    if (b->cluster) return kiq_metadata_cache_topics(b->metadata, &r->arena, out);
    int n;
    kiq_topic_t **list = kiq_topics_list(b->topics, &n);
    *out = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof **out);
    for (int i = 0; i < n; i++) standalone_view(b, r, list[i], &(*out)[i]);
    kiq_topics_list_free(list, n);
    return n;
}

int32_t *kiq_api_ids(kiq_request_t *r, const int32_t *ids, int n)
{
    int32_t *out = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out);
    if (n > 0) memcpy(out, ids, (size_t)n * sizeof *out);
    return out;
}

int kiq_api_live_brokers(kiq_broker_t *b, kiq_request_t *r, kiq_cached_broker_t **out)
{
    int n = b->cluster ? kiq_metadata_cache_brokers(b->metadata, NULL, &r->arena, out) : 0;
    if (n > 0) return n;
    *out = kiq_arena_alloc(&r->arena, sizeof **out);
    (*out)[0] = (kiq_cached_broker_t){b->node_id, b->advertised_port, b->advertised_host, NULL};
    return 1;
}
