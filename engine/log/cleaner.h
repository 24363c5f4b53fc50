/* Compaction of one partition log (Kafka's log cleaner, one pass): the
 * latest offset of every key in the cleanable closed segments goes into an
 * offset map, then each of those segments is rewritten keeping, per key,
 * only the record at that offset, and swapped in. Offsets are kept (batches
 * are rebuilt with their base offset, offset deltas with gaps, timestamps,
 * producer fields, codec and leader epoch, or copied whole when nothing in
 * them goes). Records without a key go, as in Kafka. Tombstones (null
 * values) go once their segment's newest timestamp is more than
 * delete_retention_ms old. The active segment is never read or touched.
 *
 * kiq_log_clean may be called from any thread; calls for the same log must
 * not overlap (the broker gives each log to one cleaner thread). */
#ifndef KIQ_LOG_CLEANER_H
#define KIQ_LOG_CLEANER_H

#include <stdint.h>

#include "log/partition_log.h"

/* A plain value from the caller. */
typedef struct kiq_cleaner_options {
    int64_t now_ms;              /* ms since the epoch */
    int64_t delete_retention_ms; /* tombstones kept this long */
    /* Segments whose newest timestamp is younger stay as they are, and so
     * do all after them (Kafka's first uncleanable offset). */
    int64_t min_compaction_lag_ms;
} kiq_cleaner_options_t;

/* What one pass did; filled by kiq_log_clean. */
typedef struct kiq_cleaner_stats {
    int segments_cleaned;  /* rewritten and swapped in */
    int64_t records_read;  /* in the cleanable segments */
    int64_t records_kept;
    uint64_t bytes_before; /* of the segments rewritten */
    uint64_t bytes_after;
} kiq_cleaner_stats_t;

/* One pass over l, over the closed segments below its last stable offset
 * (nothing uncommitted, no open transaction). Records of aborted
 * transactions never count as a key's latest value and are removed; a
 * transaction marker goes once its transaction has no records left and
 * its segment is older than delete.retention.ms, as tombstones do. Returns the number of segments replaced,
 * or -1 with the reason (segments already swapped in stay). Segments where
 * nothing would go are left alone. */
int kiq_log_clean(kiq_partition_log_t *l, const kiq_cleaner_options_t *opt, kiq_cleaner_stats_t *stats);

#endif
