/* The broker's log cleaner threads (log.cleaner.threads, Kafka's
 * LogCleaner): every log.cleaner.backoff.ms each thread runs one
 * compaction pass (engine/log/cleaner.h) over its share of the partitions
 * of the topics whose effective cleanup.policy includes compact, with their
 * effective delete.retention.ms and min.compaction.lag.ms.
 *
 * Owned by the broker; new/free run on the broker's thread. The threads
 * read the topics (own locks) and the read-only broker config; a partition
 * always falls to the same thread, so passes over one log never overlap. */
#ifndef KIQ_LOG_CLEANER_THREADS_H
#define KIQ_LOG_CLEANER_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "log/topics.h"

typedef struct kiq_log_cleaner kiq_log_cleaner_t;

/* Starts the threads (none when log.cleaner.enable is false; the object is
 * still returned). NULL with the reason on failure. */
kiq_log_cleaner_t *kiq_log_cleaner_new(kiq_topics_t *topics, const kiq_config_t *config);
/* Stops and joins the threads. NULL is fine. */
void kiq_log_cleaner_free(kiq_log_cleaner_t *c);

/* Whether the topic's effective cleanup.policy includes compact. Any thread. */
bool kiq_log_cleaner_topic_compacted(kiq_topic_t *topic, const kiq_config_t *config);
/* One pass at now_ms over the partitions k (counted over the topics in
 * name order) with k % nshares == share. Returns the segments replaced.
 * Any thread, as long as passes with the same share do not overlap. */
int kiq_log_cleaner_run(kiq_topics_t *topics, const kiq_config_t *config, int64_t now_ms, int share, int nshares);

#endif
