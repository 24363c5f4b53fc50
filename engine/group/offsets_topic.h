/* The records of __consumer_offsets, in Kafka's formats, so the topic can
 * be read with Kafka's own tools: committed offsets (key version 1: group,
 * topic, partition; value version 3, or 1 when an explicit expiry is kept)
 * and group metadata (key version 2: group; value version 3), a null value
 * deleting the key, which compaction then drops; and the new consumer
 * protocol's groups (KIP-848, key versions 3 to 8: consumer_records.c). Both the writing and the
 * loading side run under the coordinator's lock (or before it starts). */
#ifndef KIQ_GROUP_OFFSETS_TOPIC_H
#define KIQ_GROUP_OFFSETS_TOPIC_H

#include "group/consumer_group.h"
#include "group/group.h"
#include "log/log_names.h"
#include "log/partition_log.h"
#include "proto/messages.h"
#include "record/batch.h"
#include "record/keyed_records.h"

/* Records gathered for one append; owned by the calling thread. */
typedef struct kiq_offsets_records {
    kiq_keyed_records_t k;
    int64_t last_offset; /* of the last record appended; -1 before */
} kiq_offsets_records_t;

void kiq_offsets_records_init(kiq_offsets_records_t *rs, int64_t now_ms);
void kiq_offsets_records_free(kiq_offsets_records_t *rs);
/* Each returns 0, or -1 with the reason in the error slot. */
int kiq_offsets_records_add_commit(kiq_offsets_records_t *rs, const char *group, const kiq_group_offset_t *o);
int kiq_offsets_records_add_commit_tombstone(kiq_offsets_records_t *rs, const char *group, const char *topic,
                                             int32_t partition);
int kiq_offsets_records_add_group(kiq_offsets_records_t *rs, const kiq_group_t *g);
int kiq_offsets_records_add_group_tombstone(kiq_offsets_records_t *rs, const char *group);
/* A consumer group's records, by key version (the record type): the
 * group epoch, a member's subscription, the target assignment's epoch, a
 * member's target, a member's current assignment (4, the subscribed
 * topics' metadata, is not written: it is computed again from the
 * cluster's). */
enum {
    KIQ_OFFSETS_KEY_CGROUP = 3,
    KIQ_OFFSETS_KEY_CPARTITIONS = 4,
    KIQ_OFFSETS_KEY_CMEMBER = 5,
    KIQ_OFFSETS_KEY_CTARGET_EPOCH = 6,
    KIQ_OFFSETS_KEY_CTARGET = 7,
    KIQ_OFFSETS_KEY_CCURRENT = 8,
};
int kiq_offsets_records_add_cgroup(kiq_offsets_records_t *rs, const char *group, const kiq_cgroup_t *cg);
int kiq_offsets_records_add_cmember(kiq_offsets_records_t *rs, const char *group, const kiq_cg_member_t *m);
int kiq_offsets_records_add_ctarget_epoch(kiq_offsets_records_t *rs, const char *group, const kiq_cgroup_t *cg);
int kiq_offsets_records_add_ctarget(kiq_offsets_records_t *rs, const char *group, const kiq_cg_member_t *m);
int kiq_offsets_records_add_ccurrent(kiq_offsets_records_t *rs, const char *group, const kiq_cg_member_t *m);
/* A tombstone of record type `type`; member NULL for types 3 and 6. */
int kiq_offsets_records_add_ctombstone(kiq_offsets_records_t *rs, int16_t type, const char *group,
                                       const char *member);
/* One batch with everything added, into *w (kiq_wr_free it); 0, or -1
 * with *w freed. */
int kiq_offsets_records_build(kiq_offsets_records_t *rs, kiq_wr_t *w);
/* That batch appended to log as it is (leader epoch stamped);
 * rs->last_offset gets its last offset. Nothing added: nothing appended.
 * 0 or -1. */
int kiq_offsets_records_append(kiq_offsets_records_t *rs, kiq_partition_log_t *log, int32_t leader_epoch);

/* What loading a partition of __consumer_offsets finds, in log order; the
 * views point into data that lives only during the call. v NULL: deleted. */
typedef struct kiq_offsets_loader {
    void *ctx;
    /* txn_producer: the producer whose transaction wrote it (its marker
     * decides), -1 for a plain commit */
    void (*offset)(void *ctx, kiq_str_t group, kiq_str_t topic, int32_t partition,
                   const kiq_offset_commit_value_t *v, int64_t txn_producer);
    void (*group)(void *ctx, kiq_str_t group, const kiq_group_metadata_value_t *v);
    /* a consumer group's record: type is its key version (3, 5-8), member
     * the member id of types 5, 7 and 8, v the decoded value of its type
     * (kiq_consumer_group_<...>_value_t; NULL: a tombstone) */
    void (*consumer)(void *ctx, int16_t type, kiq_str_t group, kiq_str_t member, const void *v);
    /* a transaction marker (may be NULL) */
    void (*marker)(void *ctx, int64_t producer_id, bool commit);
} kiq_offsets_loader_t;

/* Reads the partition from its log start to its end. Records of unknown
 * versions are skipped with a warning (a newer broker wrote them). Returns
 * the number of records applied, or -1. */
int kiq_offsets_topic_load(kiq_partition_log_t *log, const kiq_offsets_loader_t *ld);

#endif
