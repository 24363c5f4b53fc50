/* The controller's in-memory cluster state, built by applying metadata
 * records (metadata_record.h) in log order, with Kafka's semantics:
 * registered brokers (epoch, endpoints, rack, fenced), topics with their
 * partitions (replicas, ISR, leader, leader epoch, partition epoch) and
 * configs. Plus the two decisions the controller makes from it: where a new
 * topic's replicas go and who leads a partition.
 *
 * Ownership: one writer, the controller thread, which applies records only
 * after the store made them durable. Other threads never hold pointers into
 * an image: they take the controller's lock and copy what they need out.
 * Everything returned by the lookups below is owned by the image and valid
 * until the next apply or free. */
#ifndef KIQ_CONTROLLER_METADATA_IMAGE_H
#define KIQ_CONTROLLER_METADATA_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/features.h"
#include "controller/metadata_record.h"
#include "controller/client_quotas.h"
#include "controller/delegation_tokens.h"
#include "controller/scram_credentials.h"
#include "security/acl.h"

/* The most replicas a partition has (a replica set, an ISR). */
#define KIQ_MAX_REPLICAS 32

/* PartitionChangeRecord's "leader unchanged"; -1 is "no leader". */
#define KIQ_NO_LEADER (-1)
#define KIQ_NO_LEADER_CHANGE (-2)

/* leader_recovery_state: 1 after an unclean election, until the new
 * leader has recovered. */
#define KIQ_LEADER_RECOVERED 0
#define KIQ_LEADER_RECOVERING 1

typedef struct kiq_broker_endpoint {
    char *name; /* the listener's name, e.g. "PLAINTEXT" */
    char *host;
    uint16_t port;
    int16_t security_protocol; /* Kafka's ids: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL */
} kiq_broker_endpoint_t;

typedef struct kiq_broker_registration {
    int32_t id;
    kiq_uuid_t incarnation_id;
    int64_t epoch;
    kiq_broker_endpoint_t *endpoints;
    int32_t nendpoints;
    char *rack; /* NULL: none */
    bool fenced;
    bool in_controlled_shutdown;
    /* its log directories' ids (meta.properties): what tells its restart
     * from a second process with the same id */
    kiq_uuid_t *log_dirs;
    int32_t nlog_dirs;
} kiq_broker_registration_t;

typedef struct kiq_partition_registration {
    int32_t *replicas; /* in preference order */
    int32_t nreplicas;
    int32_t *isr;
    int32_t nisr;
    int32_t *removing_replicas;
    int32_t nremoving;
    int32_t *adding_replicas;
    int32_t nadding;
    int32_t leader; /* KIQ_NO_LEADER when offline */
    int32_t leader_epoch;
    int32_t partition_epoch;
    int8_t leader_recovery_state;
    /* the store offset of the change that gave it this leader, -1 for the
     * one it was created with (not a record field): the controller names a
     * new leader to the brokers once the leader has taken that far */
    int64_t leader_offset;
} kiq_partition_registration_t;

typedef struct kiq_topic_image {
    char *name;
    kiq_uuid_t id;
    kiq_partition_registration_t *partitions; /* indexed by partition id */
    int32_t npartitions;
} kiq_topic_image_t;

typedef struct kiq_config_entry {
    int8_t resource_type; /* KIQ_CONFIG_RESOURCE_* */
    char *resource_name;  /* topic name, broker id as text, "" for the cluster default */
    char *name;
    char *value;
} kiq_config_entry_t;

typedef struct kiq_metadata_image kiq_metadata_image_t;

kiq_metadata_image_t *kiq_metadata_image_new(void);
void kiq_metadata_image_free(kiq_metadata_image_t *img);

/* Applies one record found at `offset` of the store. 0, or -1 with the
 * reason when the record does not fit the image (a broker, topic or
 * partition it names is missing, a topic name or id taken, a fence with
 * a stale epoch...) or memory runs out; the image is then unchanged. On a
 * replay, -1 means the log and the image disagree: do not start. */
int kiq_metadata_image_apply(kiq_metadata_image_t *img, int64_t offset, const kiq_metadata_record_t *r);
/* The offset of the last record applied; -1 before any. */
int64_t kiq_metadata_image_offset(const kiq_metadata_image_t *img);
/* The finalized feature levels (FeatureLevelRecord: level 0 takes a
 * feature out), their epoch the offset of the last such record applied;
 * nothing finalized before the first. */
const kiq_features_t *kiq_metadata_image_features(const kiq_metadata_image_t *img);
/* The users' SCRAM credentials. */
const kiq_scram_store_t *kiq_metadata_image_scram(const kiq_metadata_image_t *img);
/* The cluster's ACL bindings. */
const kiq_acl_store_t *kiq_metadata_image_acls(const kiq_metadata_image_t *img);
/* The client quotas (ClientQuotaRecord). */
const kiq_client_quota_store_t *kiq_metadata_image_quotas(const kiq_metadata_image_t *img);
/* The entity a record or request names (types "user" and "client-id",
 * each at most once; a null name the default), names copied into a. 0, or
 * -1 with the reason. */
int kiq_client_quota_entity_of(const kiq_client_quota_record_entity_t *parts, int32_t n, kiq_arena_t *a,
                               kiq_quota_entity_t *e);
/* Its delegation tokens (DelegationTokenRecord, RemoveDelegationTokenRecord). */
const kiq_dtoken_store_t *kiq_metadata_image_tokens(const kiq_metadata_image_t *img);

/* One per record type, as kiq_metadata_image_apply dispatches:
 * - RegisterBroker: the broker's registration, replacing any earlier one
 *   of the same id whole (new incarnation, epoch and endpoints);
 * - FenceBroker / UnfenceBroker: flips the flag of the broker with that id
 *   and epoch (another epoch: -1, a record for an older registration);
 * - Topic: a new topic without partitions;
 * - Partition: partition_id is the next one of the topic (appended) or an
 *   existing one (replaced whole);
 * - PartitionChange: each field present replaces the old value (arrays
 *   not null, leader not -2, recovery state not -1); the partition epoch
 *   always goes up by one, the leader epoch too when the leader field is
 *   present (even naming the same leader: that is how a controller bumps
 *   it);
 * - RemoveTopic: the topic, its partitions and its configs go;
 * - Config: sets the key, or deletes it when the value is null. */
int kiq_metadata_image_apply_register_broker(kiq_metadata_image_t *img, const kiq_register_broker_record_t *r);
/* The registration goes (its epoch must match); the partitions still
 * name the id among their replicas. */
int kiq_metadata_image_apply_unregister_broker(kiq_metadata_image_t *img, const kiq_unregister_broker_record_t *r);
int kiq_metadata_image_apply_fence_broker(kiq_metadata_image_t *img, const kiq_fence_broker_record_t *r);
int kiq_metadata_image_apply_unfence_broker(kiq_metadata_image_t *img, const kiq_unfence_broker_record_t *r);
int kiq_metadata_image_apply_topic(kiq_metadata_image_t *img, const kiq_topic_record_t *r);
int kiq_metadata_image_apply_partition(kiq_metadata_image_t *img, const kiq_partition_record_t *r);
int kiq_metadata_image_apply_partition_change(kiq_metadata_image_t *img, const kiq_partition_change_record_t *r);
int kiq_metadata_image_apply_remove_topic(kiq_metadata_image_t *img, const kiq_remove_topic_record_t *r);
/* The first producer id no broker was given yet (ProducerIdsRecord). */
int64_t kiq_metadata_image_next_producer_id(const kiq_metadata_image_t *img);
int kiq_metadata_image_apply_config(kiq_metadata_image_t *img, const kiq_config_record_t *r);

/* The records that rebuild the image from nothing, as a snapshot holds
 * them: the finalized feature levels (metadata.version first, as Kafka
 * begins a snapshot), each broker's registration (with its fenced state), each topic
 * with its partitions' whole state, the configs and the producer ids
 * given out. *out is in arena; its strings and arrays point into the
 * image, so they stay valid until the next apply or free. 0 always. */
int kiq_metadata_image_records(const kiq_metadata_image_t *img, kiq_arena_t *arena, kiq_metadata_record_t **out,
                               size_t *n);

/* Brokers, sorted by id. */
size_t kiq_metadata_image_broker_count(const kiq_metadata_image_t *img);
const kiq_broker_registration_t *kiq_metadata_image_broker_at(const kiq_metadata_image_t *img, size_t i);
/* NULL when not registered. */
const kiq_broker_registration_t *kiq_metadata_image_broker(const kiq_metadata_image_t *img, int32_t id);
/* The registered, unfenced brokers' ids in ascending order: up to max
 * into out; returns how many there are. */
size_t kiq_metadata_image_live_brokers(const kiq_metadata_image_t *img, int32_t *out, size_t max);

/* Topics, sorted by name. */
size_t kiq_metadata_image_topic_count(const kiq_metadata_image_t *img);
const kiq_topic_image_t *kiq_metadata_image_topic_at(const kiq_metadata_image_t *img, size_t i);
/* NULL when there is no such topic. */
const kiq_topic_image_t *kiq_metadata_image_topic(const kiq_metadata_image_t *img, const char *name, size_t len);
const kiq_topic_image_t *kiq_metadata_image_topic_by_id(const kiq_metadata_image_t *img, const kiq_uuid_t *id);
const kiq_partition_registration_t *kiq_metadata_image_partition(const kiq_metadata_image_t *img,
                                                                 const kiq_uuid_t *topic_id, int32_t partition);

/* Configs, in the order they were first set. */
size_t kiq_metadata_image_config_count(const kiq_metadata_image_t *img);
const kiq_config_entry_t *kiq_metadata_image_config_at(const kiq_metadata_image_t *img, size_t i);
/* The value, NULL when unset. */
const char *kiq_metadata_image_config(const kiq_metadata_image_t *img, int8_t resource_type,
                                      const char *resource_name, const char *name);

/* Kafka's rack-unaware replica placement (AdminUtils): partition p's first
 * replica is brokers[(p + start_index) % n]; its followers follow at a
 * distance 1 + (shift + j) % (n - 1) from it, where shift starts at
 * replica_shift and grows by one each time p passes a multiple of n, so
 * followers spread differently on each round. Partitions first_partition
 * .. first_partition + partitions - 1 are placed, replication_factor
 * replicas each, row by row into out (partitions * replication_factor
 * ids). brokers: sorted ids. 0, KIQ_ERR_INVALID_PARTITIONS (partitions
 * < 1) or KIQ_ERR_INVALID_REPLICATION_FACTOR (below 1 or above n), or -1
 * for a negative start index or shift, with the reason. */
int kiq_assign_replicas_rack_unaware(const int32_t *brokers, int32_t nbrokers, int32_t first_partition,
                                     int32_t partitions, int32_t replication_factor, int32_t start_index,
                                     int32_t replica_shift, int32_t *out);
/* The same over the image's live brokers, as Kafka places a new topic's
 * (first_partition 0) or new partitions' replicas: start_index >= 0 fixes
 * both the start index and the shift (Kafka's fixedStartIndex); < 0 picks
 * each at random. Also -1 with the reason when randomness fails. */
int kiq_metadata_image_assign_replicas(const kiq_metadata_image_t *img, int32_t first_partition,
                                       int32_t partitions, int32_t replication_factor, int32_t start_index,
                                       int32_t *out);

/* Chooses p's leader when it must change: the first replica, in replica
 * order, that is in the ISR and live (in live[0..nlive)); when none is
 * and unclean_allowed, the first live replica, which may have lost
 * records (*unclean true: the controller then makes it the whole ISR and
 * marks it KIQ_LEADER_RECOVERING); otherwise KIQ_NO_LEADER (offline).
 * unclean may be NULL. */
int32_t kiq_metadata_image_elect_leader(const kiq_partition_registration_t *p, const int32_t *live, size_t nlive,
                                        bool unclean_allowed, bool *unclean);

#endif
