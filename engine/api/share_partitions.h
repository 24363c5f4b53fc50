/* What ShareFetch and ShareAcknowledge share (KIP-932): the share session
 * step of a request, a partition's log as its leader, acknowledgements
 * applied to a share-partition, and the share group settings. Called with
 * the share manager's lock held (share/share_manager.h). */
#ifndef KIQ_API_SHARE_PARTITIONS_H
#define KIQ_API_SHARE_PARTITIONS_H

#include "api/api.h"
#include "share/share_manager.h"

/* The share group's settings: its group configs over the broker's
 * defaults; read holding the share lock, once per request. */
typedef struct kiq_api_share_cfg {
    int32_t lock_ms;
    int delivery_limit, max_locks;
    bool earliest; /* share.auto.offset.reset */
    bool read_committed; /* share.isolation.level: up to the last stable offset, aborted records archived */
} kiq_api_share_cfg_t;

void kiq_api_share_cfg(kiq_broker_t *b, kiq_str_t group, kiq_api_share_cfg_t *cfg);

/* The session step of a request at share_session_epoch: 0 opens one (only
 * a fetch may), -1 names the session about to close, anything else must
 * be the session's next epoch, which then moves on. 0 with *out, or
 * SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH /
 * SHARE_SESSION_LIMIT_REACHED (group.share.max.share.sessions, when
 * no session is idle past group.share.session.timeout.ms to make room) /
 * INVALID_REQUEST / UNKNOWN_SERVER_ERROR. */
int16_t kiq_api_share_session(kiq_broker_t *b, kiq_str_t group, kiq_str_t member, int32_t epoch, bool fetch,
                              kiq_share_session_t **out);

/* READ on the topic of that id, asked of the authorizer outside the share
 * lock: false only for a known topic refused (an unknown id is left to
 * kiq_api_share_log's UNKNOWN_TOPIC_ID). */
bool kiq_api_share_topic_allowed(kiq_broker_t *b, kiq_request_t *r, const kiq_uuid_t *topic_id);

/* The partition as this broker leads it: 0 with *topic (a reference) and
 * its log, or the partition's error. */
int16_t kiq_api_share_log(kiq_broker_t *b, const kiq_uuid_t *topic_id, int32_t partition, kiq_topic_t **topic);

/* A partition answered NOT_LEADER_OR_FOLLOWER: its current leader as this
 * broker's metadata knows it (KIP-951, as Fetch answers), the leader's
 * endpoint added to nodes once. */
void kiq_api_share_leader(kiq_broker_t *b, kiq_request_t *r, const kiq_uuid_t *topic, int32_t partition,
                          int32_t *leader_id, int32_t *leader_epoch, kiq_api_leader_nodes_t *nodes);

/* The group's share-partition of a partition led here: the first time
 * loaded from __share_group_state, else started where
 * share.auto.offset.reset says (and stored); moved past deleted records,
 * its expired locks given back (at now_ms). NULL when out of memory. */
kiq_share_partition_t *kiq_api_share_partition(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg, kiq_str_t group,
                                               kiq_topic_t *topic, int32_t partition, int64_t now_ms);

/* The group's share-partition as it stands, in memory or stored (loaded,
 * as after a restart); NULL when it has none (never started). */
kiq_share_partition_t *kiq_api_share_partition_stored(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg,
                                                      kiq_str_t group, const kiq_uuid_t *topic, int32_t partition);

/* The share-partition's state deleted here (its tombstone the caller's
 * to store): kept as not started and not loaded again, as this broker's
 * replica of __share_group_state may not have the tombstone yet. */
void kiq_api_share_forget(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg, kiq_str_t group, const kiq_uuid_t *topic,
                          int32_t partition);

/* Stores the share-partition's state after a change (a failure is logged:
 * the state goes on in memory). */
void kiq_api_share_store(kiq_broker_t *b, kiq_str_t group, const kiq_uuid_t *topic, int32_t partition,
                         kiq_share_partition_t *sp);

/* Announces a share point (core/observer.h) of records first..last of the
 * group's share-partition to the broker's observers (the journeys). */
void kiq_api_share_event(kiq_broker_t *b, kiq_request_t *r, enum kiq_point point, kiq_str_t group, const char *topic,
                         int32_t partition, int64_t first, int64_t last, int32_t extra, int64_t records, int16_t error,
                         int flags);

/* Announces one acknowledgement batch (SHARE_ACKNOWLEDGED): a stage per
 * run of one type; a release at the limit is archived. */
void kiq_api_share_acknowledged(kiq_broker_t *b, kiq_request_t *r, kiq_str_t group, const kiq_topic_t *topic,
                                int32_t partition, int64_t first, int64_t last, const int8_t *types, int32_t ntypes,
                                int16_t error, const kiq_share_partition_t *sp);

/* One acknowledgement batch of owner: one type for the whole range, or
 * one per offset; a renewal locks until deadline_ms. 0 or the partition's
 * acknowledge error. */
int16_t kiq_api_share_ack_batch(kiq_share_partition_t *sp, int64_t first, int64_t last, const int8_t *types,
                                int32_t ntypes, uint64_t owner, int64_t deadline_ms);

#endif
