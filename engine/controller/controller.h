/* The controller (Kafka's QuorumController, one per voter of the
 * controller quorum, active on the quorum's leader only). It owns the
 * cluster's metadata: broker registrations and liveness, topics, and for
 * every partition its replicas, leader, leader epoch and ISR. Every change
 * is written through the quorum (controller/quorum.h: the replicated
 * `__cluster_metadata-0` log) and applied to the in-memory image once a
 * majority of voters has it; standby controllers apply the same committed
 * log, so a newly elected one starts from the whole image. The active one
 * pushes the cluster to the brokers over their control-plane listeners:
 * UpdateMetadata (the whole cluster view), LeaderAndIsr (each broker's own
 * partitions) and StopReplica (deleted partitions), stamped with its
 * quorum epoch as the controller epoch, by one sender thread per broker
 * that keeps re-sending until the broker has the latest state.
 *
 * Brokers register (BrokerRegistration) and heartbeat (BrokerHeartbeat); a
 * broker silent for broker.session.timeout.ms is fenced: it leaves every
 * ISR and its leaderships move to another ISR member with a new leader
 * epoch (or, when none is left, the partition goes offline, unless
 * unclean.leader.election.enable). Leaders change their ISR with
 * AlterPartition. A standby answers NOT_CONTROLLER.
 *
 * Threads: the control-plane I/O threads call the handlers; the quorum's
 * ticker applies commits and (de)activates; a timer thread, while active,
 * fences silent brokers; the sender threads read the image. One mutex
 * guards the image and the broker table. */
#ifndef KIQ_CONTROLLER_CONTROLLER_H
#define KIQ_CONTROLLER_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "config/topic_config.h"
#include "controller/config_changes.h"
#include "core/arena.h"
#include "metrics/registry.h"
#include "proto/messages.h"
#include "raft/raft.h"
#include "security/acl.h"
#include "security/acl_snapshot.h"
#include "security/sasl_scram.h"

typedef struct kiq_controller kiq_controller_t;
struct kiq_quorum;

/* A controller of the quorum this node votes in (controller/quorum.h),
 * its image empty until the quorum commits. cfg: the hosting broker's,
 * kept (and read, for its dynamic values) until free. control_listener:
 * the listener name brokers take the controller's requests on. metrics:
 * where its lines to the brokers report (NULL: nowhere). NULL with the
 * reason. */
struct kiq_peer_security;
kiq_controller_t *kiq_controller_new(const kiq_config_t *cfg, int32_t node_id, const char *control_listener,
                                     kiq_metrics_t *metrics, struct kiq_quorum *quorum,
                                     const struct kiq_peer_security *security);
/* The quorum's hook (its ticker's thread): the image takes what was
 * committed since; the controller becomes active once this node leads and
 * its image holds everything committed before its epoch (a session's
 * grace for every registered broker, its timer started), or stops being
 * active when another node leads (its timer and senders stopped).
 * Whether it is active now. */
bool kiq_controller_quorum_changed(kiq_controller_t *c);
/* Any thread: a metadata snapshot of what the image holds now (every
 * committed record applied), whether or not one is due (active or not:
 * each voter writes its own); the quorum's log then starts after it.
 * 0 with its id (the latest one when nothing was committed since), or -1
 * with the reason. */
int kiq_controller_snapshot(kiq_controller_t *c, kiq_raft_epoch_end_t *id);
/* Any thread: waits (at most timeout_ms) until this controller decides;
 * whether it does. A lone voter's start waits so, as its broker's start
 * did when the controller replayed its log before anything else. */
bool kiq_controller_wait_active(kiq_controller_t *c, int64_t timeout_ms);
/* Any thread: whether this controller decides now. */
bool kiq_controller_active(kiq_controller_t *c);
/* Stops every thread; NULL is fine. The quorum is stopped first
 * (kiq_quorum_stop), so no write waits on it. */
void kiq_controller_free(kiq_controller_t *c);

/* Request handlers, from the control-plane I/O thread (any thread). They
 * fill the response; strings are copied into arena. */
void kiq_controller_register_broker(kiq_controller_t *c, const kiq_broker_registration_request_t *req,
                                    kiq_broker_registration_response_t *resp);
void kiq_controller_heartbeat(kiq_controller_t *c, const kiq_broker_heartbeat_request_t *req,
                              kiq_broker_heartbeat_response_t *resp);
/* AllocateProducerIds: the next KIQ_PRODUCER_ID_BLOCK ids to a registered
 * broker, recorded (ProducerIdsRecord) before they are given, so no two
 * brokers, before or after a controller restart, hand out the same id. */
#define KIQ_PRODUCER_ID_BLOCK 1000
/* UnregisterBroker: its leaderships move (fenced first, if live), then
 * its registration goes. 0, or BROKER_ID_NOT_REGISTERED, NOT_CONTROLLER
 * or another Kafka error with the reason. A live broker registers again
 * at its next heartbeat, as in Kafka: stop it first. */
int kiq_controller_unregister_broker(kiq_controller_t *c, int32_t id);
void kiq_controller_allocate_producer_ids(kiq_controller_t *c, const kiq_allocate_producer_ids_request_t *req,
                                          kiq_allocate_producer_ids_response_t *resp);
void kiq_controller_alter_partition(kiq_controller_t *c, kiq_arena_t *arena, int16_t version,
                                    const kiq_alter_partition_request_t *req, kiq_alter_partition_response_t *resp);
/* AssignReplicasToDirs: a replica assigned to KIQ_DIR_LOST is impaired
 * (its directory is full or offline, or its log damaged): its leadership
 * goes to another live ISR member and it leaves the ISR, unless it is the
 * only one (it stays leader, refusing appends, serving reads); it is not
 * elected, preferred or taken back into the ISR until assigned to a real
 * directory again. Held in memory: the brokers say it again while it
 * lasts. */
void kiq_controller_assign_replicas_to_dirs(kiq_controller_t *c, kiq_arena_t *arena,
                                            const kiq_assign_replicas_to_dirs_request_t *req,
                                            kiq_assign_replicas_to_dirs_response_t *resp);
/* Kafka's DirectoryId.LOST: "AAAAAAAAAAAAAAAAAAAAAQ". */
extern const kiq_uuid_t KIQ_DIR_LOST;
/* CreateTopics and DeleteTopics, as any broker forwards them: one topic
 * each. partitions / replication_factor -1 take the defaults. configs: the
 * topic's dynamic configs, already checked (NULL: none), written as
 * ConfigRecords in the same commit as the topic so that no broker can see
 * the topic without them. Kafka error code, the reason in the error slot. */
int kiq_controller_create_topic(kiq_controller_t *c, kiq_str_t name, int32_t partitions, int16_t replication_factor,
                                const kiq_topic_configs_t *configs, bool validate_only);
int kiq_controller_delete_topic(kiq_controller_t *c, kiq_str_t name);
/* CreatePartitions, as any broker forwards it: grows the topic to count
 * partitions, each new one a PartitionRecord with the topic's replication
 * factor, its replicas as assignments gives them (nassignments rows, one
 * per new partition; -1: none) or placed as Kafka places added partitions,
 * its ISR the live replicas and its leader the first of them. Kafka error
 * code (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS for no increase,
 * INVALID_REPLICA_ASSIGNMENT), the reason in the error slot. */
/* Kafka's checks of a CreatePartitions for one topic of `current`
 * partitions with rf replicas each: an increase, and a manual assignment
 * (nassignments rows; -1: none) of one row per new partition, each of rf
 * distinct registered brokers (broker_state: -1 unknown, 0 fenced, 1
 * live), at least one of them live; the rows go to out (when not NULL,
 * rf ids each). Any thread, no lock. Kafka error code, the reason in the
 * error slot. */
int kiq_controller_check_growth(const char *topic, int32_t current, int32_t rf, int32_t count,
                                const kiq_create_partitions_request_topics_assignments_t *assignments,
                                int32_t nassignments, int (*broker_state)(void *ctx, int32_t id), void *ctx,
                                int32_t *out);
int kiq_controller_create_partitions(kiq_controller_t *c, kiq_str_t name, int32_t count,
                                     const kiq_create_partitions_request_topics_assignments_t *assignments,
                                     int32_t nassignments, bool validate_only);
/* Any thread: a copy of the topic's dynamic configs into an empty *out
 * (the caller clears it). 0, UNKNOWN_TOPIC_OR_PARTITION, or
 * UNKNOWN_SERVER_ERROR when out of memory (out left empty). */
int kiq_controller_topic_configs(kiq_controller_t *c, const char *topic, size_t len, kiq_topic_configs_t *out);

/* Preferred-leader election now (what auto.leader.rebalance.enable does
 * every leader.imbalance.check.interval.seconds): every partition whose
 * first replica is live and in the ISR but not leading gets it back as
 * leader. Any thread; the number moved, or -1. */
int kiq_controller_elect_preferred(kiq_controller_t *c);

/* Leadership of topic-p to replica `to` (live and in the ISR), which goes
 * first in the replicas so it stays the preferred leader. Any thread. A
 * Kafka error code (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT,
 * PREFERRED_LEADER_NOT_AVAILABLE), the reason in the error slot. */
int16_t kiq_controller_move_leader(kiq_controller_t *c, const char *topic, int32_t p, int32_t to);

/* ElectLeaders: each partition named (every one for a null list, those
 * that needed no election left out) elected by Kafka's rules for the
 * preferred replica (type 0) or an unclean election (type 1), the results
 * with Kafka's error codes and messages copied into arena; another type is
 * INVALID_REQUEST. Any thread. */
void kiq_controller_elect_leaders(kiq_controller_t *c, kiq_arena_t *arena, const kiq_elect_leaders_request_t *req,
                                  kiq_elect_leaders_response_t *resp);
/* AlterPartitionReassignments (KIP-455): each partition named gets its
 * new target replicas (committed one partition at a time), or, with null
 * replicas, its reassignment cancelled (back to the replicas it had);
 * partitions with nothing to add complete at once, the others once every
 * target replica is in the ISR (after an AlterPartition, or by the
 * timer). Kafka's errors per partition with messages in arena:
 * UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, a
 * broker twice or not registered, no replica left to lead),
 * INVALID_REPLICATION_FACTOR (a size change refused, v1),
 * NO_REASSIGNMENT_IN_PROGRESS (a cancel), NOT_CONTROLLER. Any thread. */
void kiq_controller_alter_reassignments(kiq_controller_t *c, kiq_arena_t *arena,
                                        const kiq_alter_partition_reassignments_request_t *req,
                                        kiq_alter_partition_reassignments_response_t *resp);
/* ListPartitionReassignments: the partitions being reassigned among
 * those asked (null: all), with their replicas, adding and removing
 * replicas, copied into arena. Any thread. */
void kiq_controller_list_reassignments(kiq_controller_t *c, kiq_arena_t *arena,
                                       const kiq_list_partition_reassignments_request_t *req,
                                       kiq_list_partition_reassignments_response_t *resp);
/* One partition's ElectLeaders result with Kafka's message for err
 * (topic_known false: the topic is unknown), copied into arena. p is the
 * partition as asked, echoed even for an unknown topic as Kafka does (the
 * Java Admin client finds each result by the partition it asked for). No
 * lock. */
void kiq_controller_election_result(kiq_arena_t *arena, int16_t err, const char *topic, bool topic_known, int32_t p,
                                    kiq_elect_leaders_response_replica_election_results_partition_result_t *out);

/* AlterConfigs and IncrementalAlterConfigs as brokers forward them: each
 * resource (a topic, a registered broker's id, or "" for the cluster-wide
 * broker defaults) changed by controller/config_changes.h's rules, all or
 * nothing per resource, the new values written as ConfigRecords (a null
 * value for one removed) and so pushed to the brokers with the next
 * UpdateMetadata. Any thread; each order gets its outcome, messages in
 * arena. */
void kiq_controller_change_configs(kiq_controller_t *c, kiq_arena_t *arena, kiq_config_order_t *orders, int n,
                                   bool validate_only);

/* UpdateFeatures as brokers forward it (v0's allow_downgrade already
 * turned into upgrade_type, as Kafka reads it): every update checked by Kafka's rules (kiq_features_check_update)
 * against the levels the ones before it leave, then all written as
 * FeatureLevelRecords in one commit (none when validate_only), or
 * none when one is refused. Any thread. 0 or a Kafka error code
 * (INVALID_UPDATE_VERSION, NOT_CONTROLLER, REQUEST_TIMED_OUT), the reason
 * in the error slot. */
int kiq_controller_update_features(kiq_controller_t *c, const kiq_update_features_request_t *req);
/* AlterUserScramCredentials (KIP-554) decided by Kafka's rules: one
 * result per user named, a user's changes written all or none (its first
 * refusal: UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL,
 * DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND, NOT_CONTROLLER), the others'
 * in one commit. Any thread; 0, or the commit's error. */
int kiq_controller_alter_scram(kiq_controller_t *c, const kiq_alter_user_scram_credentials_request_t *req,
                               kiq_arena_t *a, kiq_alter_user_scram_credentials_response_t *out);
/* Delegation tokens (KIP-48), principal being the requester's Type:name:
 * CreateDelegationToken (owner the requester unless v3 names one, the
 * lifetime capped by delegation.token.max.lifetime.ms, the expiry
 * delegation.token.expiry.time.ms on), RenewDelegationToken and
 * ExpireDelegationToken (the token by its HMAC: DELEGATION_TOKEN_NOT_FOUND,
 * _EXPIRED, _OWNER_MISMATCH for one neither its owner, requester nor a
 * renewer; a negative expiry period removes it), written to the metadata
 * log; DELEGATION_TOKEN_AUTH_DISABLED without delegation.token.secret.key.
 * Any thread; the error code (also in *out). */
int kiq_controller_create_token(kiq_controller_t *c, const char *principal,
                                const kiq_create_delegation_token_request_t *req, kiq_arena_t *a,
                                kiq_create_delegation_token_response_t *out);
int kiq_controller_renew_token(kiq_controller_t *c, const char *principal,
                               const kiq_renew_delegation_token_request_t *req,
                               kiq_renew_delegation_token_response_t *out);
int kiq_controller_expire_token(kiq_controller_t *c, const char *principal,
                                const kiq_expire_delegation_token_request_t *req,
                                kiq_expire_delegation_token_response_t *out);
/* DescribeDelegationToken from the image: the tokens of the owners named
 * (null: all). Any thread. */
void kiq_controller_describe_tokens(kiq_controller_t *c, const kiq_describe_delegation_token_request_t *req,
                                    kiq_arena_t *a, kiq_describe_delegation_token_response_t *out);
/* SCRAM by delegation token: the credential of token_id for m (its
 * password the HMAC's base64), its owner (Type:name) and when it expires
 * (wall clock ms). 0, or -1 for no such token or tokens disabled. Any thread. */
int kiq_controller_token_credential(kiq_controller_t *c, enum kiq_scram_mech m, const char *token_id,
                                    kiq_scram_credential_t *out, char *owner, size_t cap, int64_t *expiry_ms);
/* DescribeUserScramCredentials from the image. Any thread. */
void kiq_controller_describe_scram(kiq_controller_t *c, const kiq_describe_user_scram_credentials_request_t *req,
                                   kiq_arena_t *a, kiq_describe_user_scram_credentials_response_t *out);
/* The user's credential for m into *out: 0, or -1 when none. Any thread
 * (a SASL lookup). */
int kiq_controller_scram_credential(kiq_controller_t *c, enum kiq_scram_mech m, const char *user,
                                    kiq_scram_credential_t *out);
/* CreateAcls as Kafka's AclControlManager decides: one result per
 * creation, INVALID_REQUEST for a binding it cannot keep, an existing one
 * no change, the new ones in one commit. Any thread; 0, or the commit's
 * error. */
int kiq_controller_create_acls(kiq_controller_t *c, const kiq_create_acls_request_t *req, kiq_arena_t *a,
                               kiq_create_acls_response_t *out);
/* DeleteAcls: each filter's matches removed (a binding listed under the
 * first filter matching it). Any thread; 0, or the commit's error. */
int kiq_controller_delete_acls(kiq_controller_t *c, const kiq_delete_acls_request_t *req, kiq_arena_t *a,
                               kiq_delete_acls_response_t *out);
/* DescribeAcls from the image, bindings grouped by resource pattern. Any thread. */
void kiq_controller_describe_acls(kiq_controller_t *c, const kiq_describe_acls_request_t *req, kiq_arena_t *a,
                                  kiq_describe_acls_response_t *out);
/* The image's bindings as last published, referenced (release it): the
 * authorizer's reads, without the controller's lock. Any thread. */
kiq_acl_snapshot_t *kiq_controller_acls(kiq_controller_t *c);
/* AlterClientQuotas decided by Kafka's rules (ClientQuotaControlManager):
 * one result per entity, its changes all or none; nothing written when
 * validate_only. Any thread; 0, or the commit's error. */
int kiq_controller_alter_client_quotas(kiq_controller_t *c, const kiq_alter_client_quotas_request_t *req,
                                       kiq_arena_t *a, kiq_alter_client_quotas_response_t *out);
/* DescribeClientQuotas from the image (Kafka's filter rules). Any thread. */
void kiq_controller_describe_client_quotas(kiq_controller_t *c, const kiq_describe_client_quotas_request_t *req,
                                           kiq_arena_t *a, kiq_describe_client_quotas_response_t *out);
/* Moves whenever the client quotas may have changed. Any thread, lock free. */
uint64_t kiq_controller_quotas_version(kiq_controller_t *c);
/* The quota for key (enum kiq_quota_key) that applies to user (NULL: no
 * user) and client_id by Kafka's precedence: 1 with *bound and which parts
 * the matching entity has (Kafka's metric tags keep only those); 0 when
 * none. Any thread. */
int kiq_controller_client_quota(kiq_controller_t *c, const char *user, const char *client_id, int key,
                                double *bound, bool *by_user, bool *by_client);
/* Whether any entity has a quota for key. Any thread. */
bool kiq_controller_quotas_set(kiq_controller_t *c, int key);
/* A copy of the cluster as the controller sees it, for Lua and tests. */
typedef struct kiq_controller_partition_info {
    int32_t leader, leader_epoch, partition_epoch;
    int32_t nreplicas, nisr;
    int32_t *replicas, *isr;
} kiq_controller_partition_info_t;
typedef struct kiq_controller_topic_info {
    const char *name;
    int32_t npartitions;
    kiq_controller_partition_info_t *partitions;
} kiq_controller_topic_info_t;
typedef struct kiq_controller_broker_info {
    int32_t id;
    int64_t epoch;
    bool fenced;
    const char *host; /* its client listener */
    int port;
} kiq_controller_broker_info_t;
typedef struct kiq_controller_info {
    int64_t metadata_offset;
    int nbrokers, ntopics;
    kiq_controller_broker_info_t *brokers;
    kiq_controller_topic_info_t *topics;
} kiq_controller_info_t;
/* Any thread: fills *out in arena. */
void kiq_controller_describe(kiq_controller_t *c, kiq_arena_t *arena, kiq_controller_info_t *out);
/* Any thread: leaders elected from outside the ISR so far. */
uint64_t kiq_controller_unclean_elections(kiq_controller_t *c);
/* Any thread: operations that wrote to the metadata log so far (Kafka's
 * event queue counts every operation it starts, reads too); *records gets
 * the records they wrote. */
uint64_t kiq_controller_operations(kiq_controller_t *c, uint64_t *records);

#endif
