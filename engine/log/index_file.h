/* The file under an offset or time index: fixed-size big-endian entries,
 * entry i at byte i * entry_size. Writes go to explicit positions, so a
 * failed or torn write is simply overwritten by the next entry, and the file
 * is cut to its entries when the index is truncated or closed. Also the
 * code both indexes share for their in-memory copy: an array of decoded
 * slots, one per entry, in entry order.
 * Guarded by the lock of the partition log owning the segment. */
#ifndef KIQ_LOG_INDEX_FILE_H
#define KIQ_LOG_INDEX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How one kind of index lays out an entry on file and in memory. */
typedef struct kiq_index_layout {
    size_t entry_size;
    size_t slot_size;
    /* Fills the slot from a file entry of entry_size bytes. */
    void (*decode)(void *slot, const uint8_t *entry);
} kiq_index_layout_t;

typedef struct kiq_index_file {
    int fd;
    char *path;
    const kiq_index_layout_t *layout;
} kiq_index_file_t;

/* Opens path (created if missing, emptied when `truncate`) and decodes its
 * whole entries: *slots (malloc'd, NULL when there are none) gets *count
 * slots with room for *cap. max_bytes is log.index.size.max.bytes. *torn
 * is set when the file is not a whole number of entries, or so far beyond
 * max_bytes that it is taken as damaged and not read. */
int kiq_index_file_load(kiq_index_file_t *f, const kiq_index_layout_t *layout, const char *path, int32_t max_bytes,
                        bool truncate, void **slots, size_t *count, size_t *cap, bool *torn);
/* Makes room for n (at least 1) slots in slots, which has room for *cap.
 * Returns the array, perhaps moved, or NULL with the error set and slots
 * left as they were. */
void *kiq_index_file_grow(const kiq_index_file_t *f, void *slots, size_t *cap, size_t n);
int kiq_index_file_put(kiq_index_file_t *f, size_t slot, const uint8_t *entry);
/* Cuts the file to `count` entries. */
int kiq_index_file_truncate(kiq_index_file_t *f, size_t count);
int kiq_index_file_sync(kiq_index_file_t *f);
/* Closes the descriptor and frees the path; safe on a zeroed struct. */
void kiq_index_file_close(kiq_index_file_t *f);
int kiq_index_file_unlink(kiq_index_file_t *f);

#endif
