/* Share-partitions kept in __share_group_state (KIP-932), in Kafka's record
 * formats: a ShareSnapshot record (key version 0: group, topic id,
 * partition; value version 0: the start offset and the in-flight records
 * in runs) each time a share-partition changes, in the partition Kafka's
 * share coordinator would use for its key "group:topicId:partition". The
 * partition's leader writes and reads them itself (there is no share
 * coordinator): a standalone broker creates the topic on first use; in a
 * cluster the controller creates it (api/share_state_topic.h), a snapshot
 * for a partition of it led elsewhere goes to its leader through remote
 * (asynchronously, the caller's peer lines), and a load reads this
 * broker's own replica of it, leader or follower (so a data partition's
 * new leader finds the state its old leader wrote). Until the topic is
 * there the state is in memory only. Called with the share manager's lock
 * held. */
#ifndef KIQ_SHARE_SHARE_STATE_H
#define KIQ_SHARE_SHARE_STATE_H

#include <stdbool.h>

#include "config/config.h"
#include "core/uuid.h"
#include "log/topics.h"
#include "proto/writer.h"
#include "share/share_partition.h"

#define KIQ_SHARE_STATE_TOPIC "__share_group_state"

/* Sends batch (a record batch for __share_group_state-index, whose
 * leader is another broker; taken over, freed by it) to that leader
 * without waiting for it. 0, or -1 with the reason. */
typedef int (*kiq_share_state_remote_fn)(void *ctx, int32_t index, kiq_wr_t *batch);

typedef struct kiq_share_state_ctx {
    kiq_topics_t *topics;
    const kiq_config_t *config;
    bool cluster;
    kiq_share_state_remote_fn remote; /* cluster: NULL keeps what is not led here in memory */
    void *remote_ctx;
} kiq_share_state_ctx_t;

/* Writes sp's snapshot: 0, or -1 with the reason (the state stays in
 * memory; the next change writes it again). */
int kiq_share_state_store(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                          kiq_share_partition_t *sp);
/* Deletes the stored state of the share-partition (a tombstone). 0 or -1. */
int kiq_share_state_delete(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic,
                           int32_t partition);
/* Fills sp (not started) from the last snapshot stored for it: true when
 * there was one. */
bool kiq_share_state_load(const kiq_share_state_ctx_t *c, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                          kiq_share_partition_t *sp);

#endif
