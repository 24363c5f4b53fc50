/* One segment of a partition log: `<base>.log` holding RecordBatch v2
 * bytes exactly as stored, plus its `.index` and `.timeindex`.
 *
 * Every field and function is guarded by the lock of the partition log
 * that owns the segment, except the reference count: kiq_segment_ref and
 * kiq_segment_unref are callable from any thread, so a reader can keep the
 * descriptor open (to pread or sendfile) after dropping the log's lock, even
 * if the segment is deleted meanwhile. The last unref closes the files. */
#ifndef KIQ_LOG_SEGMENT_H
#define KIQ_LOG_SEGMENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"
#include "log/log_dir.h"
#include "log/offset_index.h"
#include "log/time_index.h"

/* Where a batch is in a segment file, with the header fields lookups need.
 * A value owned by the caller. */
typedef struct kiq_batch_loc {
    uint64_t position;
    uint32_t size;
    int64_t base_offset;
    int64_t last_offset;
    int64_t max_timestamp;
} kiq_batch_loc_t;

/* What a recovery scan found; counts add up over several scans. Owned by
 * the caller (the partition log keeps its copy under its mutex). */
typedef struct kiq_segment_recovery {
    int64_t batches;          /* sound batches scanned */
    uint64_t bytes_truncated; /* torn or corrupt bytes cut off the end */
    bool index_rebuilt;       /* the whole segment was rescanned */
    /* What the last cut dropped: batch headers found past the cut (the
     * unreadable one included) and the offset the segment now ends at;
     * corrupt_middle when sound-looking batches followed a bad one, so
     * the loss is more than a torn tail. */
    int64_t batches_dropped;
    int64_t truncated_at;
    bool corrupt_middle;
} kiq_segment_recovery_t;

typedef struct kiq_segment {
    atomic_int refs;
    int64_t base_offset;
    char *path; /* of the .log file */
    int fd;
    /* Bytes of whole batches; kept below 2 GiB because index positions are
     * 32-bit (Kafka's limit too). */
    uint64_t size;
    /* Last offset of the last batch + 1; base_offset when empty. */
    int64_t next_offset;
    /* Largest batch max timestamp and the last offset of its batch; -1 and
     * base_offset when empty. */
    int64_t max_timestamp;
    int64_t offset_of_max_timestamp;
    uint64_t bytes_since_index;
    /* The last batch appended or scanned, ending at size (size 0: not
     * known): a consumer or follower at the tail asks for it, found
     * without reading the file. */
    kiq_batch_loc_t last;
    int32_t index_interval;
    kiq_offset_index_t oix;
    kiq_time_index_t tix;
    bool deleted;
    /* The directory's health and injected faults (NULL: none), set by the
     * owning log: a failed write or fsync takes the directory offline. */
    kiq_log_dir_t *log_dir;
} kiq_segment_t;

/* A new, empty segment; fails if its .log file already exists (stale
 * index files of the same name are emptied). */
kiq_segment_t *kiq_segment_create(const char *dir, int64_t base_offset, const kiq_log_config_t *cfg);
/* An existing segment: loads and sanity-checks the indexes, then recovers:
 * from the last index entry, or from the start when full_scan is set or the
 * indexes are unusable (they are then rebuilt). rep may be NULL. */
kiq_segment_t *kiq_segment_open(const char *dir, int64_t base_offset, const kiq_log_config_t *cfg,
                                bool full_scan, kiq_segment_recovery_t *rep);
/* Scans the batches from the last index entry (from_last_index, falling back
 * to the start when the entry does not match the log) or from the start,
 * checking length bounds, offsets and CRC-32C; cuts the file at the first
 * torn or corrupt batch (logged with counts), rebuilds the index entries of
 * what was scanned and sets size, next_offset and max_timestamp. */
int kiq_segment_recover(kiq_segment_t *seg, bool from_last_index, kiq_segment_recovery_t *rep);

/* Appends whole v2 batches whose offsets are already assigned (increasing,
 * from next_offset on). Adds an index entry each time more than
 * index_interval bytes went in since the last one. On a write error the file
 * is cut back, nothing changes and the log directory goes offline. */
int kiq_segment_append(kiq_segment_t *seg, const uint8_t *batches, size_t len);
/* Calls cb for each batch from position (a batch boundary) on, reading
 * headers only, until cb returns nonzero (then that is returned) or the
 * segment ends (0); -1 when a header there is unreadable or malformed. */
int kiq_segment_walk(kiq_segment_t *seg, uint64_t position, int (*cb)(const kiq_batch_loc_t *loc, void *ctx),
                     void *ctx);
/* kiq_segment_walk as if the segment ended at byte end (a batch boundary). */
int kiq_segment_walk_to(kiq_segment_t *seg, uint64_t position, uint64_t end,
                        int (*cb)(const kiq_batch_loc_t *loc, void *ctx), void *ctx);
/* Where the whole batches within the first `bytes` bytes of the file end
 * (*position) and the offset after them (*next_offset): what is left of a
 * file found cut to that size. Reads headers from the last index entry
 * before the cut on. 0, or -1 when the file cannot be read. */
int kiq_segment_whole_within(kiq_segment_t *seg, uint64_t bytes, uint64_t *position, int64_t *next_offset);
/* The first batch whose last offset is >= offset: 1 with *out, 0 when the
 * segment has none, -1 on error. */
int kiq_segment_find(kiq_segment_t *seg, int64_t offset, kiq_batch_loc_t *out);
/* The first batch whose max timestamp is >= ts: 1, 0 or -1 as above. */
int kiq_segment_find_time(kiq_segment_t *seg, int64_t ts, kiq_batch_loc_t *out);
/* Copies len bytes at position (all inside the segment) into dst. */
int kiq_segment_read(const kiq_segment_t *seg, uint64_t position, void *dst, size_t len);
/* Removes the batch holding offset and everything after it (Kafka cuts at
 * batch boundaries too), then next_offset is where the log now ends. */
int kiq_segment_truncate_to(kiq_segment_t *seg, int64_t offset);
/* The same, knowing where: the batch at byte position (a boundary), whose
 * first offset is offset, and everything after it go. */
int kiq_segment_truncate_at(kiq_segment_t *seg, uint64_t position, int64_t offset);
/* True when an index is full: the log must roll before appending. */
bool kiq_segment_index_full(const kiq_segment_t *seg);
/* fdatasync of the log and its indexes; a failure takes the log directory
 * offline. */
int kiq_segment_sync(kiq_segment_t *seg);
/* Called when the segment stops being the active one: a final time index
 * entry for its largest timestamp, index files trimmed, everything synced. */
int kiq_segment_seal(kiq_segment_t *seg);

kiq_segment_t *kiq_segment_ref(kiq_segment_t *seg);
void kiq_segment_unref(kiq_segment_t *seg);
/* The owner's clean close: final time index entry, trimmed index files,
 * then its reference dropped. */
void kiq_segment_close(kiq_segment_t *seg);
/* Unlinks the three files now and drops the owner's reference; readers
 * holding references keep reading the unlinked files. */
int kiq_segment_delete(kiq_segment_t *seg);

#endif
