/* The journey journal: journeys that outlive the ring. A bounded on-disk
 * log beside the recorder's ring (kafkaiq.journey.retention.ms / .bytes)
 * holding the journeys the ring let go of, and at a broker's clean stop
 * the ones it still had, so a batch produced long ago, or before a restart, can
 * still be explained.
 *
 * Files: <dir>/<20-digit wall ms of its first write>.journal, each a run
 * of records (magic, length, CRC-32C, the layout's sizes, the journey
 * with its stages); a torn or foreign record ends a file's reading. Rolled
 * at a size and an age derived from the retention (a tenth of each), and
 * deleted whole, oldest first, by the retention.
 *
 * Writing stays off the hot path: kiq_journal_offer copies a journey into
 * a bounded queue (dropped and counted when full) and a worker thread of
 * the journal's own writes the queue out; lookups read the queue and the
 * files. Any thread, unless said otherwise. */
#ifndef KIQ_JOURNEY_JOURNAL_H
#define KIQ_JOURNEY_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "journey/journey.h"

typedef struct kiq_journal kiq_journal_t;

/* A journal in directory dir (made with the first journey written) keeping journeys
 * retention_ms (-1: any age) and retention_bytes of files; its writer
 * started. NULL with the reason in the error slot. */
kiq_journal_t *kiq_journal_open(const char *dir, int64_t retention_ms, int64_t retention_bytes);
/* Stops the writer after it wrote what was queued, closes, frees. NULL is
 * fine. Not while other threads offer or look. */
void kiq_journal_close(kiq_journal_t *jl);

/* Queues a copy of jr to be written; false (counted) when the queue is
 * full. Never waits for the disk. */
bool kiq_journal_offer(kiq_journal_t *jl, const kiq_journey_t *jr);
/* Writes what is queued and jr now, on the caller's thread (a stopping
 * broker's ring, whose journeys would otherwise be lost). 0 or -1. */
int kiq_journal_write_now(kiq_journal_t *jl, const kiq_journey_t *jr);

/* The newest kept journey of the batch of the partition holding offset;
 * false when none. */
bool kiq_journal_find(kiq_journal_t *jl, const char *topic, int32_t partition, int64_t offset, kiq_journey_t *out);
/* The newest one among whose first records' trace ids is the one of hash
 * trace (as the recorder hashes them). */
bool kiq_journal_find_trace(kiq_journal_t *jl, uint64_t trace, kiq_journey_t *out);

typedef struct kiq_journal_stats {
    uint64_t written, dropped; /* journeys written, and lost to a full queue or a failed write */
    int64_t bytes;             /* in the files now */
    int segments;
} kiq_journal_stats_t;
void kiq_journal_stats(kiq_journal_t *jl, kiq_journal_stats_t *out);

#endif
