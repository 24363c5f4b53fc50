/* The broker's flush scheduler (Kafka's log flusher and recovery point
 * checkpointer): a thread that every KIQ_LOG_FLUSH_TICK_MS fsyncs the
 * partition logs whose oldest unflushed append is older than their
 * flush.ms, and writes `recovery-point-offset-checkpoint` when a recovery
 * point moved (by its flushes or by flush.messages in appends), at most
 * once every KIQ_LOG_FLUSH_CHECKPOINT_MS. As often, beyond Kafka, it
 * checks that each active segment file is still there whole
 * (kiq_partition_log_check_files): appends into a file deleted or cut
 * under the broker would be acknowledged and then lost.
 *
 * Owned by the broker; new/free run on the broker's thread, the worker
 * only uses the topics (their own locks). */
#ifndef KIQ_LOG_LOG_FLUSHER_H
#define KIQ_LOG_LOG_FLUSHER_H

#include <stdint.h>

#include "core/observer.h"
#include "log/partition_log.h"
#include "log/topics.h"

#define KIQ_LOG_FLUSH_TICK_MS 100
#define KIQ_LOG_FLUSH_CHECKPOINT_MS 1000

typedef struct kiq_log_flusher kiq_log_flusher_t;

/* Starts the thread; NULL with the reason on failure. */
kiq_log_flusher_t *kiq_log_flusher_new(kiq_topics_t *topics);
/* Stops and joins the thread. NULL is fine. */
void kiq_log_flusher_free(kiq_log_flusher_t *f);

/* One flush pass at now_ms (kiq_partition_log_now_ms): returns the number
 * of logs flushed because flush.ms passed. Any thread. */
int kiq_log_flusher_run(kiq_topics_t *topics, int64_t now_ms);

/* FLUSHED for fsync f of topic-partition on broker, stamped when the fsync
 * ended (flags: KIQ_EVENT_FLUSHER for the flusher's own; request: the
 * produce whose append it followed, or NULL). Any thread. */
void kiq_log_flush_announce(const kiq_observers_t *observers, int32_t broker, const void *request, const char *topic,
                            int32_t partition, const kiq_log_flush_t *f, int flags);

#endif
