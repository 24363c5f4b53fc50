/* KIP-951: a partition answered NOT_LEADER_OR_FOLLOWER (or, for Fetch,
 * FENCED_LEADER_EPOCH) names its current leader and that leader's
 * endpoint, so the client can go there without asking Metadata first
 * (Produce v10+, Fetch v16+). Standalone, this broker leads everything. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "controller/metadata_cache.h"
#include "replica/partition_replica.h"

/* The leader a replica hosted here knows of, when it knows one of a newer
 * epoch than *epoch: after a restart the replica hears LeaderAndIsr before
 * the metadata cache hears UpdateMetadata, and the cache still names the
 * old leader. */
static void newer_from_replica(kiq_broker_t *b, kiq_str_t topic, int32_t partition, int32_t *leader, int32_t *epoch)
{
    kiq_topic_t *t = kiq_topics_get(b->topics, topic);
    if (!t) return;
    if (partition >= 0 && partition < t->npartitions && t->partitions[partition]->replica &&
        kiq_partition_replica_role(t->partitions[partition]->replica) != KIQ_REPLICA_NONE) {
        int32_t l, e;
        kiq_partition_replica_leader(t->partitions[partition]->replica, &l, &e);
        if (l >= 0 && e > *epoch) {
            *leader = l;
            *epoch = e;
        }
    }
    kiq_topic_unref(t);
}

bool kiq_api_leader_hint(kiq_broker_t *b, kiq_request_t *r, kiq_str_t topic, int32_t partition,
                         int32_t *leader_id, int32_t *leader_epoch, kiq_api_leader_nodes_t *nodes)
{
    int32_t leader = b->node_id, epoch = 0;
    char host[256];
    int port = b->advertised_port;
    snprintf(host, sizeof host, "%s", b->advertised_host);
    if (b->cluster) {
        kiq_cached_partition_t p;
        if (!topic.p) return false;
        leader = -1;
        epoch = -1;
        if (kiq_metadata_cache_partition(b->metadata, topic.p, (size_t)topic.len, partition, &p)) {
            leader = p.leader;
            epoch = p.leader_epoch;
        }
        newer_from_replica(b, topic, partition, &leader, &epoch);
        if (leader < 0) return false;
        if (!kiq_metadata_cache_broker(b->metadata, leader, NULL, host, sizeof host, &port)) return false;
    }
    *leader_id = leader;
    *leader_epoch = epoch;
    for (int i = 0; i < nodes->n; i++)
        if (nodes->nodes[i].id == leader) return true;
    if (nodes->n == nodes->cap) {
        int cap = nodes->cap ? nodes->cap * 2 : 4;
        kiq_cached_broker_t *more = kiq_arena_calloc(&r->arena, (size_t)cap, sizeof *more);
        if (nodes->n) memcpy(more, nodes->nodes, (size_t)nodes->n * sizeof *more);
        nodes->nodes = more;
        nodes->cap = cap;
    }
    nodes->nodes[nodes->n++] =
        (kiq_cached_broker_t){leader, port, kiq_arena_strndup(&r->arena, host, strlen(host)), NULL};
    return true;
}
