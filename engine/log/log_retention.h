/* The broker's retention scheduler (Kafka's log retention task): a thread
 * that every log.retention.check.interval.ms gives each partition log its
 * effective segment.ms / retention.ms / retention.bytes (topic configs over
 * the broker's) and deletes the old segments they condemn, then saves the
 * log start offsets if any moved.
 *
 * The scheduler is owned by the broker; new/free run on the broker's
 * thread, the worker thread only reads the topics (own locks) and the
 * read-only broker config. */
#ifndef KIQ_LOG_LOG_RETENTION_H
#define KIQ_LOG_LOG_RETENTION_H

#include <stdint.h>

#include "config/config.h"
#include "log/topics.h"

typedef struct kiq_log_retention kiq_log_retention_t;

/* Applies the policies once (so segment.ms holds from the first append),
 * then starts the thread. NULL with the reason on failure. */
kiq_log_retention_t *kiq_log_retention_new(kiq_topics_t *topics, const kiq_config_t *config);
/* Stops and joins the thread. NULL is fine. */
void kiq_log_retention_free(kiq_log_retention_t *r);

/* Gives every partition log its effective policies. Any thread. */
void kiq_log_retention_apply_configs(kiq_topics_t *topics, const kiq_config_t *config);
/* Any thread: pushes one topic's effective segment.ms (max.compaction.lag.ms
 * when sooner on a compacted topic), segment.jitter.ms, retention.ms,
 * retention.bytes, flush.messages and flush.ms into its logs (after
 * CreateTopics or an alter, so they apply at once rather than at the next
 * retention check). */
void kiq_log_retention_apply_topic(kiq_topic_t *topic, const kiq_config_t *config);
/* One pass at now_ms (ms since the epoch): policies applied, segments
 * deleted, the checkpoint written when something was deleted. Returns the
 * number of segments deleted. Any thread. */
int kiq_log_retention_run(kiq_topics_t *topics, const kiq_config_t *config, int64_t now_ms);

#endif
