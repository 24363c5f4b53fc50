/* __share_group_state in a cluster (KIP-932): created through the
 * controller on a share group's first use, as Kafka's share coordinator
 * creates it (share.coordinator.state.topic.num.partitions partitions,
 * .replication.factor replicas but no more than the live brokers,
 * compacted, .min.isr at most its replicas), and the snapshots of
 * partitions of it led elsewhere sent to their leaders as Produce on the
 * queued share peer lines, without waiting (share/share_state.h). */
#ifndef KIQ_API_SHARE_STATE_TOPIC_H
#define KIQ_API_SHARE_STATE_TOPIC_H

#include "api/api.h"
#include "share/share_state.h"

/* Any thread: asks the controller for the topic unless this broker's
 * metadata has it or an ask is under way; returns at once. Standalone:
 * nothing (share/share_state.c creates it). */
void kiq_api_share_state_topic_ensure(kiq_broker_t *b);

/* The context the share state functions run with on b. */
void kiq_api_share_state_ctx(kiq_broker_t *b, kiq_share_state_ctx_t *out);

#endif
