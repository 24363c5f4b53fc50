/* The scrubber, beyond Kafka: a thread that every
 * kafkaiq.log.scrub.interval.ms reads each partition's closed segments
 * whole and checks every batch's framing, CRC and offsets
 * (kiq_log_verify_segment), so a flipped byte in an old segment is found
 * while the broker runs, not when a consumer stalls on it. Damage is
 * logged with file, offset and position and marked on the partition
 * (kiq_partition_log_damage): fetches stop before it, and one starting at
 * it is answered CORRUPT_MESSAGE. The active segment is left alone:
 * appends change it, and recovery checks it at every start. Each pass
 * first checks that every segment file is still there whole
 * (kiq_partition_log_check_files).
 *
 * Owned by the broker from start to shutdown; the thread only reads the
 * topics (their own locks) and the files. */
#ifndef KIQ_LOG_LOG_SCRUBBER_H
#define KIQ_LOG_LOG_SCRUBBER_H

#include <stdint.h>

#include "log/topics.h"

typedef struct kiq_log_scrubber kiq_log_scrubber_t;

/* interval_ms <= 0: no scrubbing (NULL returned, not an error). */
kiq_log_scrubber_t *kiq_log_scrubber_new(kiq_topics_t *topics, int64_t interval_ms);
void kiq_log_scrubber_free(kiq_log_scrubber_t *s);

/* One pass over every hosted partition, on the calling thread: the number
 * of damaged or changed segment files found that were not known before. */
int kiq_log_scrub(kiq_topics_t *topics);

#endif
