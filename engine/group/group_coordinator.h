/* The group coordinator (Kafka's GroupCoordinator and GroupMetadataManager
 * in one): consumer group membership and rebalances, and committed offsets
 * kept in the compacted internal topic __consumer_offsets in Kafka's
 * record formats, reloaded when the broker starts.
 *
 * Threads: request handlers call in from I/O threads; a timer thread of its
 * own expires sessions, ends join phases and expires offsets. One mutex
 * guards every group (operations are short; the only I/O under it is the
 * append of a commit to the local log, which keeps the log and the cache
 * in the same order). Parked JoinGroup / SyncGroup requests are answered
 * with kiq_request_respond from whichever thread moves the group on. */
#ifndef KIQ_GROUP_GROUP_COORDINATOR_H
#define KIQ_GROUP_GROUP_COORDINATOR_H

#include "config/config.h"
#include "controller/metadata_cache.h"
#include "core/view.h"
#include "group/offsets_topic.h"
#include "log/topics.h"
#include "net/request.h"
#include "proto/messages.h"

typedef struct kiq_group_coordinator kiq_group_coordinator_t;

/* What the coordinator works with, from the broker that owns it; all of
 * it outlives the coordinator. */
typedef struct kiq_group_context {
    const kiq_config_t *config; /* its settings, and __consumer_offsets' */
    kiq_topics_t *topics;       /* where __consumer_offsets lives */
    bool cluster;               /* groups come with the partitions led here */
    kiq_metadata_cache_t *metadata; /* cluster mode: which topics exist */
} kiq_group_context_t;

/* The context is copied. NULL when out of memory. */
kiq_group_coordinator_t *kiq_group_coordinator_new(const kiq_group_context_t *ctx);
/* Loads groups and offsets from __consumer_offsets (when it exists; in
 * cluster mode only as partitions come to be led here) and starts the
 * timer thread. Call after the broker's topics are open. */
int kiq_group_coordinator_start(kiq_group_coordinator_t *gc);
/* Any thread: answers every parked request (NOT_COORDINATOR, so clients
 * look for the coordinator again), joins the timer thread; later calls
 * answer NOT_COORDINATOR at once. */
void kiq_group_coordinator_stop(kiq_group_coordinator_t *gc);
/* After stop, once no handler can call in any more. */
void kiq_group_coordinator_free(kiq_group_coordinator_t *gc);

/* Creates __consumer_offsets if it is not there yet (FindCoordinator does,
 * as Kafka does). Kafka error code. In cluster mode the controller creates
 * it: COORDINATOR_NOT_AVAILABLE while it is not hosted here. */
int kiq_group_coordinator_ensure_topic(kiq_group_coordinator_t *gc);

/* Cluster mode, any thread (the replica manager's, on LeaderAndIsr and
 * StopReplica): this broker now leads (led) partition `partition` of
 * __consumer_offsets, so it coordinates its groups, loaded from its log;
 * or no longer does (!led): they are dropped, their parked requests
 * answered NOT_COORDINATOR. Requests for groups of partitions not led
 * here are answered NOT_COORDINATOR. Repeating a call changes nothing. */
void kiq_group_coordinator_partition_led(kiq_group_coordinator_t *gc, int32_t partition, bool led);

/* The operations, from I/O threads. Each takes the decoded request and
 * fills the response (allocating in r's arena). JoinGroup and SyncGroup
 * return true when they parked the request, to wait for the rebalance: it
 * is answered later with kiq_request_respond, from whichever thread moves
 * the group on; false when the response is ready now. */
bool kiq_group_join(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_join_group_request_t *req,
                   kiq_join_group_response_t *resp);
bool kiq_group_sync(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_sync_group_request_t *req,
                   kiq_sync_group_response_t *resp);
void kiq_group_heartbeat(kiq_group_coordinator_t *gc, const kiq_heartbeat_request_t *req,
                         kiq_heartbeat_response_t *resp);
void kiq_group_leave(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_leave_group_request_t *req,
                     kiq_leave_group_response_t *resp);
/* *replicated_at gets the offset of __consumer_offsets' partition
 * *partition the high watermark must pass before the commit is safe to
 * acknowledge (-1: nothing to wait for, e.g. a refused commit). */
void kiq_group_commit_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_offset_commit_request_t *req, kiq_offset_commit_response_t *resp,
                              int32_t *partition, int64_t *replicated_at);
/* TxnOffsetCommit: the offsets are written to __consumer_offsets in the
 * producer's transaction and kept pending (not fetched, not expired)
 * until its marker; *partition and *replicated_at as for OffsetCommit. */
void kiq_group_txn_commit_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                  const kiq_txn_offset_commit_request_t *req, kiq_txn_offset_commit_response_t *resp,
                                  int32_t *partition, int64_t *replicated_at);
/* Any thread: a transaction marker of producer_id reached partition
 * `partition` of __consumer_offsets (led here): the producer's pending
 * offsets in the partition's groups are committed or dropped. */
void kiq_group_coordinator_txn_marker(kiq_group_coordinator_t *gc, int32_t partition, int64_t producer_id,
                                      bool commit);
/* The new consumer protocol's (KIP-848). The heartbeat's records (a new
 * member, epoch, target, assignment) go to __consumer_offsets;
 * *partition and *replicated_at as for OffsetCommit: the answer waits for
 * them, as Kafka's does, so a member never works from an assignment a
 * coordinator failover forgets. */
void kiq_group_consumer_heartbeat(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                  const kiq_consumer_group_heartbeat_request_t *req,
                                  kiq_consumer_group_heartbeat_response_t *resp, int32_t *partition,
                                  int64_t *replicated_at);
void kiq_group_consumer_describe(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                 const kiq_consumer_group_describe_request_t *req,
                                 kiq_consumer_group_describe_response_t *resp);
/* Share groups (KIP-932; group_share.c). */
void kiq_group_share_heartbeat(kiq_group_coordinator_t *gc, kiq_request_t *r,
                               const kiq_share_group_heartbeat_request_t *req,
                               kiq_share_group_heartbeat_response_t *resp);
void kiq_group_share_describe(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_share_group_describe_request_t *req,
                              kiq_share_group_describe_response_t *resp);
/* The admin calls on a share group's offsets: 0 when the group is a share
 * group this broker coordinates (and, when empty, has no members), else
 * NOT_COORDINATOR, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP. create: a group
 * of none becomes an empty share group (Kafka's AlterShareGroupOffsets). */
int16_t kiq_group_share_check(kiq_group_coordinator_t *gc, kiq_str_t group, bool empty, bool create);
void kiq_group_fetch_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                             const kiq_offset_fetch_request_t *req, kiq_offset_fetch_response_t *resp);
void kiq_group_delete_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_offset_delete_request_t *req, kiq_offset_delete_response_t *resp);
void kiq_group_list(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_list_groups_request_t *req,
                    kiq_list_groups_response_t *resp);
void kiq_group_describe(kiq_group_coordinator_t *gc, kiq_request_t *r,
                        const kiq_describe_groups_request_t *req, kiq_describe_groups_response_t *resp);
void kiq_group_delete(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_delete_groups_request_t *req,
                      kiq_delete_groups_response_t *resp);

/* A copy of the groups for inspection (the Lua API), every string and
 * array in the caller's arena; NULL strings stay NULL. */
typedef struct kiq_group_info_member {
    const char *id, *instance_id, *client_id, *client_host;
    int32_t session_timeout_ms, rebalance_timeout_ms;
    const uint8_t *assignment; /* ConsumerProtocolAssignment for consumers; NULL: none */
    int32_t assignment_len;
} kiq_group_info_member_t;

typedef struct kiq_group_info_offset {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    const char *metadata; /* metadata_len bytes (NULs too); NULL: null */
    int32_t metadata_len;
    int64_t commit_ts_ms;
} kiq_group_info_offset_t;

typedef struct kiq_group_info {
    const char *id, *state, *protocol_type, *protocol, *leader;
    int32_t generation;
    int32_t offsets_partition;
    int nmembers, noffsets;
    kiq_group_info_member_t *members;
    kiq_group_info_offset_t *offsets;
} kiq_group_info_t;

/* Any thread: the groups as they are now, sorted by id; returns how many. */
int kiq_group_coordinator_snapshot(kiq_group_coordinator_t *gc, kiq_arena_t *a, kiq_group_info_t **out);

/* Any thread: "consumer_groups", the new protocol's groups (group epoch,
 * assignment epoch, each member's epoch, state, assigned, revoking and
 * target partitions), into v (group_view.c). */
void kiq_group_coordinator_view(kiq_group_coordinator_t *gc, const kiq_view_t *v);

#endif
