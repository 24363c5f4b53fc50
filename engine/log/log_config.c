#include "log/log_config.h"

#include "core/error.h"

/* Smallest RecordBatch v2 (a header without records). */
#define MIN_SEGMENT_BYTES 61
/* One time index entry; anything smaller cannot index at all. */
#define MIN_INDEX_BYTES 12

void kiq_log_config_default(kiq_log_config_t *cfg)
{
    cfg->segment_bytes = 1 << 30;
    cfg->index_interval_bytes = 4096;
    cfg->segment_index_bytes = 10 << 20;
    cfg->clean_shutdown = false;
}

int kiq_log_config_check(const kiq_log_config_t *cfg)
{
    if (cfg->segment_bytes < MIN_SEGMENT_BYTES)
        return kiq_error_set("log.segment.bytes %d is below %d", cfg->segment_bytes, MIN_SEGMENT_BYTES);
    if (cfg->index_interval_bytes < 0)
        return kiq_error_set("log.index.interval.bytes %d is negative", cfg->index_interval_bytes);
    if (cfg->segment_index_bytes < MIN_INDEX_BYTES)
        return kiq_error_set("log.index.size.max.bytes %d is below %d", cfg->segment_index_bytes,
                             MIN_INDEX_BYTES);
    return 0;
}
