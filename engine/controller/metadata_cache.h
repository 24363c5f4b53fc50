/* The broker's view of the cluster, as the controller last pushed it with
 * UpdateMetadata: live brokers with their listeners, the controller, and
 * every topic's partitions (leader, leader epoch, replicas, ISR, offline
 * replicas). Each update replaces the whole view (the controller always
 * sends the full state) and bumps a version that waiters can block on.
 *
 * Any thread: a rwlock guards the view; everything is copied out, so
 * nothing returned points into the cache. */
#ifndef KIQ_CONTROLLER_METADATA_CACHE_H
#define KIQ_CONTROLLER_METADATA_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/topic_config.h"
#include "controller/metadata_image.h"
#include "core/arena.h"
#include "proto/messages.h"
#include "security/acl_snapshot.h"

typedef struct kiq_metadata_cache kiq_metadata_cache_t;

/* The listener clients use, as brokers register it. */
#define KIQ_METADATA_CLIENT_LISTENER "PLAINTEXT"

kiq_metadata_cache_t *kiq_metadata_cache_new(void);
/* NULL is fine; no waiter may be blocked in it any more. */
void kiq_metadata_cache_free(kiq_metadata_cache_t *mc);

/* Replaces the view with what req carries (any UpdateMetadata version:
 * ungrouped partition states up to v4, topic states from v5; broker
 * endpoints from v1, the single host/port of v0 as PLAINTEXT) and wakes
 * the waiters. Replica lists longer than KIQ_MAX_REPLICAS are cut. 0;
 * KIQ_ERR_STALE_CONTROLLER_EPOCH from a controller older than the last
 * one heard (a deposed one still pushing), the view unchanged; or -1 (out
 * of memory: the old view stays). */
int kiq_metadata_cache_update(kiq_metadata_cache_t *mc, const kiq_update_metadata_request_t *req);

typedef struct kiq_cached_partition {
    int32_t leader, leader_epoch, partition_epoch;
    int nreplicas, nisr, noffline;
    int32_t replicas[KIQ_MAX_REPLICAS], isr[KIQ_MAX_REPLICAS], offline[KIQ_MAX_REPLICAS];
} kiq_cached_partition_t;

/* False for an unknown topic or partition. A partition the update left
 * out of a known topic reads as leaderless (leader -1, no replicas). */
bool kiq_metadata_cache_partition(kiq_metadata_cache_t *mc, const char *topic, size_t len, int32_t partition,
                                  kiq_cached_partition_t *out);
/* -1: unknown topic. */
int32_t kiq_metadata_cache_partition_count(kiq_metadata_cache_t *mc, const char *topic, size_t len);
bool kiq_metadata_cache_topic_id(kiq_metadata_cache_t *mc, const char *topic, size_t len, kiq_uuid_t *out);
/* The topic's dynamic configs as the controller last pushed them (every
 * UpdateMetadata carries all of them) into an empty *out: any broker
 * answers for any topic, hosted here or not. 0, or -1 for an unknown
 * topic. */
int kiq_metadata_cache_topic_configs(kiq_metadata_cache_t *mc, const char *topic, size_t len,
                                    kiq_topic_configs_t *out);
/* host (NUL-terminated, cut to n) and port of broker id's listener;
 * listener NULL: the client listener (KIQ_METADATA_CLIENT_LISTENER, or
 * the broker's first endpoint when it has none by that name). False for a
 * broker that is not live or lacks that listener. */
bool kiq_metadata_cache_broker(kiq_metadata_cache_t *mc, int32_t id, const char *listener, char *host, size_t n,
                               int *port);
/* The finalized feature levels and their epoch as the last update carried
 * them; nothing finalized (epoch -1) before the first. */
void kiq_metadata_cache_features(kiq_metadata_cache_t *mc, kiq_features_t *out);
/* Any thread: user's SCRAM credential for m as the last update carried it
 * (a broker that is no voter authenticates with these): 0, or -1 when it
 * has none. */
int kiq_metadata_cache_scram(kiq_metadata_cache_t *mc, enum kiq_scram_mech m, const char *user,
                             kiq_scram_credential_t *out);
/* Any thread: the delegation token token_id as the last update carried
 * it: its owner (Type:name) and when it expires; 0, or -1 when none. */
int kiq_metadata_cache_token(kiq_metadata_cache_t *mc, const char *token_id, char *owner, size_t cap,
                             int64_t *expiry_ms);
/* Any thread: the ACL bindings as the last update carried them (none
 * before the first), referenced: release it. */
kiq_acl_snapshot_t *kiq_metadata_cache_acls(kiq_metadata_cache_t *mc);
/* The controller id of the last update; -1 before the first. */
int32_t kiq_metadata_cache_controller(kiq_metadata_cache_t *mc);

/* One live broker's client endpoint, copied into an arena. */
typedef struct kiq_cached_broker {
    int32_t id;
    int port;
    const char *host; /* NUL-terminated */
    const char *rack; /* NULL: none */
} kiq_cached_broker_t;
/* Every live broker that has listener (NULL: the client listener, as
 * above), in the update's order, into *out in arena. Their number. */
int kiq_metadata_cache_brokers(kiq_metadata_cache_t *mc, const char *listener, kiq_arena_t *arena,
                               kiq_cached_broker_t **out);
/* Number of live brokers. */
int kiq_metadata_cache_broker_count(kiq_metadata_cache_t *mc);

/* One topic, copied into an arena: consistent with itself even when an
 * update comes in meanwhile. */
typedef struct kiq_cached_topic {
    const char *name; /* NUL-terminated */
    size_t len;
    kiq_uuid_t id;
    int32_t npartitions;
    kiq_cached_partition_t *partitions; /* index = partition */
} kiq_cached_topic_t;
/* False for an unknown topic. */
bool kiq_metadata_cache_topic(kiq_metadata_cache_t *mc, const char *topic, size_t len, kiq_arena_t *arena,
                              kiq_cached_topic_t *out);
/* The topic with that id; false when none. */
bool kiq_metadata_cache_topic_by_id(kiq_metadata_cache_t *mc, const kiq_uuid_t *id, kiq_arena_t *arena,
                                    kiq_cached_topic_t *out);
/* Every topic, sorted by name, into *out in arena. Their number. */
int kiq_metadata_cache_topics(kiq_metadata_cache_t *mc, kiq_arena_t *arena, kiq_cached_topic_t **out);

/* How many updates came in (0: none yet). */
uint64_t kiq_metadata_cache_version(kiq_metadata_cache_t *mc);
/* Blocks until the version reaches min_version or timeout_ms passes
 * (< 0: forever). True when it got there. */
bool kiq_metadata_cache_wait_version(kiq_metadata_cache_t *mc, uint64_t min_version, int timeout_ms);
/* Blocks until at least n brokers are live or timeout_ms passes. */
bool kiq_metadata_cache_wait_brokers(kiq_metadata_cache_t *mc, int n, int timeout_ms);

#endif
