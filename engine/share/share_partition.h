/* A share-partition (KIP-932): what one share group has consumed of one
 * partition, as the partition's leader holds it. Records below the start
 * offset (SPSO) are done with; from there to the end offset they are in
 * flight, each Available (to be handed out), Acquired (by one member,
 * under a lock that expires), Acknowledged or Archived. A record handed
 * out once more than group.share.delivery.count.limit times is archived
 * instead of made available again. Records past the end offset have not
 * been handed out yet.
 *
 * Pure data and rules, no I/O and no lock: guarded by the share manager's
 * lock (share_manager.h). Times are the caller's monotonic milliseconds. */
#ifndef KIQ_SHARE_SHARE_PARTITION_H
#define KIQ_SHARE_SHARE_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

enum kiq_share_state {
    KIQ_SHARE_AVAILABLE,
    KIQ_SHARE_ACQUIRED,
    KIQ_SHARE_ACKNOWLEDGED,
    KIQ_SHARE_ARCHIVED,
};

/* Kafka's acknowledge types (ShareFetch / ShareAcknowledge). */
enum kiq_share_ack {
    KIQ_SHARE_ACK_GAP = 0, /* no record at that offset: archived */
    KIQ_SHARE_ACK_ACCEPT = 1,
    KIQ_SHARE_ACK_RELEASE = 2,
    KIQ_SHARE_ACK_REJECT = 3,
    KIQ_SHARE_ACK_RENEW = 4, /* v2: the lock starts again, the record stays acquired */
};

typedef struct kiq_share_record {
    uint8_t state;           /* enum kiq_share_state */
    int16_t deliveries;      /* times acquired */
    uint64_t owner;          /* Acquired: the member's (kiq_share_owner) */
    int64_t lock_deadline_ms; /* Acquired: made available (or archived) there */
} kiq_share_record_t;

/* A run of acquired offsets with the same delivery count. */
typedef struct kiq_share_range {
    int64_t first, last;
    int16_t deliveries;
} kiq_share_range_t;

typedef struct kiq_share_ranges {
    kiq_share_range_t *v;
    int n, cap;
} kiq_share_ranges_t;

typedef struct kiq_share_partition {
    int64_t start; /* SPSO; -1: not started (the group's first fetch picks it) */
    kiq_share_record_t *v; /* in flight: offsets start .. start + n - 1 */
    int n, cap;
    int delivery_limit;
    int max_in_flight;      /* group.share.partition.max.record.locks */
    int32_t snapshot_epoch; /* of the last snapshot stored (share_state.h) */
    /* its state deleted (not started since): not loaded from
     * __share_group_state again, where the tombstone may still be on its
     * way to this broker's replica */
    bool deleted;
} kiq_share_partition_t;

/* A member id as an owner. */
uint64_t kiq_share_owner(const char *id, int32_t len);

void kiq_share_partition_init(kiq_share_partition_t *sp, int delivery_limit, int max_in_flight);
void kiq_share_partition_free(kiq_share_partition_t *sp);
/* The end offset: the first never handed out. */
int64_t kiq_share_partition_end(const kiq_share_partition_t *sp);
/* Starts the partition again at offset: what was in flight is forgotten
 * (an admin's reset). */
void kiq_share_partition_reset(kiq_share_partition_t *sp, int64_t offset);
/* Starts the partition at offset (the first fetch), or moves its start up
 * to offset (records deleted from the log): what lay below is dropped. */
void kiq_share_partition_start_at(kiq_share_partition_t *sp, int64_t offset);
/* The state of offset (Available past the end, Acknowledged below start). */
enum kiq_share_state kiq_share_partition_state(const kiq_share_partition_t *sp, int64_t offset);
/* Locks expired by now_ms: their records are made available again, or
 * archived at the delivery limit; their runs appended to out (NULL: not
 * wanted). Returns how many records. */
int kiq_share_partition_expire(kiq_share_partition_t *sp, int64_t now_ms, kiq_share_ranges_t *out);
/* Where a fetch reads from: the first available in-flight offset, else
 * the end. */
int64_t kiq_share_partition_next(const kiq_share_partition_t *sp);
/* Acquires for owner what of [first, last] is available (in flight or past
 * the end, up to max_in_flight records in flight), at most max records,
 * locked until deadline_ms; offsets skipped between the end and first
 * (none in the log) are archived. Appends the runs to out. Returns how
 * many records, or -1 (out of memory). */
int kiq_share_partition_acquire(kiq_share_partition_t *sp, int64_t first, int64_t last, int max, uint64_t owner,
                                int64_t deadline_ms, kiq_share_ranges_t *out);
/* Archives what of [first, last] is not yet handed out (control batches,
 * never delivered). 0 or -1. */
int kiq_share_partition_archive(kiq_share_partition_t *sp, int64_t first, int64_t last);
/* owner's acknowledgement of [first, last]: 0, or INVALID_RECORD_STATE's
 * code when some record there is not acquired by owner (nothing changes),
 * INVALID_REQUEST's for an unknown type. A renewal locks them until
 * deadline_ms. */
int16_t kiq_share_partition_ack(kiq_share_partition_t *sp, int64_t first, int64_t last, int type, uint64_t owner,
                                int64_t deadline_ms);
/* What owner holds goes back (its session closed). Returns how many. */
int kiq_share_partition_release_owner(kiq_share_partition_t *sp, uint64_t owner);
/* Loading a stored state: offsets [first, last], past those restored so
 * far, get state (Available, Acknowledged or Archived) and deliveries.
 * 0, or -1 (out of memory, or a state no snapshot has). */
int kiq_share_partition_restore(kiq_share_partition_t *sp, int64_t first, int64_t last, enum kiq_share_state state,
                                int16_t deliveries);
/* Counts of in-flight records by state (acquired, available, ...). */
int kiq_share_partition_count(const kiq_share_partition_t *sp, enum kiq_share_state state);

void kiq_share_ranges_free(kiq_share_ranges_t *r);

#endif
