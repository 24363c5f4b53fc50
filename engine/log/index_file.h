/* The file under an offset or time index: fixed-size big-endian entries,
 * entry i at byte i * entry_size. Writes go to explicit positions, so a
 * failed or torn write is simply overwritten by the next entry, and the file
 * is cut to its entries when the index is truncated or closed.
 * Guarded by the lock of the partition log owning the segment. */
#ifndef KIQ_LOG_INDEX_FILE_H
#define KIQ_LOG_INDEX_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kiq_index_file {
    int fd;
    char *path;
    size_t entry_size;
} kiq_index_file_t;

/* Opens path (created if missing, emptied when `truncate`). *data gets the
 * file's bytes (malloc'd, NULL when empty) and *len their count; a file
 * bigger than max_len is not read and *len is set to max_len + 1 so the
 * caller sees it as damaged. */
int kiq_index_file_open(kiq_index_file_t *f, const char *path, size_t entry_size, bool truncate,
                        size_t max_len, uint8_t **data, size_t *len);
int kiq_index_file_put(kiq_index_file_t *f, size_t slot, const uint8_t *entry);
/* Cuts the file to `count` entries. */
int kiq_index_file_truncate(kiq_index_file_t *f, size_t count);
int kiq_index_file_sync(kiq_index_file_t *f);
/* Closes the descriptor and frees the path; safe on a zeroed struct. */
void kiq_index_file_close(kiq_index_file_t *f);
int kiq_index_file_unlink(kiq_index_file_t *f);

#endif
