/* The time index of one segment (`.timeindex`): entries (timestamp i64 BE,
 * relative offset u32 BE) recording the largest timestamp seen so far in the
 * segment and the last offset of the batch that carried it. Timestamps
 * strictly increase (an entry is only added when the maximum grows), offsets
 * never decrease. Kept in a sorted array mirrored to the file. Guarded by
 * the lock of the partition log owning the segment. */
#ifndef KIQ_LOG_TIME_INDEX_H
#define KIQ_LOG_TIME_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/index_file.h"

#define KIQ_TIME_INDEX_ENTRY_SIZE 12

/* A value handed out by lookups. */
typedef struct kiq_time_entry {
    int64_t timestamp;
    int64_t offset;
} kiq_time_entry_t;

typedef struct kiq_time_index {
    kiq_index_file_t file;
    int64_t base_offset;
    struct kiq_time_slot {
        int64_t ts;
        uint32_t rel;
    } *slots;
    size_t count, cap;
    size_t max_entries;
    /* The file was not a whole number of entries when loaded. */
    bool torn;
} kiq_time_index_t;

int kiq_time_index_open(kiq_time_index_t *ix, const char *path, int64_t base_offset, int32_t max_bytes,
                        bool truncate);
/* 0 when the loaded entries are whole, ordered and not below the base offset. */
int kiq_time_index_check(const kiq_time_index_t *ix);
/* Adds (timestamp, offset) if timestamp is above the last entry's; a no-op
 * otherwise. `force` ignores the size limit: the final entry written when a
 * segment is sealed must not be lost to a full index (Kafka does the same). */
int kiq_time_index_maybe_append(kiq_time_index_t *ix, int64_t timestamp, int64_t offset, bool force);
bool kiq_time_index_full(const kiq_time_index_t *ix);
/* Where a search for the first record with timestamp >= target starts: the
 * largest entry whose timestamp is < target. Every record up to out->offset
 * is older than target, so the answer lies after it. False (and *out =
 * (-1, base)) when no entry is older: the search starts at the segment's
 * first batch. */
bool kiq_time_index_lookup(const kiq_time_index_t *ix, int64_t target, kiq_time_entry_t *out);
bool kiq_time_index_last(const kiq_time_index_t *ix, kiq_time_entry_t *out);
/* Drops the entries whose offset is >= offset. */
int kiq_time_index_truncate_offset(kiq_time_index_t *ix, int64_t offset);
int kiq_time_index_reset(kiq_time_index_t *ix);
int kiq_time_index_sync(kiq_time_index_t *ix);
int kiq_time_index_trim(kiq_time_index_t *ix);
void kiq_time_index_close(kiq_time_index_t *ix);

#endif
