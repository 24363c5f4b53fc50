/* A consumer group of the new consumer protocol (KIP-848), as its
 * coordinator holds it: the group epoch (bumped whenever membership,
 * subscriptions or the subscribed topics change), the target assignment
 * the server-side assignor computed for that epoch, and each member's
 * current assignment on its way to the target. Reconciliation revokes
 * before it assigns: a partition goes to a member only once no other
 * member owns it or still has to give it up.
 *
 * Pure data and rules, no I/O: guarded by the coordinator's lock
 * (group_coordinator.h) like the kiq_group_t that holds it. */
#ifndef KIQ_GROUP_CONSUMER_GROUP_H
#define KIQ_GROUP_CONSUMER_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/uuid.h"

/* One partition of a topic, by topic id. */
typedef struct kiq_cg_tp {
    kiq_uuid_t topic;
    int32_t partition;
    /* In a member's assigned and revoking sets: the member epoch it was
     * given the partition in (Kafka's assignment epoch, KIP-1251), which
     * lets a commit at an older member epoch through for it; 0 elsewhere. */
    int32_t epoch;
} kiq_cg_tp_t;

/* A set of partitions, sorted by (topic id, partition). */
typedef struct kiq_cg_set {
    kiq_cg_tp_t *v;
    int n, cap;
} kiq_cg_set_t;

/* 0, or -1 when out of memory (the set unchanged). Adding a member twice
 * keeps one (and its epoch). */
int kiq_cg_set_add(kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition);
/* The same with the partition's epoch. */
int kiq_cg_set_add_at(kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition, int32_t epoch);
bool kiq_cg_set_has(const kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition);
/* The partition in s, NULL when it is not there. */
const kiq_cg_tp_t *kiq_cg_set_get(const kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition);
bool kiq_cg_set_remove(kiq_cg_set_t *s, const kiq_uuid_t *topic, int32_t partition);
/* The same partitions (their epochs aside). */
bool kiq_cg_set_eq(const kiq_cg_set_t *a, const kiq_cg_set_t *b);
/* dst becomes a copy of src; 0 or -1. */
int kiq_cg_set_copy(kiq_cg_set_t *dst, const kiq_cg_set_t *src);
void kiq_cg_set_free(kiq_cg_set_t *s);

/* Kafka's member states, with its numbers (the CurrentMemberAssignment
 * record's State). */
enum kiq_cg_member_state {
    KIQ_CG_UNREVOKED_PARTITIONS = 1, /* must give partitions up first */
    KIQ_CG_UNRELEASED_PARTITIONS = 2, /* waits for others to give its partitions up */
    KIQ_CG_STABLE = 3,
};

/* One JoinGroup protocol of a classic member: its name and metadata (a
 * ConsumerProtocolSubscription with its version in front). */
typedef struct kiq_cg_classic_protocol {
    char *name;
    uint8_t *metadata;
    int32_t metadata_len;
} kiq_cg_classic_protocol_t;

/* A member of the classic protocol in a consumer group (Kafka's
 * ClassicMemberMetadata): it joins, syncs and heartbeats the classic way,
 * with its member epoch as the generation. */
typedef struct kiq_cg_classic {
    int32_t session_timeout_ms;
    /* monotonic; 0: none. Told to rejoin, it must JoinGroup by then; having
     * joined, SyncGroup (Kafka's join and sync timeouts: the rebalance
     * timeout); else it is removed. */
    int64_t rebalance_deadline_ns;
    kiq_cg_classic_protocol_t *protocols; /* in the member's order */
    int nprotocols;
} kiq_cg_classic_t;

/* Replaces c's protocols with copies (0, or -1 out of memory, c unchanged). */
int kiq_cg_classic_set_protocols(kiq_cg_classic_t *c, const kiq_cg_classic_protocol_t *p, int n);
void kiq_cg_classic_free(kiq_cg_classic_t *c);

typedef struct kiq_cg_member kiq_cg_member_t;
struct kiq_cg_member {
    char *id;
    char *instance_id; /* static membership; NULL: dynamic */
    char *rack_id, *client_id, *client_host;
    char *server_assignor; /* NULL: the group's default */
    char **topics;         /* subscribed topic names */
    int ntopics;
    char *regex;      /* subscribed topic regex (v1, RE2/J syntax); NULL: none */
    void *regex_code; /* regex compiled (PCRE2's pcre2_code) */
    /* The regex is new to the group in the heartbeat being handled: Kafka
     * resolves a regex no other member has in the background, so that
     * heartbeat's assignment has only the named topics, and the regex's
     * come with a later heartbeat (a new group epoch). */
    bool regex_unresolved;
    int32_t rebalance_timeout_ms;
    int32_t epoch, previous_epoch; /* -2: a static member away for now */
    enum kiq_cg_member_state state;
    kiq_cg_set_t assigned; /* owned, as the member was last told */
    kiq_cg_set_t revoking; /* still to give up (UNREVOKED_PARTITIONS) */
    kiq_cg_set_t target;   /* the assignor's, for the group's assignment epoch */
    int64_t session_deadline_ns; /* monotonic */
    int64_t revoke_deadline_ns;  /* UNREVOKED_PARTITIONS: fenced past it */
    kiq_cg_classic_t *classic;   /* NULL: a member of the consumer protocol */
    kiq_cg_member_t *next;       /* join order */
};

typedef struct kiq_cgroup {
    int32_t epoch;            /* the group epoch */
    int32_t assignment_epoch; /* the epoch the targets were computed for */
    int64_t metadata_hash;    /* of the subscribed topics, as last seen */
    kiq_cg_member_t *members;
    int nmembers;
} kiq_cgroup_t;

kiq_cgroup_t *kiq_cgroup_new(void);
void kiq_cgroup_free(kiq_cgroup_t *cg);
kiq_cg_member_t *kiq_cgroup_member(const kiq_cgroup_t *cg, const char *id, size_t len);
kiq_cg_member_t *kiq_cgroup_instance(const kiq_cgroup_t *cg, const char *instance_id, size_t len);
/* A new member (epoch 0, stable, nothing assigned) appended; NULL when out
 * of memory. */
kiq_cg_member_t *kiq_cgroup_add_member(kiq_cgroup_t *cg, const char *id, size_t len);
/* Unlinks and frees m. */
void kiq_cgroup_remove_member(kiq_cgroup_t *cg, kiq_cg_member_t *m);
void kiq_cg_member_free(kiq_cg_member_t *m);
/* Replaces m's subscribed names; returns whether they changed, or -1. */
int kiq_cg_member_set_topics(kiq_cg_member_t *m, const char *const *names, const int32_t *lens, int n);
/* Replaces m's subscribed regex (len 0: none, as a client clears it). 1
 * changed, 0 the same, -1 with the reason in the error slot: not a
 * regular expression (Kafka's INVALID_REGULAR_EXPRESSION), or out of
 * memory. Compiled with PCRE2, whose syntax covers RE2/J's (Kafka's). */
int kiq_cg_member_set_regex(kiq_cg_member_t *m, const char *re, size_t len);
/* Whether m subscribes to topic: by name, or by its regex matching the
 * whole name. */
bool kiq_cg_member_subscribes(const kiq_cg_member_t *m, const char *topic);

/* Kafka's group state names: "Empty", "Assigning" (targets behind the
 * group epoch), "Reconciling" (a member not there yet), "Stable". */
const char *kiq_cgroup_state_name(const kiq_cgroup_t *cg);

/* Whether partition (topic, partition) is owned, or still to be given up,
 * by a member other than except. */
bool kiq_cgroup_partition_taken(const kiq_cgroup_t *cg, const kiq_cg_member_t *except, const kiq_uuid_t *topic,
                                int32_t partition);

/* Moves m towards its target, as the coordinator does on each of its
 * heartbeats. owned: the partitions the member says it owns (NULL: it did
 * not say). A member with partitions to revoke that it still lists keeps
 * its epoch and is told only what it keeps; once its heartbeat no longer lists them it takes the
 * assignment epoch and whatever of its target no other member holds; what
 * others still hold it gets on a later heartbeat (UNRELEASED_PARTITIONS).
 * A partition the member gets carries the assignment epoch it gets it in.
 * now_ns starts the rebalance timeout of a revocation. Returns whether the
 * member's epoch, state or assignment changed, or -1 (out of memory). */
int kiq_cgroup_reconcile(kiq_cgroup_t *cg, kiq_cg_member_t *m, const kiq_cg_set_t *owned, int64_t now_ns);

/* What an assignor sees of a subscribed topic. */
typedef struct kiq_cg_topic {
    kiq_uuid_t id;
    const char *name;
    int32_t npartitions;
} kiq_cg_topic_t;

/* The subscribed topics' hash (names, ids, partition counts, in the
 * order given; 0 for none, as Kafka's): a change of it is a rebalance. */
int64_t kiq_cg_topics_hash(const kiq_cg_topic_t *t, int n);

/* A server-side assignor: fills every member's target from the topics
 * (the subscribed ones that exist, sorted by name); a member's previous
 * target is there to keep what it can (stickiness). 0 or -1. */
typedef int (*kiq_cg_assign_fn)(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics);

/* Kafka's UniformAssignor: balanced counts (within one for members of the
 * same subscription), sticky to the previous target. */
int kiq_cg_assign_uniform(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics);
/* Kafka's RangeAssignor: each topic's partitions in contiguous ranges
 * over its subscribers sorted by member id, the first ones one more. */
int kiq_cg_assign_range(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics);
/* Share groups' (KIP-932; assignor_share.c): every partition of a topic to
 * at least one subscriber, shared when there are more subscribers than
 * partitions. Previous targets are not kept: a share group revokes
 * nothing, a member just stops fetching what it lost. */
int kiq_cg_assign_share(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics);
/* By name ("uniform", "range", or Kafka's class names of them); NULL when
 * unknown. */
kiq_cg_assign_fn kiq_cg_assignor(const char *name, size_t len);

#endif
