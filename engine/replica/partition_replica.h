/* A partition's replication state on this broker: its role, the leader and
 * leader epoch the controller last handed out, the replica set and ISR,
 * and, while leading, how far each follower has fetched. The high
 * watermark itself lives in the partition log (so it is checkpointed with
 * it); this state decides when it moves: to the lowest log end offset in
 * the ISR.
 *
 * Each state has its own mutex; every function locks it and may be called
 * from any thread (I/O threads for produce and fetch, the control-plane
 * thread for LeaderAndIsr, the ISR expiry thread). */
#ifndef KIQ_REPLICA_PARTITION_REPLICA_H
#define KIQ_REPLICA_PARTITION_REPLICA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/metadata_image.h"
#include "core/observer.h"
#include "log/partition_log.h"
#include "log/topics.h"

typedef enum kiq_replica_role {
    KIQ_REPLICA_NONE,     /* not a replica here (or stopped) */
    KIQ_REPLICA_LEADER,
    KIQ_REPLICA_FOLLOWER,
} kiq_replica_role_t;

/* What the leader knows of one follower. */
typedef struct kiq_follower_state {
    int32_t broker_id;
    int64_t leo;                      /* its last fetch offset: it has everything below */
    int64_t last_caught_up_ms;        /* last time it had everything the leader had */
    int64_t last_fetch_ms;
    int64_t leader_leo_at_last_fetch; /* Kafka's rule for "caught up" between fetches */
    int64_t left_isr_at;              /* out of the ISR: where the high watermark was when it left
                                       * (or this term began); -1 while in it */
} kiq_follower_state_t;

/* A copy for reports and requests; a value. */
typedef struct kiq_replica_view {
    kiq_replica_role_t role;
    int32_t leader, leader_epoch, partition_epoch;
    int nreplicas, nisr, nfollowers;
    int32_t replicas[KIQ_MAX_REPLICAS];
    int32_t isr[KIQ_MAX_REPLICAS];
    kiq_follower_state_t followers[KIQ_MAX_REPLICAS];
    bool isr_change_pending;
    /* Leader: its log end when this term began (-1: none). Until the high
     * watermark reaches it, this leader does not know how far the last
     * one had committed (Kafka's KIP-207). */
    int64_t epoch_start_offset;
} kiq_replica_view_t;

typedef struct kiq_partition_replica {
    /* Where HW_ADVANCED and FOLLOWER_LEO go, for which partition: fixed
     * when the state is made (NULL: nowhere). */
    const kiq_observers_t *observers;
    const char *topic; /* the topic's name, living as long as the partition */
    int32_t partition;
    pthread_mutex_t mu; /* guards everything below */
    int32_t self;
    kiq_replica_view_t v;
} kiq_partition_replica_t;

/* A standalone broker's partition: led here at leader_epoch, the only
 * replica and the whole ISR, so the high watermark follows every append. */
void kiq_partition_replica_init(kiq_partition_replica_t *r, int32_t self, int32_t leader_epoch);
/* Back to that standalone state, as broker `self`. */
void kiq_partition_replica_lead_alone(kiq_partition_replica_t *r, int32_t self, int32_t leader_epoch);
void kiq_partition_replica_destroy(kiq_partition_replica_t *r);

/* How a broker's partitions start (kept by the broker, outliving its
 * topics): standalone, led by broker self alone; in a cluster, with no
 * role until the controller's LeaderAndIsr. */
typedef struct kiq_partition_replica_start {
    int32_t self;
    bool cluster;
    const kiq_observers_t *observers; /* the broker's */
} kiq_partition_replica_start_t;
/* The log manager's ops (kiq_topics_set_partition_states) making each
 * partition's state so. */
kiq_partition_state_ops_t kiq_partition_replica_states(const kiq_partition_replica_start_t *start);

/* The controller's word (LeaderAndIsr). A leader epoch older than the
 * current one is stale: -1 and nothing changes. Becoming leader in a new
 * term resets the followers' progress (they prove it again by fetching)
 * and counts them caught up as of now_ms, as Kafka does, and records
 * log's end offset now as where the term starts; the same term again
 * keeps both, and within a term a partition epoch older than ours is old
 * news (0, nothing changes), so repeats are harmless. An ISR change within
 * the term (the controller's, or one the leader asked for, arriving before
 * the answer) is announced as kiq_partition_replica_set_isr does. */
/* Whether LeaderAndIsr at leader_epoch is stale for view v (what
 * become_leader and become_follower refuse). */
bool kiq_replica_view_stale(const kiq_replica_view_t *v, int32_t leader_epoch);
int kiq_partition_replica_become_leader(kiq_partition_replica_t *r, int32_t leader_epoch, int32_t partition_epoch,
                                        const int32_t *replicas, int nreplicas, const int32_t *isr, int nisr,
                                        int64_t now_ms, kiq_partition_log_t *log, int64_t lag_ms);
int kiq_partition_replica_become_follower(kiq_partition_replica_t *r, int32_t leader, int32_t leader_epoch,
                                          int32_t partition_epoch, const int32_t *replicas, int nreplicas,
                                          const int32_t *isr, int nisr);
/* No longer a replica here (StopReplica) or the broker is going away. */
void kiq_partition_replica_stop(kiq_partition_replica_t *r);

/* For Produce, ListOffsets and consumer fetches: KIQ_ERR_NONE when this
 * broker leads; NOT_LEADER_OR_FOLLOWER otherwise; with a client's
 * current_leader_epoch (-1: none given) FENCED_LEADER_EPOCH when it is
 * older than ours and UNKNOWN_LEADER_EPOCH when newer. */
int16_t kiq_partition_replica_check_leader(kiq_partition_replica_t *r, int32_t current_leader_epoch);
/* For a consumer fetch, in one look: as check_leader, or from v11
 * (KIP-392, any_replica) a follower serves it too (up to its high
 * watermark), so NOT_LEADER_OR_FOLLOWER only when this broker is neither;
 * then, at a leader whose high watermark in log has not reached where its
 * term started, OFFSET_NOT_AVAILABLE (see hw_known). */
int16_t kiq_partition_replica_check_consumer_fetch(kiq_partition_replica_t *r, kiq_partition_log_t *log,
                                                   bool any_replica, int32_t current_leader_epoch);
/* The same for a fetch from follower `replica`: it must be in the replica set. */
int16_t kiq_partition_replica_check_follower_fetch(kiq_partition_replica_t *r, int32_t replica,
                                                   int32_t current_leader_epoch);
int kiq_partition_replica_isr_size(kiq_partition_replica_t *r);
/* False while a leader's high watermark in log is below where its term
 * started: what the previous leader had committed is not known yet, so
 * consumers are told OFFSET_NOT_AVAILABLE rather than a high watermark
 * that went back. True otherwise (and for non-leaders). */
bool kiq_partition_replica_hw_known(kiq_partition_replica_t *r, kiq_partition_log_t *log);
int32_t kiq_partition_replica_leader_epoch(kiq_partition_replica_t *r);
/* The leader and its epoch as this replica last learnt them (LeaderAndIsr). */
void kiq_partition_replica_leader(kiq_partition_replica_t *r, int32_t *leader, int32_t *leader_epoch);
kiq_replica_role_t kiq_partition_replica_role(kiq_partition_replica_t *r);
/* Whether this replica follows `leader` now, and in which epoch: what a
 * replica fetcher asks of each partition every round, without copying
 * the whole view. */
bool kiq_partition_replica_follows(kiq_partition_replica_t *r, int32_t leader, int32_t *leader_epoch);
void kiq_partition_replica_view(kiq_partition_replica_t *r, kiq_replica_view_t *out);

/* Leader: moves the log's high watermark up to the lowest log end offset
 * in the ISR (its own included); true when it moved, so waiting acks=all
 * produces and fetches can be retried. */
bool kiq_partition_replica_advance_hw(kiq_partition_replica_t *r, kiq_partition_log_t *log);
/* Leader: follower `replica` fetched at fetch_offset at now_ms. Records its
 * progress, moves the high watermark (*hw_moved) and says whether it may
 * now join the ISR (*expand: it is outside and has reached the high
 * watermark) — the caller asks the controller with AlterPartition. */
void kiq_partition_replica_follower_fetched(kiq_partition_replica_t *r, kiq_partition_log_t *log, int32_t replica,
                                            int64_t fetch_offset, int64_t now_ms, bool *hw_moved, bool *expand);
/* Leader: the ISR without the followers that have not been caught up for
 * lag_ms (Kafka's replica.lag.time.max.ms) into new_isr; the count, or 0
 * when nobody lags (or a change is already pending). */
int kiq_partition_replica_shrink_candidate(kiq_partition_replica_t *r, int64_t now_ms, int64_t lag_ms,
                                           int32_t *new_isr);
/* The ISR with `replica` added, into new_isr; its count, 0 when nothing to do. */
int kiq_partition_replica_expand_candidate(kiq_partition_replica_t *r, int32_t replica, int32_t *new_isr);
/* An AlterPartition is on its way (true) or answered (false): one at a time. */
bool kiq_partition_replica_begin_isr_change(kiq_partition_replica_t *r);
void kiq_partition_replica_end_isr_change(kiq_partition_replica_t *r);
/* The controller accepted an ISR (AlterPartition answer); ignored unless
 * it is for our current leader epoch. Each follower it takes out or puts
 * back is announced (ISR_SHRUNK, ISR_EXPANDED) with what the leader knew
 * of it at now_ms (lagged: not caught up for lag_ms, Kafka's
 * replica.lag.time.max.ms) and where log's high watermark and end were.
 * The high watermark moves in the same step where the ISR lets it. */
void kiq_partition_replica_set_isr(kiq_partition_replica_t *r, kiq_partition_log_t *log, int32_t leader_epoch,
                                   int32_t partition_epoch, const int32_t *isr, int nisr, int64_t now_ms,
                                   int64_t lag_ms);

#endif
