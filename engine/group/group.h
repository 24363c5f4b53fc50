/* A consumer group as its coordinator holds it: members, the generation and
 * protocol chosen at the last rebalance, and the group's committed offsets.
 * Every group and member is guarded by the coordinator's lock
 * (group_coordinator.h); nothing here locks. */
#ifndef KIQ_GROUP_GROUP_H
#define KIQ_GROUP_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/str_map.h"
#include "net/request.h"
#include "proto/types.h"

/* Kafka's group states, in its order. */
enum kiq_group_state {
    KIQ_GROUP_EMPTY,
    KIQ_GROUP_PREPARING_REBALANCE,
    KIQ_GROUP_COMPLETING_REBALANCE,
    KIQ_GROUP_STABLE,
    KIQ_GROUP_DEAD,
};

/* Kafka's names: "Empty", "PreparingRebalance", ... */
const char *kiq_group_state_name(enum kiq_group_state s);

/* One protocol a member supports (an assignor, for consumers), with the
 * member's metadata for it (its subscription). */
typedef struct kiq_group_protocol {
    char *name;
    uint8_t *metadata;
    int32_t metadata_len;
} kiq_group_protocol_t;

typedef struct kiq_group_member kiq_group_member_t;
struct kiq_group_member {
    char *id;
    char *instance_id; /* static membership (group.instance.id); NULL: dynamic */
    char *client_id, *client_host;
    int32_t session_timeout_ms, rebalance_timeout_ms;
    kiq_group_protocol_t *protocols; /* in the member's order of preference */
    int nprotocols;
    uint8_t *assignment; /* from the leader's SyncGroup; NULL: none yet */
    int32_t assignment_len;
    int64_t heartbeat_deadline_ns; /* monotonic; the session expires there */
    /* A parked JoinGroup or SyncGroup of this member, answered when the
     * rebalance reaches the next step (or the member goes). */
    kiq_request_t *join_r;
    void *join_resp; /* kiq_join_group_response_t in join_r's arena */
    kiq_request_t *sync_r;
    void *sync_resp; /* kiq_sync_group_response_t in sync_r's arena */
    kiq_group_member_t *next; /* join order */
};

/* A member id handed out with MEMBER_ID_REQUIRED, not yet used to join. */
typedef struct kiq_group_pending {
    char *id;
    int64_t deadline_ns;
    struct kiq_group_pending *next;
} kiq_group_pending_t;

/* A committed offset of one partition. */
typedef struct kiq_group_offset {
    char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;    /* -1: unknown */
    kiq_str_t metadata;      /* its own copy of any bytes (NULs too); p NULL: null */
    int64_t commit_ts_ms;
    int64_t expire_ts_ms;    /* -1: by offsets.retention.minutes */
} kiq_group_offset_t;

/* An offset a transactional producer committed for the group
 * (TxnOffsetCommit), kept aside until its transaction's marker reaches the
 * group's partition: a commit makes it the committed offset, an abort
 * drops it. */
typedef struct kiq_group_txn_offset {
    int64_t producer_id;
    kiq_group_offset_t *o;
    struct kiq_group_txn_offset *next;
} kiq_group_txn_offset_t;

typedef struct kiq_group {
    char *id;
    int32_t offsets_partition; /* of __consumer_offsets */
    enum kiq_group_state state;
    int64_t state_ts_ms; /* wall clock of the last state change */
    char *protocol_type; /* NULL until a member joined: a standalone committer */
    char *protocol;      /* chosen at the last rebalance; NULL when Empty */
    int32_t generation;
    char *leader; /* member id; NULL when Empty */
    kiq_group_member_t *members;
    int nmembers;
    kiq_group_pending_t *pending;
    /* PreparingRebalance: when the join phase ends, and the first join of
     * an empty group waiting group.initial.rebalance.delay.ms for more
     * members (extended while new ones come, up to the rebalance timeout). */
    int64_t join_deadline_ns;
    bool initial_delay;
    bool new_member_added;
    int64_t initial_remaining_ms;
    kiq_str_map_t *offsets; /* offset_key() -> kiq_group_offset_t */
    kiq_group_txn_offset_t *txn_offsets; /* pending, oldest first */
    /* a group of the new consumer protocol (KIP-848); NULL: a classic
     * group (members above), or one that only has offsets */
    struct kiq_cgroup *consumer;
    /* a share group (KIP-932): members and targets as a consumer group's,
     * without revocation; kept in memory only (not in __consumer_offsets) */
    struct kiq_cgroup *share;
} kiq_group_t;

kiq_group_t *kiq_group_new(const char *id, size_t len, int32_t offsets_partition);
/* Frees members, pending ids and offsets; parked requests must have been
 * answered. */
void kiq_group_free(kiq_group_t *g);

kiq_group_member_t *kiq_group_find_member(const kiq_group_t *g, kiq_str_t id);
kiq_group_member_t *kiq_group_find_instance(const kiq_group_t *g, kiq_str_t instance_id);
void kiq_group_member_free(kiq_group_member_t *m);
/* Unlinks m from the members (not freed). */
void kiq_group_unlink_member(kiq_group_t *g, kiq_group_member_t *m);
/* Copies the protocols into m, replacing its own; -1 when out of memory. */
int kiq_group_member_set_protocols(kiq_group_member_t *m, const kiq_group_protocol_t *p, int n);
/* The member's metadata for protocol name (NULL when it does not support it). */
const kiq_group_protocol_t *kiq_group_member_protocol(const kiq_group_member_t *m, const char *name);
/* True when every member supports at least one of protos (Kafka's
 * supportsProtocols for a non-empty group). */
bool kiq_group_supports(const kiq_group_t *g, const kiq_group_protocol_t *protos, int n);
/* Kafka's choice: among the protocols every member supports, each member
 * votes for its most preferred one; the most votes wins (the first such in
 * the first member's order on a tie). NULL when there is none. */
const char *kiq_group_select_protocol(const kiq_group_t *g);

/* Committed offsets: lookup, insert-or-replace (taking ownership of o),
 * removal (freed). */
kiq_group_offset_t *kiq_group_get_offset(const kiq_group_t *g, const char *topic, size_t len, int32_t partition);
int kiq_group_put_offset(kiq_group_t *g, kiq_group_offset_t *o);
void kiq_group_remove_offset(kiq_group_t *g, const char *topic, size_t len, int32_t partition);
void kiq_group_offset_free(kiq_group_offset_t *o);

/* Transactional offsets: o (taken) pending for producer_id, replacing its
 * earlier one for the same partition (0, or -1 out of memory); the
 * producer's transaction ended (commit: they become the committed
 * offsets; how many there were); whether a partition has one pending
 * (OffsetFetch's require_stable). */
int kiq_group_add_txn_offset(kiq_group_t *g, int64_t producer_id, kiq_group_offset_t *o);
int kiq_group_end_txn(kiq_group_t *g, int64_t producer_id, bool commit);
bool kiq_group_txn_pending(const kiq_group_t *g, const char *topic, size_t len, int32_t partition);


#endif
