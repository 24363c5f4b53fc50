/* Reading a whole partition log record by record, from its log start to
 * its end, as the coordinators load their state from __consumer_offsets
 * and __transaction_state. Control batches (transaction markers) are
 * skipped; a malformed batch is logged and skipped. On the calling thread. */
#ifndef KIQ_LOG_LOG_SCAN_H
#define KIQ_LOG_LOG_SCAN_H

#include "log/partition_log.h"
#include "record/batch.h"

/* Calls record for every record in log order (its return value is
 * ignored: a record it cannot use it skips itself). what names the log in
 * messages. 0, or -1 when the log cannot be read. */
int kiq_partition_log_scan(kiq_partition_log_t *log, const char *what, int (*record)(const kiq_record_t *, void *),
                           void *ctx);
/* The same, with marker (may be NULL) told of each transaction marker in
 * log order: its producer and whether it commits. A transactional
 * record's batch (kiq_record_t.batch) names its producer. */
int kiq_partition_log_scan_markers(kiq_partition_log_t *log, const char *what,
                                   int (*record)(const kiq_record_t *, void *),
                                   void (*marker)(void *ctx, int64_t producer_id, bool commit), void *ctx);

#endif
