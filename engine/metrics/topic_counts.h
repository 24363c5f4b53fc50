/* Kafka's BrokerTopicMetrics, counted from the observer points: per topic,
 * messages and bytes produced (VALIDATED) and bytes consumed
 * (RECORDS_FETCHED, not replication); broker-wide, replication bytes in
 * (a follower's APPENDED) and out (FOLLOWER_FETCHED). Produce and fetch
 * handlers count the partitions they answer, and those they answer with an
 * error, themselves (kiq_topic_counts_request). An observer
 * (core/observer.h); a read-write lock guards the topic table (read-locked
 * for the lookup of each event), the counters themselves are atomic, so
 * threads counting at once never wait on each other. Any thread. */
#ifndef KIQ_METRICS_TOPIC_COUNTS_H
#define KIQ_METRICS_TOPIC_COUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/observer.h"

typedef struct kiq_topic_counts kiq_topic_counts_t;

typedef struct kiq_topic_count {
    char topic[250];
    uint64_t messages_in, bytes_in, bytes_out;
    /* partitions of produce and fetch requests answered, and those answered
     * with an error (Kafka's Total/Failed{Produce,Fetch}RequestsPerSec) */
    uint64_t produce_requests, failed_produce_requests, fetch_requests, failed_fetch_requests;
} kiq_topic_count_t;

typedef struct kiq_replication_bytes {
    uint64_t in, out;
} kiq_replication_bytes_t;

kiq_topic_counts_t *kiq_topic_counts_new(void);
void kiq_topic_counts_free(kiq_topic_counts_t *c);
kiq_observer_t kiq_topic_counts_observer(kiq_topic_counts_t *c);
/* A copy of every topic's counts into *out (free() it), sorted by topic;
 * their number, or -1 when out of memory. */
int kiq_topic_counts_snapshot(kiq_topic_counts_t *c, kiq_topic_count_t **out);
/* One partition of topic answered by a produce (fetch false) or a fetch
 * request, failed when with an error. */
void kiq_topic_counts_request(kiq_topic_counts_t *c, const char *topic, bool fetch, bool failed);
kiq_replication_bytes_t kiq_topic_counts_replication(kiq_topic_counts_t *c);

#endif
