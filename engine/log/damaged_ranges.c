/* Damaged ranges of a partition log; see damaged_ranges.h. */
#include "log/damaged_ranges.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Index of the first range whose segment base is >= base. */
static size_t lower_bound(const kiq_damaged_ranges_t *d, int64_t base)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->r[mid].segment_base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int kiq_damaged_ranges_add(kiq_damaged_ranges_t *d, const kiq_damaged_range_t *range)
{
    size_t i = lower_bound(d, range->segment_base);
    if (i < d->n && d->r[i].segment_base == range->segment_base) {
        if (d->r[i].position <= range->position) return 0;
        d->r[i] = *range;
        return 1;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        kiq_damaged_range_t *r = realloc(d->r, cap * sizeof *r);
        if (!r) return kiq_error_set("out of memory");
        d->r = r;
        d->cap = cap;
    }
    memmove(&d->r[i + 1], &d->r[i], (d->n - i) * sizeof *d->r);
    d->r[i] = *range;
    d->n++;
    return 1;
}

const kiq_damaged_range_t *kiq_damaged_ranges_in(const kiq_damaged_ranges_t *d, int64_t segment_base)
{
    size_t i = lower_bound(d, segment_base);
    return i < d->n && d->r[i].segment_base == segment_base ? &d->r[i] : NULL;
}

void kiq_damaged_ranges_cut(kiq_damaged_ranges_t *d, int64_t leo)
{
    while (d->n > 0 && d->r[d->n - 1].from >= leo) d->n--;
    if (d->n > 0 && d->r[d->n - 1].to > leo) d->r[d->n - 1].to = leo;
}

void kiq_damaged_ranges_free(kiq_damaged_ranges_t *d)
{
    free(d->r);
    *d = (kiq_damaged_ranges_t){0};
}
