/* The partition a client's request names, as the data-plane handlers all
 * check it before touching its log. */
#include "api/api.h"

int16_t kiq_api_led_partition(kiq_topic_t *topic, int32_t index, int32_t current_leader_epoch, kiq_partition_t **part,
                              kiq_partition_log_t **log)
{
    if (!topic || index < 0 || index >= topic->npartitions) return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    *part = topic->partitions[index];
    *log = (*part)->log;
    if (!*log) return KIQ_ERR_NOT_LEADER_OR_FOLLOWER; /* not a replica here */
    if (kiq_partition_log_offline(*log)) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    return kiq_partition_replica_check_leader((*part)->replica, current_leader_epoch);
}
