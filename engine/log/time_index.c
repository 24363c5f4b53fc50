#include "log/time_index.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "proto/writer.h"

static void decode(void *slot, const uint8_t *e)
{
    *(struct kiq_time_slot *)slot = (struct kiq_time_slot){.ts = (int64_t)kiq_be64(e), .rel = kiq_be32(e + 8)};
}

static const kiq_index_layout_t layout = {
    .entry_size = KIQ_TIME_INDEX_ENTRY_SIZE,
    .slot_size = sizeof(struct kiq_time_slot),
    .decode = decode,
};

int kiq_time_index_open(kiq_time_index_t *ix, const char *path, int64_t base_offset, int32_t max_bytes,
                        bool truncate)
{
    memset(ix, 0, sizeof *ix);
    ix->base_offset = base_offset;
    ix->max_entries = (size_t)max_bytes / KIQ_TIME_INDEX_ENTRY_SIZE;
    void *slots;
    if (kiq_index_file_load(&ix->file, &layout, path, max_bytes, truncate, &slots, &ix->count, &ix->cap,
                            &ix->torn) < 0)
        return -1;
    ix->slots = slots;
    return 0;
}

int kiq_time_index_check(const kiq_time_index_t *ix)
{
    if (ix->torn) return kiq_error_set("%s is not a whole number of entries", ix->file.path);
    for (size_t i = 1; i < ix->count; i++)
        if (ix->slots[i].ts <= ix->slots[i - 1].ts || ix->slots[i].rel < ix->slots[i - 1].rel)
            return kiq_error_set("%s entry %zu is out of order", ix->file.path, i);
    return 0;
}

bool kiq_time_index_full(const kiq_time_index_t *ix) { return ix->count >= ix->max_entries; }

int kiq_time_index_maybe_append(kiq_time_index_t *ix, int64_t timestamp, int64_t offset, bool force)
{
    if (ix->count > 0 && timestamp <= ix->slots[ix->count - 1].ts) return 0;
    if (ix->count == 0 && timestamp < 0) return 0;
    if (!force && kiq_time_index_full(ix)) return kiq_error_set("%s is full", ix->file.path);
    if (offset < ix->base_offset || offset - ix->base_offset > UINT32_MAX)
        return kiq_error_set("offset %" PRId64 " outside %s", offset, ix->file.path);
    uint32_t rel = (uint32_t)(offset - ix->base_offset);
    if (ix->count > 0 && rel < ix->slots[ix->count - 1].rel)
        return kiq_error_set("%s: offset %" PRId64 " goes backwards", ix->file.path, offset);
    struct kiq_time_slot *grown = kiq_index_file_grow(&ix->file, ix->slots, &ix->cap, ix->count + 1);
    if (!grown) return -1;
    ix->slots = grown;
    uint8_t e[KIQ_TIME_INDEX_ENTRY_SIZE];
    kiq_put_be64(e, (uint64_t)timestamp);
    kiq_put_be32(e + 8, rel);
    if (kiq_index_file_put(&ix->file, ix->count, e) < 0) return -1;
    ix->slots[ix->count].ts = timestamp;
    ix->slots[ix->count].rel = rel;
    ix->count++;
    return 0;
}

static kiq_time_entry_t entry_at(const kiq_time_index_t *ix, size_t i)
{
    return (kiq_time_entry_t){ix->slots[i].ts, ix->base_offset + ix->slots[i].rel};
}

bool kiq_time_index_lookup(const kiq_time_index_t *ix, int64_t target, kiq_time_entry_t *out)
{
    *out = (kiq_time_entry_t){-1, ix->base_offset};
    if (ix->count == 0 || ix->slots[0].ts >= target) return false;
    /* Invariant: slots[lo].ts < target; slots[hi].ts >= target or hi == count. */
    size_t lo = 0, hi = ix->count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->slots[mid].ts < target)
            lo = mid;
        else
            hi = mid;
    }
    *out = entry_at(ix, lo);
    return true;
}

bool kiq_time_index_last(const kiq_time_index_t *ix, kiq_time_entry_t *out)
{
    if (ix->count == 0) return false;
    *out = entry_at(ix, ix->count - 1);
    return true;
}

int kiq_time_index_truncate_offset(kiq_time_index_t *ix, int64_t offset)
{
    size_t n = ix->count;
    while (n > 0 && ix->base_offset + (int64_t)ix->slots[n - 1].rel >= offset) n--;
    if (n == ix->count) return 0;
    ix->count = n;
    return kiq_index_file_truncate(&ix->file, n);
}

int kiq_time_index_reset(kiq_time_index_t *ix)
{
    ix->count = 0;
    ix->torn = false;
    return kiq_index_file_truncate(&ix->file, 0);
}

int kiq_time_index_sync(kiq_time_index_t *ix) { return kiq_index_file_sync(&ix->file); }

int kiq_time_index_trim(kiq_time_index_t *ix) { return kiq_index_file_truncate(&ix->file, ix->count); }

void kiq_time_index_close(kiq_time_index_t *ix)
{
    kiq_index_file_close(&ix->file);
    free(ix->slots);
    ix->slots = NULL;
    ix->count = ix->cap = 0;
}
