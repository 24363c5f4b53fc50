/* The controller's line to one broker (Kafka's ControllerChannelManager
 * send thread): a worker (core/worker.h) that, whenever the cluster state
 * moved past what the broker last acknowledged, sends it UpdateMetadata,
 * LeaderAndIsr and (when partitions were deleted) StopReplica built from
 * the current state, retrying with a backoff until the broker answers. Because each round
 * carries the whole current state, a lost round is repaired by the next.
 * Every function is callable from any thread. */
#ifndef KIQ_CONTROLLER_BROKER_CHANNEL_H
#define KIQ_CONTROLLER_BROKER_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "metrics/registry.h"
#include "proto/messages.h"

/* One round of requests, built in the sender's arena. */
typedef struct kiq_channel_round {
    kiq_update_metadata_request_t update_metadata;
    kiq_leader_and_isr_request_t leader_and_isr;
    kiq_stop_replica_request_t stop_replica;
    bool stop; /* send stop_replica too */
} kiq_channel_round_t;

/* build: the requests for broker's current state; returns the state
 * version they reflect. sent: the broker acknowledged that version (and
 * the StopReplica of that round). Both run on the sender thread and lock
 * what they read themselves. */
typedef struct kiq_channel_owner {
    void *ctx;
    uint64_t (*build)(void *ctx, int32_t broker, kiq_arena_t *a, kiq_channel_round_t *out);
    void (*sent)(void *ctx, int32_t broker, uint64_t version, bool stop_sent);
} kiq_channel_owner_t;

typedef struct kiq_broker_channel kiq_broker_channel_t;

/* Starts the sender for broker at host:port (its control-plane listener),
 * reached with security (NULL: plaintext; outlives the channel); its
 * line's figures go to metrics (NULL: nowhere). */
struct kiq_peer_security;
kiq_broker_channel_t *kiq_broker_channel_new(int32_t broker, const char *host, int port, const kiq_channel_owner_t *owner,
                                             kiq_metrics_t *metrics, const struct kiq_peer_security *security);
/* The state is now at version: send when the broker is behind. */
void kiq_broker_channel_poke(kiq_broker_channel_t *ch, uint64_t version);
/* The broker re-registered (maybe restarted): resend everything. */
void kiq_broker_channel_reset(kiq_broker_channel_t *ch, const char *host, int port);
/* Stops and joins the thread; NULL is fine. */
void kiq_broker_channel_free(kiq_broker_channel_t *ch);

#endif
