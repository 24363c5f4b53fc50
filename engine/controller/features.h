/* Feature flags (KIP-584, KRaft's FeatureLevelRecord): the features this
 * build supports, each with the range of levels it can honour, and the
 * levels finalized for the whole cluster, which clients read from
 * ApiVersions (a Java 4.x producer uses transactions v2 only once
 * transaction.version 2 is finalized; share groups need share.version 1).
 *
 * A supported range reaches only as far as what KafkaIQ implements, so no
 * update can finalize a level whose behaviour it lacks:
 * eligible.leader.replicas.version stays at 0 (Kafka 4.x supports 0-1),
 * kraft.version at 0 (static voters, no AddRaftVoter). group.version
 * supports 0-1, transaction.version 0-2 and share.version 0-2; each is
 * finalized at its highest at a cluster's first start, as Kafka 4.4's:
 * KIP-848 consumer groups are served (Java 4.x uses group.protocol=consumer
 * only at level 1; librdkafka goes by ConsumerGroupHeartbeat being
 * advertised), transactions v2 (KIP-890 part 2: Java 4.x and franz-go use
 * them only at level 2) and share groups (KIP-932) with
 * ShareFetch/ShareAcknowledge v2.
 *
 * Pure functions on values the caller owns; any thread. */
#ifndef KIQ_CONTROLLER_FEATURES_H
#define KIQ_CONTROLLER_FEATURES_H

#include <stdint.h>

#include "proto/types.h"

enum kiq_feature {
    KIQ_FEATURE_METADATA_VERSION,
    KIQ_FEATURE_KRAFT_VERSION,
    KIQ_FEATURE_GROUP_VERSION,
    KIQ_FEATURE_TRANSACTION_VERSION,
    KIQ_FEATURE_ELR_VERSION,
    KIQ_FEATURE_SHARE_VERSION,
    KIQ_FEATURE__COUNT
};

/* metadata.version 4.0-IV3, the latest production level of Kafka 4.0,
 * whose API versions KafkaIQ serves (Produce 11, Fetch 17, Metadata 13);
 * 3.3-IV3 is the lowest Kafka 4 reads. */
#define KIQ_METADATA_VERSION_MIN 7
#define KIQ_METADATA_VERSION_LATEST 25

/* UpdateFeatures' upgrade_type (v0's allow_downgrade is 1 or 2). */
#define KIQ_FEATURE_UPGRADE 1
#define KIQ_FEATURE_SAFE_DOWNGRADE 2
#define KIQ_FEATURE_UNSAFE_DOWNGRADE 3

typedef struct kiq_feature_def {
    const char *name;
    int16_t min, max;  /* the supported levels */
    int16_t bootstrap; /* finalized when a cluster is first started */
} kiq_feature_def_t;

extern const kiq_feature_def_t kiq_feature_defs[KIQ_FEATURE__COUNT];

/* The finalized levels: a plain value, owned by whoever holds it. */
typedef struct kiq_features {
    int16_t level[KIQ_FEATURE__COUNT]; /* 0: not finalized */
    /* the metadata offset of the last FeatureLevelRecord (ApiVersions'
     * FinalizedFeaturesEpoch); -1: none yet */
    int64_t epoch;
} kiq_features_t;

/* The feature's index, or -1 for a name this build does not know. */
int kiq_feature_find(kiq_str_t name);
/* Every level 0, epoch -1 (nothing finalized). */
void kiq_features_init(kiq_features_t *f);
/* The bootstrap levels, epoch -1: what a broker without a controller
 * answers before any update. */
void kiq_features_bootstrap(kiq_features_t *f);

/* Kafka's controller's checks of one update of cur (FeatureControlManager):
 * a known upgrade type, a level within the supported range, no downgrade
 * unless the type allows one, and never a metadata.version downgrade
 * (it would drop what newer record versions hold). 0, or
 * KIQ_ERR_INVALID_UPDATE_VERSION with Kafka's message in the error slot.
 * node_id: the controller's, named in the message as Kafka does. */
int kiq_features_check_update(const kiq_features_t *cur, int32_t node_id, kiq_str_t name, int16_t level,
                              int8_t upgrade_type);

#endif
