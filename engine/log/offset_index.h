/* The sparse offset index of one segment (`.index`): entries (relative
 * offset u32 BE, file position u32 BE), both strictly increasing, kept in a
 * sorted array and mirrored to the file. As in Kafka an entry maps the last
 * offset of a batch to the position where that batch starts, so Kafka's own
 * tools agree with our files. Guarded by the lock of the partition log
 * owning the segment. */
#ifndef KIQ_LOG_OFFSET_INDEX_H
#define KIQ_LOG_OFFSET_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/index_file.h"

#define KIQ_OFFSET_INDEX_ENTRY_SIZE 8

/* A value handed out by lookups. */
typedef struct kiq_offset_entry {
    int64_t offset;
    uint32_t position;
} kiq_offset_entry_t;

typedef struct kiq_offset_index {
    kiq_index_file_t file;
    int64_t base_offset;
    struct kiq_offset_slot {
        uint32_t rel;
        uint32_t pos;
    } *slots;
    size_t count, cap;
    size_t max_entries;
    /* The file was not a whole number of entries when loaded. */
    bool torn;
} kiq_offset_index_t;

/* Opens path and loads its entries (the file is emptied when `truncate`).
 * max_bytes is log.index.size.max.bytes. Call kiq_offset_index_check
 * before trusting what was loaded. */
int kiq_offset_index_open(kiq_offset_index_t *ix, const char *path, int64_t base_offset, int32_t max_bytes,
                          bool truncate);
/* 0 when the loaded entries are whole, increasing and point inside a log of
 * log_size bytes; -1 with the reason otherwise. */
int kiq_offset_index_check(const kiq_offset_index_t *ix, uint64_t log_size);
/* Appends an entry; offset and position must be above the last entry's.
 * Fails when full. */
int kiq_offset_index_append(kiq_offset_index_t *ix, int64_t offset, uint32_t position);
bool kiq_offset_index_full(const kiq_offset_index_t *ix);
/* The largest entry whose offset is <= target: scanning the log from its
 * position finds target's batch. When there is none, *out is (base, 0) and
 * the result is false. */
bool kiq_offset_index_lookup(const kiq_offset_index_t *ix, int64_t target, kiq_offset_entry_t *out);
bool kiq_offset_index_last(const kiq_offset_index_t *ix, kiq_offset_entry_t *out);
/* Drops the entries whose position is >= position (the log is cut there). */
int kiq_offset_index_truncate_position(kiq_offset_index_t *ix, uint64_t position);
/* Drops every entry. */
int kiq_offset_index_reset(kiq_offset_index_t *ix);
int kiq_offset_index_sync(kiq_offset_index_t *ix);
/* Cuts the file to its entries (they are appended exactly, so this only
 * matters after a failed write). */
int kiq_offset_index_trim(kiq_offset_index_t *ix);
/* The offset after the last one the index file at path (of the segment at
 * base_offset) names, read without loading it: base_offset when it names
 * none or cannot be read. What an index left without its segment tells. */
int64_t kiq_offset_index_file_end(const char *path, int64_t base_offset);
/* Frees memory and closes the file without touching it. */
void kiq_offset_index_close(kiq_offset_index_t *ix);

#endif
