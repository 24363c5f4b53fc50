/* Which partition of a coordinator's topic (__consumer_offsets,
 * __transaction_state) holds a group or transactional id: Kafka's
 * Utils.abs(key.hashCode()) % partitions, Java's String.hashCode over the
 * key's UTF-16 code units (UTF-8 decoded; an invalid byte counted as
 * U+FFFD, as Java decodes it), abs(INT_MIN) being 0. Any thread. */
#ifndef KIQ_CORE_COORDINATOR_KEY_H
#define KIQ_CORE_COORDINATOR_KEY_H

#include <stddef.h>
#include <stdint.h>

/* 0 when partitions is not positive. */
int32_t kiq_coordinator_partition(const char *key, size_t len, int32_t partitions);

#endif
