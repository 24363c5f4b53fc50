/* The broker's replicas in cluster mode (Kafka's ReplicaManager, the part
 * that acts on the controller's word): applies LeaderAndIsr and StopReplica
 * to the partitions (hosting their logs, becoming leader or follower),
 * keeps the replica fetchers (one thread per leader broker and fetcher
 * index), and runs the ISR thread, which asks the controller with
 * AlterPartition to shrink the ISR of led partitions whose followers lag
 * and to expand it for followers that caught up.
 *
 * Locking: the manager's mutex guards the fetcher list, the paused
 * leaders, the queued ISR expansions and the controller epoch seen; it is
 * never held while waiting on the network. Every function may be called
 * from any thread; LeaderAndIsr and StopReplica come from the broker's one
 * control-plane thread. */
#ifndef KIQ_REPLICA_REPLICA_MANAGER_H
#define KIQ_REPLICA_REPLICA_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "controller/metadata_cache.h"
#include "core/arena.h"
#include "log/topics.h"
#include "metrics/registry.h"
#include "proto/messages.h"

typedef struct kiq_replica_manager kiq_replica_manager_t;
struct kiq_controller;

/* What the manager works with, from the broker that owns it; everything
 * outlives the manager. The callbacks may be called from any thread. */
#define KIQ_REPLICA_MAX_LOG_DIRS 64

typedef struct kiq_replica_context {
    int32_t node_id;
    const kiq_config_t *config;
    kiq_topics_t *topics;
    kiq_metadata_cache_t *metadata;
    /* The active controller as the broker last knows it: its id, and its
     * control-plane address into *host / *port (valid while the broker
     * runs). Read before each request to it, so the line follows it. */
    int32_t (*controller)(void *ctx, const char **host, int *port);
    /* This broker's epoch as the controller registered it (-1: not yet). */
    int64_t (*broker_epoch)(void *ctx);
    /* This broker now leads (led) or no longer leads partition `partition`
     * of a coordinator's topic (__consumer_offsets, __transaction_state),
     * so the coordination of its groups or transactional ids comes or goes. */
    void (*coordinator_partition_led)(void *ctx, const char *topic, int32_t partition, bool led);
    void *ctx;
    /* The registry's log directories' directory.id, in its order: what a
     * recovered replica is assigned back to (AssignReplicasToDirs). */
    kiq_uuid_t log_dir_ids[KIQ_REPLICA_MAX_LOG_DIRS];
    int nlog_dirs;
    kiq_metrics_t *metrics; /* the broker's: the lines to the controller and the leaders report there */
    /* how fetchers connect to the leaders' client listeners (the broker's,
     * outlives the manager); NULL: plaintext */
    const struct kiq_peer_security *peer_security;
    /* how the ISR line reaches the controller's control-plane listener; likewise */
    const struct kiq_peer_security *controller_security;
} kiq_replica_context_t;

/* For a cluster-mode broker whose topics are open: every partition loaded
 * from disk waits, as no replica, for the controller's word (LeaderAndIsr
 * is applied from now on). The context is copied. NULL with the reason. */
kiq_replica_manager_t *kiq_replica_manager_new(const kiq_replica_context_t *ctx);
/* Starts the ISR thread, which asks broker_epoch for the broker epoch:
 * call once that has one to give. 0 or -1. */
int kiq_replica_manager_start(kiq_replica_manager_t *rm);
/* Stops the ISR thread and the fetchers (interrupting requests in
 * flight); expansions are no longer queued. Call before the broker's
 * lifecycle goes. NULL is fine. */
void kiq_replica_manager_stop(kiq_replica_manager_t *rm);
/* Stops if needed and frees; NULL is fine. Call once no handler can call
 * in, before the topics are closed. */
void kiq_replica_manager_free(kiq_replica_manager_t *rm);

/* LeaderAndIsr: for each partition state, hosts the partition's log (and
 * the topic) if it is not here yet, becomes leader or follower, and moves
 * the partition to the right fetcher. Per-partition errors go into resp
 * (allocated in a), in both the v0-4 and v5+ layouts: FENCED_LEADER_EPOCH
 * for a stale leader epoch (nothing changes), UNKNOWN_TOPIC_OR_PARTITION
 * when the topic's partition count is not known yet, KAFKA_STORAGE_ERROR
 * when its log cannot be made. Idempotent. Returns 0. */
int kiq_replica_manager_apply_leader_and_isr(kiq_replica_manager_t *rm, const kiq_leader_and_isr_request_t *req,
                                             kiq_arena_t *a, kiq_leader_and_isr_response_t *resp);
/* StopReplica: stops replicating the partitions (no fetcher, no role) and,
 * with delete_partition, removes their logs. Returns 0. */
/* After an UpdateMetadata (the controller's whole view): deletes the
 * topics here that the view lacks or names with another id (deleted while
 * this broker was down), and the replicas here of partitions it assigns
 * to other brokers only (reassigned away). Control-plane thread. */
void kiq_replica_manager_drop_strays(kiq_replica_manager_t *rm);
int kiq_replica_manager_stop_replica(kiq_replica_manager_t *rm, const kiq_stop_replica_request_t *req,
                                     kiq_arena_t *a, kiq_stop_replica_response_t *resp);

/* From the Fetch handler: follower `replica` caught up on a partition led
 * here and may join its ISR; the ISR thread asks the controller soon.
 * Takes its own reference on topic. */
void kiq_replica_manager_queue_isr_expand(kiq_replica_manager_t *rm, kiq_topic_t *topic, int32_t partition,
                                          int32_t replica);

/* Link control (Lua, tests): while paused, this broker does not fetch from
 * broker `leader` (a fetch in flight is cut), so the partitions it follows
 * there fall behind and leave the ISR. */
void kiq_replica_manager_pause_fetching(kiq_replica_manager_t *rm, int32_t leader, bool paused);

/* Any thread: the largest lag of this broker's fetchers behind their
 * leaders (Kafka's ReplicaFetcherManager MaxLag), in offsets. */
int64_t kiq_replica_manager_max_lag(kiq_replica_manager_t *rm);
/* Any thread: the ISR shrinks and expansions the controller accepted for
 * partitions led here (Kafka's IsrShrinksPerSec and IsrExpandsPerSec). */
void kiq_replica_manager_isr_changes(kiq_replica_manager_t *rm, uint64_t *shrinks, uint64_t *expands);

/* Standalone: every partition of t, led here alone, has its high watermark
 * at its log end (a restart may have checkpointed it lower). */
void kiq_replica_manager_lead_all_alone(kiq_topics_t *t);

#endif
