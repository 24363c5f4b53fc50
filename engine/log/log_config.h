/* Settings of one partition log, named after the Kafka broker properties
 * they mirror. A plain value owned by whoever fills it in; each log keeps
 * its own copy from open on. */
#ifndef KIQ_LOG_LOG_CONFIG_H
#define KIQ_LOG_LOG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct kiq_log_config {
    /* log.segment.bytes: roll before an append would pass this size. */
    int32_t segment_bytes;
    /* log.index.interval.bytes: log bytes between two sparse index entries. */
    int32_t index_interval_bytes;
    /* log.index.size.max.bytes: each index file's limit; a full index rolls. */
    int32_t segment_index_bytes;
    /* The previous shutdown was clean: recovery only rescans the last
     * segment from its last index entry instead of from its start. */
    bool clean_shutdown;
} kiq_log_config_t;

/* Kafka's defaults: 1 GiB segments, an index entry every 4 KiB, 10 MiB
 * indexes; clean_shutdown false (the safe choice when nobody knows). */
void kiq_log_config_default(kiq_log_config_t *cfg);
/* 0 when usable, else -1 with the reason. */
int kiq_log_config_check(const kiq_log_config_t *cfg);

#endif
