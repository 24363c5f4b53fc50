/* What the group coordinator's files share (group/group_coordinator.c:
 * state, lifecycle and timers; group_membership.c: joins, syncs,
 * heartbeats, leaves and the admin calls; group_offsets.c: commits,
 * fetches, deletes and expiry; group_load.c: loading from
 * __consumer_offsets). Internal to engine/group; every function here is
 * called with the coordinator's mutex held unless it says otherwise. */
#ifndef KIQ_GROUP_COORDINATOR_INTERNAL_H
#define KIQ_GROUP_COORDINATOR_INTERNAL_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/metadata_cache.h"
#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"
#include "core/uuid.h"
#include "group/group_coordinator.h"
#include "proto/acl_operations.h"
#include "replica/leader.h"
#include "replica/partition_replica.h"

struct kiq_group_coordinator {
    kiq_group_context_t b; /* fixed */
    pthread_mutex_t mu; /* guards everything below and every group */
    /* its deadlines (sessions, joins, pending members, offset expiry), one
     * worker from start to stop; poked when a deadline moved */
    struct kiq_worker *timers;
    bool closed; /* stopped: answer NOT_COORDINATOR */
    /* Cluster mode: only the groups of the __consumer_offsets partitions
     * this broker leads are here (led[p], grown as needed); others are
     * answered NOT_COORDINATOR. */
    bool cluster;
    bool *led;
    int32_t nled;
    kiq_str_map_t *groups; /* id -> kiq_group_t */
    /* consumer protocol groups (KIP-848): group.consumer.* */
    int32_t consumer_heartbeat_ms, consumer_session_ms, consumer_max_size;
    bool migration_upgrade, migration_downgrade; /* group.consumer.migration.policy */
    int32_t share_heartbeat_ms, share_session_ms, share_max_size; /* share groups: group.share.* */
    int32_t initial_delay_ms, min_session_ms, max_session_ms, max_size, metadata_max;
    int64_t retention_ms, retention_check_ms;
    int64_t next_retention_ns;
};

/* group_coordinator.c */
kiq_str_t kiq_gc_astr(kiq_request_t *r, const char *s);
bool kiq_gc_str_eq(const char *s, kiq_str_t k);
bool kiq_gc_str_empty(kiq_str_t s);
char *kiq_gc_dup_str(kiq_str_t s);
/* A copy of all of s's bytes, NULs included (commit metadata is bytes with
 * a length); KIQ_STR_NULL for null, or when out of memory. */
kiq_str_t kiq_gc_copy_str(kiq_str_t s);
kiq_group_t *kiq_gc_find_group(kiq_group_coordinator_t *gc, kiq_str_t id);
bool kiq_gc_leads(const kiq_group_coordinator_t *gc, int32_t partition);
/* Under mu: whether a request for the group gets NOT_COORDINATOR: the
 * coordinator stopped, or (cluster mode) another broker leads the group's
 * partition. A missing id is left to the operation's own checks. */
bool kiq_gc_refused(kiq_group_coordinator_t *gc, kiq_str_t id);
kiq_group_t *kiq_gc_create_group(kiq_group_coordinator_t *gc, kiq_str_t id);
void kiq_gc_remove_group(kiq_group_coordinator_t *gc, kiq_group_t *g);
void kiq_gc_set_state(kiq_group_t *g, enum kiq_group_state s);
/* Kafka's form: the client id, a dash and a random UUID. */
char *kiq_gc_new_member_id(kiq_str_t client_id);
/* Appends records to the group's partition of __consumer_offsets: 0, -1,
 * or the Kafka error code of a producer check (a transactional commit's
 * epoch), with the reason in the error slot. */
int kiq_gc_append_records(kiq_group_coordinator_t *gc, const kiq_group_t *g, kiq_offsets_records_t *rs);
/* Writes the group's metadata; a failure is logged: the group goes on in
 * memory and its next change writes it again. */
void kiq_gc_store_group(kiq_group_coordinator_t *gc, kiq_group_t *g);

/* group_load.c */
/* Under mu: the groups and offsets of one partition of __consumer_offsets
 * (only < 0: of all of them). */
int kiq_gc_load_partitions(kiq_group_coordinator_t *gc, int32_t only);

/* group_membership.c */
void kiq_gc_touch(kiq_group_member_t *m);
/* Answers m's parked JoinGroup: with the current generation when error is
 * 0, else with the error. */
void kiq_gc_answer_join(kiq_group_t *g, kiq_group_member_t *m, int16_t error);
/* Answers m's parked SyncGroup: its assignment when error is 0. */
void kiq_gc_answer_sync(kiq_group_t *g, kiq_group_member_t *m, int16_t error);
void kiq_gc_try_complete_join(kiq_group_coordinator_t *gc, kiq_group_t *g);
/* A classic group's rebalance begins (members rejoin). */
void kiq_gc_prepare_rebalance(kiq_group_coordinator_t *gc, kiq_group_t *g, const char *why);
void kiq_gc_remove_member(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_group_member_t *m, const char *why);
/* Holding mu: a deadline moved; the timers look again. */
void kiq_gc_deadline_moved(kiq_group_coordinator_t *gc);
/* The join phase's deadline passed (timer thread). */
void kiq_gc_join_deadline(kiq_group_coordinator_t *gc, kiq_group_t *g);
/* The checks SyncGroup, Heartbeat and OffsetCommit share: 0 with *out, or
 * the Kafka error. */
int16_t kiq_gc_check_member(kiq_group_t *g, kiq_str_t member_id, kiq_str_t instance_id, int32_t generation,
                            kiq_group_member_t **out);
/* Tombstones for the group's offsets and metadata, then it is gone. */
int kiq_gc_delete_group(kiq_group_coordinator_t *gc, kiq_group_t *g);

/* group_consumer.c: consumer protocol groups (KIP-848) */
/* Whether the topic exists, with its id and partition count. */
bool kiq_gc_topic_info(kiq_group_coordinator_t *gc, const char *name, kiq_arena_t *a, kiq_uuid_t *id, int32_t *np);
/* The topic's name, in a, or NULL when it is gone. */
const char *kiq_gc_topic_name(kiq_group_coordinator_t *gc, const kiq_uuid_t *id, kiq_arena_t *a);
/* Kafka shows a member's address as "/host", without the port. */
char *kiq_gc_client_host(const char *peer);
/* A heartbeating member's client id and host, taken once (the first
 * heartbeat's; Kafka keeps them). */
void kiq_gc_member_identify(kiq_cg_member_t *m, const kiq_request_t *r);
/* The member's subscription by name from a heartbeat (n < 0: not sent,
 * kept); 1 when it changed, else 0. */
int kiq_gc_member_subscribe(kiq_cg_member_t *m, kiq_arena_t *a, const kiq_str_t *names, int32_t n);
/* Under mu, timer thread: sessions and revocations past their deadlines;
 * returns the group's next deadline (INT64_MAX: none). */
int64_t kiq_gc_consumer_timers(kiq_group_coordinator_t *gc, kiq_group_t *g, int64_t now_ns);
/* OffsetCommit / OffsetFetch of a consumer group by member_id at
 * member_epoch: NONE, UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH. An empty
 * member id with a negative epoch (a tool's commit) passes while the group
 * has no members. */
int16_t kiq_gc_consumer_check_member(kiq_group_t *g, kiq_str_t member_id, int32_t member_epoch);
/* OffsetCommit of one partition when the group check said
 * STALE_MEMBER_EPOCH: a commit at an older member epoch passes for a
 * partition the member has had since that epoch or before (Kafka's
 * assignment epochs, KIP-1251), as a commit sent while a heartbeat bumped
 * the epoch may be. NONE, UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH. */
int16_t kiq_gc_consumer_check_commit(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_str_t member_id,
                                     int32_t member_epoch, kiq_str_t topic, int32_t partition);
/* Appends a consumer group's records; a failure is logged (the group goes
 * on in memory and its next change writes its records again). */
void kiq_gc_consumer_store(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_offsets_records_t *rs);
/* A member's session: a classic member's own timeout, else
 * group.consumer.session.timeout.ms. */
int32_t kiq_gc_member_session_ms(const kiq_group_coordinator_t *gc, const kiq_cg_member_t *m);
/* m leaves: its tombstones and a new group epoch into rs, or, when only
 * classic members stay, the group downgraded to a classic group that
 * rebalances (returns true: g->consumer is gone). */
bool kiq_gc_consumer_remove_member(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_cg_member_t *m, const char *why,
                                   kiq_offsets_records_t *rs);
/* The group epoch moved when subscription (m's changed, or m is new) or
 * the subscribed topics say so, the target computed for it, and m
 * reconciled towards it (owned: what it says it owns, NULL: not said).
 * 1 when m changed, 0, or -1 with the reason in the error slot. */
int kiq_gc_consumer_rebalance(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_cg_member_t *m, bool subscription,
                              const kiq_cg_set_t *owned, int64_t now, kiq_offsets_records_t *rs);
/* Loading: one consumer group record (offsets_topic.h's loader). */
void kiq_gc_consumer_load(kiq_group_coordinator_t *gc, int16_t type, kiq_str_t group, kiq_str_t member,
                          const void *v);
/* After loading: sessions start now. */
void kiq_gc_consumer_loaded(kiq_group_coordinator_t *gc, kiq_group_t *g);

/* group_mixed.c: classic members in consumer groups (KIP-848's online
 * migration) */
/* A classic group with members becomes a consumer group (its records into
 * rs): NONE, or GROUP_ID_NOT_FOUND with the reason in the error slot. */
int16_t kiq_gc_consumer_upgrade(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_offsets_records_t *rs);
/* Leaving leaves only classic members: the group becomes a classic one
 * at the group epoch, each member's target its assignment, the consumer
 * records' tombstones into rs (true); else nothing changes (false). */
bool kiq_gc_consumer_downgrade(kiq_group_coordinator_t *gc, kiq_group_t *g, const kiq_cg_member_t *leaving,
                               kiq_offsets_records_t *rs);
/* The classic protocol's requests to a consumer group with members: a
 * JoinGroup answered at once (never parked: returns false), SyncGroup
 * filling resp's assignment, Heartbeat, one leaving member; the others
 * return NONE or the Kafka error. */
bool kiq_gc_classic_join_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_request_t *r,
                                  const kiq_join_group_request_t *req, const kiq_group_protocol_t *protos, int nprotos,
                                  int32_t rebalance_ms, kiq_join_group_response_t *resp);
int16_t kiq_gc_classic_sync_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_request_t *r,
                                     const kiq_sync_group_request_t *req, kiq_sync_group_response_t *resp);
int16_t kiq_gc_classic_heartbeat_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g,
                                          const kiq_heartbeat_request_t *req);
int16_t kiq_gc_classic_leave_consumer(kiq_group_coordinator_t *gc, kiq_group_t *g, kiq_str_t member_id,
                                      kiq_str_t instance_id);

/* group_share.c: share groups (KIP-932) */
/* Under mu, timer thread: members whose sessions ended leave; returns the
 * group's next deadline (INT64_MAX: none). */
int64_t kiq_gc_share_timers(kiq_group_coordinator_t *gc, kiq_group_t *g, int64_t now_ns);

/* group_offsets.c */
/* How many partitions the cluster says the topic has (-1: no such topic).
 * In cluster mode that is the metadata cache: a coordinator need not host
 * a replica of every topic its groups commit offsets for. */
int32_t kiq_gc_partition_count(kiq_group_coordinator_t *gc, kiq_str_t name);
/* A committed offset of partition `partition` of topic (npartitions of
 * them) into *out, its times left for the caller: NONE, or
 * UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE (past
 * offset.metadata.max.bytes), UNKNOWN_SERVER_ERROR (memory). */
int16_t kiq_gc_offset_new(kiq_group_coordinator_t *gc, kiq_str_t topic, int32_t npartitions, int32_t partition,
                          int64_t offset, int32_t leader_epoch, kiq_str_t metadata, kiq_group_offset_t **out);
/* Offsets past offsets.retention.minutes: Kafka counts from when the group
 * became empty, or from each commit for a group that never had members. */
void kiq_gc_expire_offsets(kiq_group_coordinator_t *gc, int64_t now_ms);

/* A heartbeat answer's assignment from set, by topic: ConsumerGroupHeartbeat
 * and ShareGroupHeartbeat answer it in one shape, two generated types
 * (prefix: the response type's name without _t). */
#define KIQ_GC_FILL_ASSIGNMENT(r, set, resp, prefix)                                                      \
    do {                                                                                               \
        (resp)->assignment_null = false;                                                               \
        prefix##_assignment_t *as_ = &(resp)->assignment;                                              \
        prefix##_assignment_init(as_);                                                                 \
        as_->topic_partitions =                                                                        \
            kiq_arena_calloc(&(r)->arena, (size_t)((set)->n ? (set)->n : 1), sizeof *as_->topic_partitions); \
        for (int i_ = 0; i_ < (set)->n; i_++) {                                                        \
            prefix##_assignment_topic_partitions_t *tp_ =                                              \
                as_->topic_partitions_n ? &as_->topic_partitions[as_->topic_partitions_n - 1] : NULL;  \
            if (!tp_ || memcmp(tp_->topic_id.b, (set)->v[i_].topic.b, 16) != 0) {                      \
                tp_ = &as_->topic_partitions[as_->topic_partitions_n++];                               \
                prefix##_assignment_topic_partitions_init(tp_);                                        \
                tp_->topic_id = (set)->v[i_].topic;                                                    \
                tp_->partitions = kiq_arena_calloc(&(r)->arena, (size_t)(set)->n, sizeof *tp_->partitions); \
            }                                                                                          \
            tp_->partitions[tp_->partitions_n++] = (set)->v[i_].partition;                             \
        }                                                                                              \
    } while (0)

#endif
