/* The ranges of a partition log known damaged, beyond Kafka: bytes the
 * broker holds but must not serve as they are, found by the scrubber (a
 * batch failing its CRC, framing or offsets), or bytes gone from a segment
 * file cut under the broker (the log then skips them, as it skips what
 * compaction removed). Either way a replica fetches the range again from
 * its leader. A range starts at a batch of one segment (its first offset
 * and its byte position in the file: past a damaged batch the framing
 * cannot be trusted) and runs to the end of that segment; a segment has at
 * most one, the earliest found.
 *
 * A value guarded by the mutex of the partition log that holds it. */
#ifndef KIQ_LOG_DAMAGED_RANGES_H
#define KIQ_LOG_DAMAGED_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kiq_damaged_range {
    int64_t segment_base;
    uint64_t position; /* of the first untrusted batch in the segment file */
    /* The offsets it covers, [from, to): to is the segment's end when
     * found (an active segment may grow past it: all of that is behind
     * the damage too). */
    int64_t from, to;
    char why[256];     /* what was found, and where */
    /* What is left of it may be served (the bytes are cut from the
     * segment, or still readable from its open file): only a replica
     * fetches it again. */
    bool serve;
} kiq_damaged_range_t;

/* Sorted by segment base offset. Zeroed is empty. */
typedef struct kiq_damaged_ranges {
    kiq_damaged_range_t *r;
    size_t n, cap;
} kiq_damaged_ranges_t;

/* Records a range: 1 when that is news (its segment had none, or one
 * starting later, which it replaces), 0 when known, -1 out of memory. */
int kiq_damaged_ranges_add(kiq_damaged_ranges_t *d, const kiq_damaged_range_t *range);
/* The range in the segment at segment_base, NULL when it has none. */
const kiq_damaged_range_t *kiq_damaged_ranges_in(const kiq_damaged_ranges_t *d, int64_t segment_base);
/* The log now ends at leo: what lay past it went with it, a range across
 * it ends there. */
void kiq_damaged_ranges_cut(kiq_damaged_ranges_t *d, int64_t leo);
void kiq_damaged_ranges_free(kiq_damaged_ranges_t *d);

#endif
