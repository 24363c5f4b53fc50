/* FNV-1a, the one quick hash of names the engine keys its own tables by
 * (never stored, never sent): of bytes, and of a topic's partition. */
#ifndef KIQ_CORE_HASH_H
#define KIQ_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KIQ_HASH_PRIME 1099511628211ULL

static inline uint64_t kiq_hash(const void *p, size_t len)
{
    const uint8_t *b = p;
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * KIQ_HASH_PRIME;
    return h;
}

/* Partition `partition` of the topic named (len bytes). */
static inline uint64_t kiq_hash_partition(const char *topic, size_t len, int32_t partition)
{
    return (kiq_hash(topic, len) ^ (uint32_t)partition) * KIQ_HASH_PRIME;
}

#endif
