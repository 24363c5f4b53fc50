/* A cluster-mode broker's requests to the controller: CreateTopics,
 * CreatePartitions, DeleteTopics, ElectLeaders and the config changes
 * received by any broker are decided there. When this broker hosts the
 * controller they go straight to it; otherwise they travel over the
 * broker's kept channel to the controller's control-plane listener
 * (net/peer_channel.h), and the caller goes on: done(ctx) runs once the
 * orders are decided, on the channel's thread, or before the call returns
 * when the controller is here. Until then the orders, the arena and ctx
 * are the link's (a parked request's).
 *
 * Any thread; nothing here waits on another broker. */
#ifndef KIQ_SERVER_CONTROLLER_LINK_H
#define KIQ_SERVER_CONTROLLER_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "config/topic_config.h"
#include "controller/config_changes.h"
#include "core/arena.h"
#include "include/kafkaiq.h"
#include "proto/messages.h"
#include "proto/types.h"
#include "server/producer_ids.h"

/* One topic to create, grow or delete, and what the controller answered. */
typedef struct kiq_topic_order {
    kiq_str_t name;
    int32_t partitions;         /* create: -1 takes num.partitions; grow: the new count */
    int16_t replication_factor; /* create: -1 takes default.replication.factor */
    int16_t error;              /* out: Kafka error code */
    kiq_str_t message;          /* out: null, or the reason (in the caller's arena) */
    const kiq_topic_configs_t *configs; /* create: the topic's checked configs, NULL for none (caller's) */
    /* grow: the new partitions' replicas as the client gave them, one row
     * each; nassignments -1: the controller places them (caller's) */
    const kiq_create_partitions_request_topics_assignments_t *assignments;
    int32_t nassignments;
} kiq_topic_order_t;

/* Called once the orders are decided. */
typedef void (*kiq_link_done_fn)(void *ctx);

/* Creates (or with validate_only, checks) each topic. Every order gets
 * its error; an unreachable controller gives REQUEST_TIMED_OUT (a client
 * retries it). */
void kiq_controller_link_create_topics(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only,
                                       int timeout_ms, kiq_arena_t *arena, kiq_link_done_fn done, void *ctx);
/* Grows each topic to its order's partition count (or with validate_only
 * checks that it could). */
void kiq_controller_link_create_partitions(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only,
                                           int timeout_ms, kiq_arena_t *arena, kiq_link_done_fn done, void *ctx);
/* Deletes each topic (by name). */
void kiq_controller_link_delete_topics(kiq_broker_t *b, kiq_topic_order_t *orders, int n, int timeout_ms,
                                       kiq_arena_t *arena, kiq_link_done_fn done, void *ctx);
/* A request the active controller answers whole (ElectLeaders,
 * UnregisterBroker, AlterPartitionReassignments,
 * ListPartitionReassignments, DescribeQuorum, AddRaftVoter,
 * RemoveRaftVoter, UpdateFeatures, Describe/AlterUserScramCredentials,
 * Describe/AlterClientQuotas; req as it came): decided
 * here when this broker's controller is active, else forwarded; *resp
 * filled in arena. An unreachable controller gives REQUEST_TIMED_OUT at
 * the top level (with why, where the response carries a message). */
void kiq_controller_link_whole(kiq_broker_t *b, int16_t api_key, const void *req, int timeout_ms, kiq_arena_t *arena,
                               void *resp, kiq_link_done_fn done, void *ctx);
/* How long a voter change may wait for its commit (RemoveRaftVoter names
 * no timeout of its own). */
#define KIQ_VOTER_CHANGE_WAIT_MS 30000
/* AddRaftVoter, RemoveRaftVoter or UpdateRaftVoter (api) at this node's
 * quorum, which must lead to change the set: *resp filled in arena, done(ctx) once the new
 * set is committed or refused (from the caller's thread or the quorum's). */
void kiq_controller_link_change_voters(kiq_broker_t *b, int16_t api, const void *req, kiq_arena_t *arena, void *resp,
                                       kiq_link_done_fn done, void *ctx);
/* AlterConfigs or IncrementalAlterConfigs (api_key; req the request,
 * sent on as it came), decided by the controller: each order gets its
 * outcome. An unreachable controller gives every order REQUEST_TIMED_OUT. */
void kiq_controller_link_change_configs(kiq_broker_t *b, int16_t api_key, const void *req, kiq_config_order_t *orders,
                                        int n, bool validate_only, int timeout_ms, kiq_arena_t *arena,
                                        kiq_link_done_fn done, void *ctx);
/* Asks the controller for a block of producer ids (AllocateProducerIds)
 * for ids; the answer (or the reason there is none: not registered yet,
 * the controller unreachable) goes to kiq_producer_ids_given. */
void kiq_controller_link_producer_ids(kiq_broker_t *b, kiq_producer_ids_t *ids);

#endif
