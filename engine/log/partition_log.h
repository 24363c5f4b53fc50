/* The log of one partition: its segments in `<log.dir>/<topic>-<partition>/`
 * ordered by base offset, the log start offset and the log end offset
 * (LEO, the next offset to assign). The last segment is the active one;
 * appends roll to a new segment named after the LEO when the active one
 * would pass log.segment.bytes, its index is full or its first batch is
 * older than segment.ms. Retention deletes whole segments from the oldest
 * on, moving the log start offset. The log also keeps the idempotent
 * producers' state (producer_state.h), checked and updated with each
 * append, snapshotted to `<offset>.snapshot` at each roll and clean close,
 * and the leader-epoch cache (leader_epoch_cache.h), saved to
 * `leader-epoch-checkpoint` whenever an epoch starts, the log is cut at
 * either end, and at close.
 *
 * Thread safety: each log has its own mutex and every function below is
 * callable from any thread, except kiq_partition_log_free/delete, which
 * must be the last call on the log. Reads copy data outside the mutex,
 * holding references to the segments they read (see kiq_log_slices_t). */
#ifndef KIQ_LOG_PARTITION_LOG_H
#define KIQ_LOG_PARTITION_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "log/data_loss.h"
#include "log/leader_epoch_cache.h"
#include "log/log_config.h"
#include "log/producer_state.h"
#include "log/txn_index.h"
#include "log/segment.h"
#include "proto/writer.h"

/* A fetch offset outside [log start, LEO]: the caller answers
 * OFFSET_OUT_OF_RANGE (the reason is in kiq_error_get). */
#define KIQ_LOG_OUT_OF_RANGE (-2)
/* A read starting at a batch known damaged (kiq_partition_log_damage):
 * the caller answers CORRUPT_MESSAGE, as Kafka does for a corrupt read. */
#define KIQ_LOG_CORRUPT (-3)
/* Slices one read may take: a read continues into following segments. */
#define KIQ_LOG_MAX_SLICES 8

typedef struct kiq_partition_log kiq_partition_log_t;

/* Whole batches lying contiguously in one segment file. Part of a
 * kiq_log_slices_t, owned with it. */
typedef struct kiq_log_slice {
    kiq_segment_t *seg; /* a reference, dropped by kiq_log_slices_release */
    int fd;             /* seg's .log descriptor, open while the reference is held */
    uint64_t position;
    uint32_t length;
    int64_t base_offset; /* of the first batch */
    int64_t last_offset; /* of the last batch */
} kiq_log_slice_t;

/* What a read will send, found under the mutex and used outside it (pread
 * now, sendfile later). Owned by the calling thread. The references keep
 * each file open even if its segment is deleted meanwhile; a truncation of
 * the log meanwhile is detected by passing `generation` to
 * kiq_partition_log_unchanged after copying. */
typedef struct kiq_log_slices {
    kiq_log_slice_t s[KIQ_LOG_MAX_SLICES];
    int n;
    uint64_t generation;
} kiq_log_slices_t;

/* State of a segment, for reporting: a copy owned by the caller. */
typedef struct kiq_log_segment_info {
    int64_t base_offset;
    int64_t next_offset;
    uint64_t size;
    int64_t max_timestamp;
    size_t index_entries;
    size_t time_index_entries;
} kiq_log_segment_info_t;

/* Opens the partition directory (created if needed), loads its segments
 * sorted by the base offsets in their names, and recovers the last one:
 * from its last index entry when cfg->clean_shutdown, from its start
 * otherwise (other segments were synced when they were rolled, and are
 * only checked from their last index entry). An empty directory gets one
 * empty segment at offset 0. The idempotent producers' state is then
 * rebuilt: from the newest producer state snapshot at or below the LEO
 * (snapshots above it are removed), then from the batch headers after it;
 * without a snapshot, from every batch header (skipped after a clean
 * shutdown, which would have left a snapshot had there been producers).
 * The leader-epoch cache comes from its checkpoint, cut to the log's
 * offsets; a missing or malformed checkpoint is rebuilt from every batch
 * header, and one missing the epoch of the log's last batch is completed
 * from the headers after its latest entry. The high watermark starts at
 * the LEO. NULL with the reason on failure. */
kiq_partition_log_t *kiq_partition_log_open(const char *dir, const kiq_log_config_t *cfg);
/* kiq_partition_log_open after an unclean shutdown (cfg->clean_shutdown
 * false) with the recovery point known: every segment from the one holding
 * recovery_point on is scanned from its start, each batch's CRC checked, a
 * torn tail cut off and the indexes rebuilt. A segment cut short there
 * before the last one means a corrupt batch: the segments after it are
 * deleted too (nothing after it can have been flushed; Kafka's rule) and
 * the loss is logged as an error. A segment below the recovery point (or
 * any after a clean shutdown) found cut, one missing between others, and a
 * log ending before the recovery point were flushed once whole: the log
 * keeps what follows and records the data loss (data_loss.h). 0 is what
 * Kafka assumes without a checkpoint (everything is scanned); -1 means
 * unknown and behaves like kiq_partition_log_open. */
kiq_partition_log_t *kiq_partition_log_open_at(const char *dir, const kiq_log_config_t *cfg,
                                               int64_t recovery_point);
/* Clean close: syncs the active segment, writes the final time index
 * entries, trims the index files, writes a producer state snapshot at the
 * LEO when the log knows producers and the leader-epoch checkpoint when it
 * is behind, frees. NULL is fine. */
void kiq_partition_log_free(kiq_partition_log_t *l);
/* Closes the log and removes its directory with every file in it. The log
 * is freed whatever the result. */
int kiq_partition_log_delete(kiq_partition_log_t *l);

/* Appends already-validated v2 batches (one or several concatenated):
 * stamps each batch's base offset (assigned from the LEO on) and
 * partitionLeaderEpoch in place, which the CRC does not cover, rolls first
 * if needed, writes, and moves the LEO. A leader_epoch above the cache's
 * latest starts a new epoch at the first offset appended. *base_offset_out / *last_offset_out
 * (may be NULL) get the first and last offsets assigned. 0 or -1; after -1
 * the log is unchanged, except when the fsync flush.messages asks for
 * fails: the batches are then in the log but not known durable. */
int kiq_partition_log_append(kiq_partition_log_t *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                             int64_t *base_offset_out, int64_t *last_offset_out);

/* One fsync of a log: the recovery point moved from -> to, the fsync
 * began and ended at these monotonic times; messages: the flush.messages
 * that asked for it after an append (-1: the flusher's, for flush.ms). A
 * value. */
typedef struct kiq_log_flush {
    int64_t from, to;
    int64_t started_ns, ended_ns;
    int64_t messages;
} kiq_log_flush_t;

/* What kiq_partition_log_append_checked did; a value owned by the caller. */
typedef struct kiq_log_append_result {
    /* Offsets assigned, or for a duplicate those the batch got when it was
     * first appended. */
    int64_t base_offset, last_offset;
    /* The batch was appended before (an idempotent producer's retry):
     * nothing was written this time. */
    bool duplicate;
    /* For a duplicate: the original batch's max timestamp. */
    int64_t timestamp;
    /* Where the bytes went: the segment (its base offset) and the byte
     * position in it; -1 for a duplicate. */
    int64_t segment_base, position;
    /* That segment's .log file, for the append watch only (the log's mutex
     * held): NULL before and after it. */
    const char *segment_path;
    /* When the batches were in the segment (monotonic; before any fsync). */
    int64_t written_ns;
    /* flush.messages had the append fsynced: flush says how. */
    bool flushed;
    kiq_log_flush_t flush;
    /* A marker's append: the first offset of the transaction it ended
     * here (-1: none was open). */
    int64_t txn_first_offset;
    /* A leader's append of transactional batches: their producer (the
     * first one's); -1. */
    int64_t txn_producer;
} kiq_log_append_result_t;

/* Told of an append that wrote batches while the log's mutex is still held,
 * before any reader can see them and before the fsync flush.messages may
 * ask for: what must know of a batch before a fetch can return it (its
 * journey). Must not call into this log. */
typedef struct kiq_log_append_watch {
    void (*appended)(void *ctx, const kiq_log_append_result_t *res);
    void *ctx;
} kiq_log_append_watch_t;

/* A verification guard for producer_id's transactional records here
 * (kiq_producer_state_guard), taken before they are appended with it
 * (kiq_partition_log_append_checked); *ongoing gets whether its
 * transaction at producer_epoch is under way here already, in the same
 * look. When it is not, the transaction's coordinator is to be asked
 * first. v2: the coordinator is to add the partition (transactions v2),
 * and a marker at producer_epoch, the last transaction's, leaves the guard
 * standing. Any thread. */
uint64_t kiq_partition_log_txn_guard(kiq_partition_log_t *l, int64_t producer_id, int16_t producer_epoch, bool v2,
                                     bool *ongoing);
/* The coordinator refused what was asked under guard: it ends (if it still
 * stands), so a later produce asks again rather than reading that answer.
 * Any thread. */
void kiq_partition_log_txn_guard_end(kiq_partition_log_t *l, int64_t producer_id, uint64_t guard);

/* kiq_partition_log_append with the idempotent producer's checks, made
 * atomically with the write under the log's mutex: every batch with a
 * producer id (>= 0) is checked against that producer's state (see
 * kiq_producer_entry_check). A duplicate batch makes the whole append a
 * no-op answered with the original offsets (res->duplicate). With a
 * txn_guard (0: none), a transactional batch that would start its
 * producer's transaction here needs that guard to still hold. Returns 0
 * (appended or duplicate), a Kafka error code (OUT_OF_ORDER_SEQUENCE_NUMBER,
 * INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID, INVALID_TXN_STATE; nothing
 * appended, the reason naming producer, epoch and sequences in the error
 * slot), or -1 as kiq_partition_log_append. watch (may be NULL) is told of
 * a successful append that wrote. kiq_partition_log_append is this with a
 * producer refusal turned into -1. */
int kiq_partition_log_append_checked(kiq_partition_log_t *l, uint8_t *batches, size_t len, int32_t leader_epoch,
                                     uint64_t txn_guard, const kiq_log_append_watch_t *watch,
                                     kiq_log_append_result_t *res);
/* A follower's append of batches as its leader sent them (one or several
 * concatenated, base offsets and partitionLeaderEpoch set by the leader,
 * nothing restamped). Each batch must be a whole v2 batch whose CRC
 * matches, its offsets above the previous batch's. The first base offset
 * must not be below the LEO: an overlap means the follower has to truncate
 * or fetch from its LEO, and is refused. It may be above it, as Kafka
 * allows: a compacted leader log has gaps between batches. Each batch's
 * epoch goes into the leader-epoch cache and its producer's state is
 * replayed without any check (the leader made them). Rolls and flushes as
 * kiq_partition_log_append. res gets the first and last offsets. 0 or -1
 * with the reason; after -1 the log is unchanged (but for a failed
 * flush.messages fsync, as kiq_partition_log_append). */
int kiq_partition_log_append_follower(kiq_partition_log_t *l, const uint8_t *batches, size_t len,
                                      kiq_log_append_result_t *res);

/* A transaction marker, as WriteTxnMarkers carries it; a value. */
typedef struct kiq_txn_marker {
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t coordinator_epoch;
    bool commit; /* false: abort */
} kiq_txn_marker_t;

/* Appends the COMMIT or ABORT marker (a control batch) that ends
 * m->producer_id's transaction here, as leader at leader_epoch: from then
 * on its records count as committed or aborted (an abort is added to the
 * segment's .txnindex) and the last stable offset moves past them. A
 * marker for a producer with no transaction here is written all the same
 * (the coordinator cannot know which partitions got records). Returns 0,
 * INVALID_PRODUCER_EPOCH (an epoch older than the producer's here),
 * TRANSACTION_COORDINATOR_FENCED (an older coordinator epoch than the last
 * marker's), or -1 (the write failed); watch as for
 * kiq_partition_log_append_checked. */
int kiq_partition_log_append_marker(kiq_partition_log_t *l, const kiq_txn_marker_t *m, int32_t leader_epoch,
                                    const kiq_log_append_watch_t *watch, kiq_log_append_result_t *res);
/* The last stable offset: the high watermark, or the first offset of the
 * oldest ongoing transaction when that is lower. What read_committed
 * consumers may read up to. */
int64_t kiq_partition_log_last_stable_offset(kiq_partition_log_t *l);
/* How many aborted transactions the log knows (from its log start on). */
size_t kiq_partition_log_aborted_count(kiq_partition_log_t *l);
/* The aborted transactions a read_committed fetch of [from, upper) must
 * know of (see kiq_txn_index_collect), into an array in arena; how many. */
size_t kiq_partition_log_aborted(kiq_partition_log_t *l, int64_t from, int64_t upper, kiq_arena_t *arena,
                                 kiq_aborted_t **out);

/* A produce of these batches (their first one's producer) was refused
 * here with the retriable err before any sequence check: a later batch of
 * that producer is answered err too while this one is missing (see
 * kiq_producer_state_note_refusal). Any thread. */
void kiq_partition_log_note_refused(kiq_partition_log_t *l, const uint8_t *batches, size_t len, int16_t err);
/* A copy of producer_id's state in this partition: 1 with *out, 0 when
 * the producer is unknown here. */
int kiq_partition_log_producer(kiq_partition_log_t *l, int64_t producer_id, kiq_producer_entry_t *out);
/* Forgets the producers whose last batch is more than expiration_ms older
 * than now_ms and that have no open transaction (Kafka's
 * producer.id.expiration.ms); how many went. */
size_t kiq_partition_log_expire_producers(kiq_partition_log_t *l, int64_t now_ms, int64_t expiration_ms);
/* Producers known to this partition. */
size_t kiq_partition_log_producer_count(kiq_partition_log_t *l);

/* Finds what a fetch at `offset` returns: whole batches from the one
 * holding offset on, up to max_bytes in total, but always at least the
 * first batch even if it is larger (Kafka's rule, so a consumer can never
 * be stuck), never a batch whose base offset is >= max_offset (exclusive
 * bound, e.g. the high watermark), and never a batch known damaged: a read
 * stops before one. Returns the bytes found (0 when nothing is there yet:
 * offset at the LEO or at/above max_offset), KIQ_LOG_OUT_OF_RANGE when
 * offset is outside [log start, LEO], KIQ_LOG_CORRUPT when its batch is
 * behind known damage, or -1. On success, release out with
 * kiq_log_slices_release. */
int kiq_partition_log_locate(kiq_partition_log_t *l, int64_t offset, int32_t max_bytes, int64_t max_offset,
                             kiq_log_slices_t *out);
void kiq_log_slices_release(kiq_log_slices_t *s);
/* True when the log was not truncated since `generation` was taken, so the
 * bytes copied from slices taken then are what they were meant to be. */
bool kiq_partition_log_unchanged(kiq_partition_log_t *l, uint64_t generation);
/* The log's generation now: what kiq_partition_log_unchanged compares
 * with (a copy of the log made since is still its prefix while it is). */
uint64_t kiq_partition_log_generation(kiq_partition_log_t *l);
/* kiq_partition_log_locate, then the bytes appended to out. Returns the
 * bytes appended (0 when none), KIQ_LOG_OUT_OF_RANGE, KIQ_LOG_CORRUPT, or
 * -1. */
int kiq_partition_log_read(kiq_partition_log_t *l, int64_t offset, int32_t max_bytes, int64_t max_offset,
                           kiq_wr_t *out);

/* The base offset of the first batch whose max timestamp is >= ts, in file
 * order, into *offset (-1 when there is none). Batch granularity: the
 * batch's earlier records may be older than ts. 0 or -1 on error. */
int kiq_partition_log_offset_for_time(kiq_partition_log_t *l, int64_t ts, int64_t *offset);

/* Removes every batch from the one holding offset on (whole segments where
 * possible); the LEO becomes where the log then ends. offset must be within
 * [log start, LEO]; offset == LEO is a no-op. Producer state snapshots
 * above the new LEO are removed and the producers' state is rebuilt from
 * what is left; leader epochs starting at or above the new LEO are
 * dropped, and the high watermark comes down to it if it was above. */
int kiq_partition_log_truncate_to(kiq_partition_log_t *l, int64_t offset);

/* ---- Replication ---- */

/* Kafka's endOffsetFor over the leader-epoch cache (see
 * kiq_leader_epoch_cache_end_offset_for) with the LEO as the latest
 * epoch's end: what OffsetForLeaderEpoch and a Fetch's diverging_epoch
 * answer. Always 0. */
int kiq_partition_log_end_offset_for_epoch(kiq_partition_log_t *l, int32_t epoch, int32_t *out_epoch,
                                           int64_t *out_end_offset);
/* The cache's latest leader epoch, -1 when none. */
int32_t kiq_partition_log_latest_epoch(kiq_partition_log_t *l);
/* partitionLeaderEpoch of the last batch in the log: a follower's
 * last_fetched_epoch. The cache's latest epoch when the log holds no
 * batch (-1 when there is none either). */
int32_t kiq_partition_log_last_batch_epoch(kiq_partition_log_t *l);
/* Copies up to max cache entries (oldest first) and returns how many
 * there are. */
int kiq_partition_log_epochs(kiq_partition_log_t *l, kiq_epoch_entry_t *out, int max);
/* The high watermark: the LEO found at open until set. It stays within
 * [log start, LEO]: set clamps to that, a truncation lowers it, the log
 * start moving past it raises it. Nothing in the log reads it. */
int64_t kiq_partition_log_high_watermark(kiq_partition_log_t *l);
void kiq_partition_log_set_high_watermark(kiq_partition_log_t *l, int64_t hw);

int64_t kiq_partition_log_start_offset(kiq_partition_log_t *l);
int64_t kiq_partition_log_end_offset(kiq_partition_log_t *l);
/* The offsets a fetch reads, taken together under one lock (a fetch of
 * many partitions asks them of each, every time). */
typedef struct kiq_log_positions {
    int64_t start_offset, end_offset, high_watermark, last_stable_offset;
    int32_t last_batch_epoch; /* as kiq_partition_log_last_batch_epoch */
    bool damaged;             /* a range is marked not to be served (kiq_partition_log_damaged) */
} kiq_log_positions_t;
void kiq_partition_log_positions(kiq_partition_log_t *l, kiq_log_positions_t *out);
/* Fills up to max entries (oldest first) and returns the number of segments. */
int kiq_partition_log_segments(kiq_partition_log_t *l, kiq_log_segment_info_t *out, int max);
/* The bytes of all its segments (DescribeLogDirs' partition_size). */
uint64_t kiq_partition_log_size(kiq_partition_log_t *l);
/* A copy of every idempotent producer's state, into an array in arena
 * (*out, unordered); how many there are. */
size_t kiq_partition_log_producers(kiq_partition_log_t *l, kiq_arena_t *arena, kiq_producer_entry_t **out);
/* What recovery found when the log was opened (summed over segments). */
void kiq_partition_log_recovery(kiq_partition_log_t *l, kiq_segment_recovery_t *out);
/* The directory, fixed at open. */
const char *kiq_partition_log_dir(const kiq_partition_log_t *l);
/* Ties the log to the health of the log directory holding it (shared with
 * its other logs, outliving this one): a failed write or fsync takes that
 * offline, and an offline log refuses appends and skips flushes, retention
 * and cleaning. Call right after open. */
void kiq_partition_log_set_log_dir(kiq_partition_log_t *l, kiq_log_dir_t *log_dir);
/* True when the log's directory is offline: its partition answers
 * KAFKA_STORAGE_ERROR. */
bool kiq_partition_log_offline(kiq_partition_log_t *l);
/* Any thread: whether appends may go in now (the directory is online and
 * not full; a full one is probed again once its second is up). */
bool kiq_partition_log_writable(kiq_partition_log_t *l);
/* The scrubber found seg (a segment of this log it holds a reference to)
 * damaged from the batch at byte position on, whose first offset is from
 * (why: what and where): reads stop before it and a read of it is refused
 * (KIQ_LOG_CORRUPT) until a truncation removes it. 1 when that is news, 0
 * when known or seg has left the log meanwhile. Any thread. */
int kiq_partition_log_damage(kiq_partition_log_t *l, const kiq_segment_t *seg, uint64_t position, int64_t from,
                             const char *why);
/* The first segment marked damaged, -1 for none (a truncation below the
 * damage clears the mark: a follower fetches the range again); why (may be
 * NULL) gets what was found. Any thread. */
int64_t kiq_partition_log_damaged(kiq_partition_log_t *l, char *why, size_t n);
/* Whether the segment files are still what the log wrote (all: every
 * segment; else the active one), and whether a recorded data loss was
 * acknowledged meanwhile. A file deleted under the broker is written back
 * from the descriptor still open on it, so nothing is lost (logged as an
 * error). A file cut under the broker has lost what lay past its whole
 * batches: the segment is cut there (an active one rolled first), the log
 * skips the gap, the range is marked damaged (a follower fetches it again,
 * a leader gives its leadership up) and the loss recorded
 * (kiq_partition_log_data_loss). Returns how many files were found changed
 * that were not known. Any thread. */
int kiq_partition_log_check_files(kiq_partition_log_t *l, bool all);
/* The data loss recorded for this partition and not acknowledged
 * (data_loss.h): found at open (a log short of its recovery point, a
 * segment cut or missing between others) or by
 * kiq_partition_log_check_files. 1 with *out, else 0. Any thread. */
int kiq_partition_log_data_loss(kiq_partition_log_t *l, kiq_data_loss_t *out);
/* fdatasync of the active segment and its indexes; the recovery point
 * becomes the LEO. */
int kiq_partition_log_flush(kiq_partition_log_t *l);
/* Sets the time and size policies (-1 for none): segment_ms rolls the
 * active segment on an append whose batches are more than segment_ms newer
 * than the active segment's first batch (Kafka compares message timestamps,
 * not wall time, so a replayed or backfilled log rolls the same way);
 * retention_ms and retention_bytes are applied by
 * kiq_partition_log_enforce_retention. */
void kiq_partition_log_set_retention(kiq_partition_log_t *l, int64_t segment_ms, int64_t retention_ms,
                                     int64_t retention_bytes);
/* segment.jitter.ms (0: none): each segment rolls by time a random amount
 * below it (and below segment_ms) early, drawn when the segment starts
 * (or when this or segment_ms changes), as Kafka spreads the time-based
 * rolls of its partitions. */
void kiq_partition_log_set_roll_jitter(kiq_partition_log_t *l, int64_t jitter_ms);
/* One retention pass at time now_ms (ms since the epoch): deletes, oldest
 * first and never the active segment, the segments wholly below the log
 * start offset, those whose newest timestamp is more than retention_ms
 * before now_ms (the file's mtime when they hold no timestamp), and those
 * whose removal keeps the partition at or above retention_bytes; then the
 * log start offset moves up to the first remaining segment (the leader
 * epochs before it are dropped). Returns the number of segments deleted. */
int kiq_partition_log_enforce_retention(kiq_partition_log_t *l, int64_t now_ms);
/* Moves the log start offset up to offset (DeleteRecords, or a checkpoint
 * read at start), deletes the non-active segments wholly below it and
 * drops the leader epochs before it (the one covering it now starts
 * there). An
 * offset at or below the current start changes nothing; one above the LEO
 * is refused with KIQ_LOG_OUT_OF_RANGE. 0 on success. */
int kiq_partition_log_advance_start(kiq_partition_log_t *l, int64_t offset);

/* flush.messages and flush.ms (INT64_MAX, Kafka's default, leaves
 * flushing to the OS): an append fsyncs once flush_messages messages are
 * unflushed; kiq_partition_log_flush_if_due fsyncs when the oldest
 * unflushed append is flush_ms old. */
void kiq_partition_log_set_flush(kiq_partition_log_t *l, int64_t flush_messages, int64_t flush_ms);
/* The periodic flusher's check at now_ms (CLOCK_MONOTONIC ms): flushes
 * when flush.ms has passed since the oldest unflushed append. 1 when it
 * flushed (*done, may be NULL, says how), 0 when nothing was due, -1 when
 * the fsync failed. */
int kiq_partition_log_flush_if_due(kiq_partition_log_t *l, int64_t now_ms, kiq_log_flush_t *done);
/* The offset below which everything is known to be on disk (fsynced):
 * moved by flushes and rolls, lowered by truncation. */
int64_t kiq_partition_log_recovery_point(kiq_partition_log_t *l);
/* fsyncs done by flushes (kiq_partition_log_flush, flush.messages, flush.ms). */
uint64_t kiq_partition_log_flush_count(kiq_partition_log_t *l);
/* A monotonic clock in ms, the time base of kiq_partition_log_flush_if_due. */
int64_t kiq_partition_log_now_ms(void);

/* Changes the roll size (from the next append) and the index settings of
 * segments created from now on; existing segments keep theirs.
 * clean_shutdown is ignored. cfg must pass kiq_log_config_check. */
void kiq_partition_log_set_config(kiq_partition_log_t *l, const kiq_log_config_t *cfg);


/* ---- Log cleaner support ---- */

/* The cleaner writes a segment's compacted copy to `<base>.log.cleaned`,
 * renames it `<base>.log.swap` once it is complete and synced, and the swap
 * replaces `<base>.log`. On open, leftover .cleaned files are removed (the
 * cleaning was cut short) and .swap files finish their replacement. */
#define KIQ_CLEANED_SUFFIX ".log.cleaned"
#define KIQ_SWAP_SUFFIX ".log.swap"

/* A closed segment as seen under the mutex, with a reference the caller
 * drops (kiq_partition_log_closed_release). Owned by the calling thread. */
typedef struct kiq_log_closed_segment {
    kiq_segment_t *seg;
    int64_t base_offset;
    int64_t next_offset;
    uint64_t size;
    int64_t max_timestamp;
} kiq_log_closed_segment_t;

/* References to every segment but the active one, oldest first, into a
 * malloc'd *out (NULL when none, or when the log directory is offline),
 * and the generation they belong to.
 * Returns how many, or -1. Closed segments are immutable until deleted,
 * truncated (which moves the generation) or replaced. */
int kiq_partition_log_closed_segments(kiq_partition_log_t *l, kiq_log_closed_segment_t **out, uint64_t *generation);
void kiq_partition_log_closed_release(kiq_log_closed_segment_t *segs, int n);
/* Replaces the closed segment old by its `<base>.log.swap` file: the old
 * index files are removed, the swap renamed over `<base>.log`, and the new
 * segment opened with rebuilt indexes and sealed. Readers holding
 * references to old keep reading its (now unlinked) file. When old is no
 * longer a closed segment of the log or the log was truncated since
 * generation, the swap file is removed and 1 returned. 0 when replaced,
 * -1 on error. */
int kiq_partition_log_replace_segment(kiq_partition_log_t *l, kiq_segment_t *old, uint64_t generation);

#endif
