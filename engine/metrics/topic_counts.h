/* Kafka's BrokerTopicMetrics, counted from the observer points: per topic,
 * messages and bytes produced (VALIDATED) and bytes consumed
 * (RECORDS_FETCHED, not replication). An observer (core/observer.h); a mutex guards the topic table (one lookup
 * per event). Any thread. */
#ifndef KIQ_METRICS_TOPIC_COUNTS_H
#define KIQ_METRICS_TOPIC_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/observer.h"

typedef struct kiq_topic_counts kiq_topic_counts_t;

typedef struct kiq_topic_count {
    char topic[250];
    uint64_t messages_in, bytes_in, bytes_out;
} kiq_topic_count_t;

kiq_topic_counts_t *kiq_topic_counts_new(void);
void kiq_topic_counts_free(kiq_topic_counts_t *c);
kiq_observer_t kiq_topic_counts_observer(kiq_topic_counts_t *c);
/* A copy of every topic's counts into *out (free() it), sorted by topic;
 * their number, or -1 when out of memory. */
int kiq_topic_counts_snapshot(kiq_topic_counts_t *c, kiq_topic_count_t **out);

#endif
