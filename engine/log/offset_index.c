#include "log/offset_index.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "proto/writer.h"

static void decode(void *slot, const uint8_t *e)
{
    *(struct kiq_offset_slot *)slot = (struct kiq_offset_slot){.rel = kiq_be32(e), .pos = kiq_be32(e + 4)};
}

static const kiq_index_layout_t layout = {
    .entry_size = KIQ_OFFSET_INDEX_ENTRY_SIZE,
    .slot_size = sizeof(struct kiq_offset_slot),
    .decode = decode,
};

int kiq_offset_index_open(kiq_offset_index_t *ix, const char *path, int64_t base_offset, int32_t max_bytes,
                          bool truncate)
{
    memset(ix, 0, sizeof *ix);
    ix->base_offset = base_offset;
    ix->max_entries = (size_t)max_bytes / KIQ_OFFSET_INDEX_ENTRY_SIZE;
    void *slots;
    if (kiq_index_file_load(&ix->file, &layout, path, max_bytes, truncate, &slots, &ix->count, &ix->cap,
                            &ix->torn) < 0)
        return -1;
    ix->slots = slots;
    return 0;
}

int kiq_offset_index_check(const kiq_offset_index_t *ix, uint64_t log_size)
{
    if (ix->torn) return kiq_error_set("%s is not a whole number of entries", ix->file.path);
    for (size_t i = 0; i < ix->count; i++) {
        if (ix->slots[i].pos >= log_size)
            return kiq_error_set("%s entry %zu points at %" PRIu32 ", past the log's %" PRIu64 " bytes",
                                 ix->file.path, i, ix->slots[i].pos, log_size);
        if (i > 0 && (ix->slots[i].rel <= ix->slots[i - 1].rel || ix->slots[i].pos <= ix->slots[i - 1].pos))
            return kiq_error_set("%s entry %zu does not increase", ix->file.path, i);
    }
    return 0;
}

bool kiq_offset_index_full(const kiq_offset_index_t *ix) { return ix->count >= ix->max_entries; }

int kiq_offset_index_append(kiq_offset_index_t *ix, int64_t offset, uint32_t position)
{
    if (kiq_offset_index_full(ix)) return kiq_error_set("%s is full", ix->file.path);
    if (offset < ix->base_offset || offset - ix->base_offset > UINT32_MAX)
        return kiq_error_set("offset %" PRId64 " outside %s", offset, ix->file.path);
    uint32_t rel = (uint32_t)(offset - ix->base_offset);
    if (ix->count > 0 && (rel <= ix->slots[ix->count - 1].rel || position <= ix->slots[ix->count - 1].pos))
        return kiq_error_set("%s: entry (%" PRId64 ", %" PRIu32 ") does not increase", ix->file.path, offset,
                             position);
    struct kiq_offset_slot *grown = kiq_index_file_grow(&ix->file, ix->slots, &ix->cap, ix->count + 1);
    if (!grown) return -1;
    ix->slots = grown;
    uint8_t e[KIQ_OFFSET_INDEX_ENTRY_SIZE];
    kiq_put_be32(e, rel);
    kiq_put_be32(e + 4, position);
    if (kiq_index_file_put(&ix->file, ix->count, e) < 0) return -1;
    ix->slots[ix->count].rel = rel;
    ix->slots[ix->count].pos = position;
    ix->count++;
    return 0;
}

static kiq_offset_entry_t entry_at(const kiq_offset_index_t *ix, size_t i)
{
    return (kiq_offset_entry_t){ix->base_offset + ix->slots[i].rel, ix->slots[i].pos};
}

bool kiq_offset_index_lookup(const kiq_offset_index_t *ix, int64_t target, kiq_offset_entry_t *out)
{
    *out = (kiq_offset_entry_t){ix->base_offset, 0};
    if (ix->count == 0 || target < ix->base_offset + (int64_t)ix->slots[0].rel) return false;
    /* Invariant: slots[lo] <= target; slots[hi] > target or hi == count. */
    size_t lo = 0, hi = ix->count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->base_offset + (int64_t)ix->slots[mid].rel <= target)
            lo = mid;
        else
            hi = mid;
    }
    *out = entry_at(ix, lo);
    return true;
}

bool kiq_offset_index_last(const kiq_offset_index_t *ix, kiq_offset_entry_t *out)
{
    if (ix->count == 0) return false;
    *out = entry_at(ix, ix->count - 1);
    return true;
}

int kiq_offset_index_truncate_position(kiq_offset_index_t *ix, uint64_t position)
{
    size_t n = ix->count;
    while (n > 0 && ix->slots[n - 1].pos >= position) n--;
    if (n == ix->count) return 0;
    ix->count = n;
    return kiq_index_file_truncate(&ix->file, n);
}

int kiq_offset_index_reset(kiq_offset_index_t *ix)
{
    ix->count = 0;
    ix->torn = false;
    return kiq_index_file_truncate(&ix->file, 0);
}

int kiq_offset_index_sync(kiq_offset_index_t *ix) { return kiq_index_file_sync(&ix->file); }

int kiq_offset_index_trim(kiq_offset_index_t *ix) { return kiq_index_file_truncate(&ix->file, ix->count); }

void kiq_offset_index_close(kiq_offset_index_t *ix)
{
    kiq_index_file_close(&ix->file);
    free(ix->slots);
    ix->slots = NULL;
    ix->count = ix->cap = 0;
}

int64_t kiq_offset_index_file_end(const char *path, int64_t base_offset)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    uint8_t last[KIQ_OFFSET_INDEX_ENTRY_SIZE];
    int64_t end = base_offset;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= KIQ_OFFSET_INDEX_ENTRY_SIZE &&
        pread(fd, last, sizeof last, st.st_size / KIQ_OFFSET_INDEX_ENTRY_SIZE * KIQ_OFFSET_INDEX_ENTRY_SIZE -
                                         KIQ_OFFSET_INDEX_ENTRY_SIZE) == (ssize_t)sizeof last)
        end = base_offset + (int64_t)kiq_be32(last) + 1;
    if (fd >= 0) close(fd);
    return end;
}
