#include "log/producer_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"
#include "log/log_names.h"
#include "proto/reader.h"
#include "proto/writer.h"
#include "record/crc32c.h"

/* Open addressing with linear probing; producer ids are >= 0, so -1 marks a
 * free slot. Entries are never removed one by one, only all at once. */
struct kiq_producer_state {
    kiq_producer_entry_t *slots;
    size_t cap; /* a power of two */
    size_t count;
    /* Verification guards (KIP-890), oldest first; few at a time, as each
     * lives from a transaction's first produce here to its first append. */
    struct guard {
        int64_t producer_id;
        uint64_t guard;
        int16_t spared_epoch; /* markers up to this epoch leave it standing; -1 */
    } guards[KIQ_PRODUCER_GUARDS_MAX];
    int nguards;
    uint64_t last_guard;
    /* kiq_producer_state_note_refusal's, a ring */
    struct refusal {
        int64_t producer_id;
        int64_t at_ns; /* 0: a free slot */
        int32_t first_seq;
        int16_t epoch, err;
    } refusals[KIQ_PRODUCER_REFUSALS];
    int next_refusal;
};

#define EMPTY_ID (-1)
#define INITIAL_CAP 16

/* Snapshot layout: magic | version i16 | crc u32 (CRC-32C of what follows)
 * | offset i64 | count i32 | entries: producer id i64, epoch i16, nbatches
 * i8, from version 2 the ongoing transaction's first offset i64 and the
 * last marker's coordinator epoch i32, then per batch first seq i32, last
 * seq i32, first offset i64, last offset i64, timestamp i64. Version 1
 * (before transactions) is still read. */
static const uint8_t SNAPSHOT_MAGIC[4] = {'K', 'I', 'Q', 'P'};
#define SNAPSHOT_VERSION 2
#define SNAPSHOT_HEAD 10 /* magic, version, crc */
#define SNAPSHOT_ENTRY_MIN 11
#define SNAPSHOT_BATCH 32
#define SNAPSHOT_TMP_SUFFIX ".snapshot.tmp"
/* A snapshot larger than this is not trusted (and not read whole). */
#define SNAPSHOT_MAX_BYTES ((size_t)256 << 20)

static size_t slot_of(int64_t id, size_t cap)
{
    uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static kiq_producer_entry_t *alloc_slots(size_t cap)
{
    kiq_producer_entry_t *s = malloc(cap * sizeof *s);
    if (!s) return NULL;
    for (size_t i = 0; i < cap; i++) s[i].producer_id = EMPTY_ID;
    return s;
}

kiq_producer_state_t *kiq_producer_state_new(void)
{
    kiq_producer_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        kiq_error_set("out of memory");
        return NULL;
    }
    s->slots = alloc_slots(INITIAL_CAP);
    if (!s->slots) {
        free(s);
        kiq_error_set("out of memory");
        return NULL;
    }
    s->cap = INITIAL_CAP;
    return s;
}

void kiq_producer_state_free(kiq_producer_state_t *s)
{
    if (!s) return;
    free(s->slots);
    free(s);
}

void kiq_producer_state_clear(kiq_producer_state_t *s)
{
    for (size_t i = 0; i < s->cap; i++) s->slots[i].producer_id = EMPTY_ID;
    s->count = 0;
    s->nguards = 0;
}

static int guard_index(const kiq_producer_state_t *s, int64_t producer_id)
{
    for (int i = 0; i < s->nguards; i++)
        if (s->guards[i].producer_id == producer_id) return i;
    return -1;
}

uint64_t kiq_producer_state_guard(kiq_producer_state_t *s, int64_t producer_id, int16_t spared_epoch)
{
    int i = guard_index(s, producer_id);
    if (i >= 0) return s->guards[i].guard;
    if (s->nguards == KIQ_PRODUCER_GUARDS_MAX) {
        /* the oldest question's answer will be refused, never wrongly taken */
        memmove(&s->guards[0], &s->guards[1], (size_t)(s->nguards - 1) * sizeof s->guards[0]);
        s->nguards--;
    }
    s->guards[s->nguards].producer_id = producer_id;
    s->guards[s->nguards].guard = ++s->last_guard;
    s->guards[s->nguards].spared_epoch = spared_epoch;
    return s->guards[s->nguards++].guard;
}

bool kiq_producer_state_guard_holds(const kiq_producer_state_t *s, int64_t producer_id, uint64_t guard)
{
    int i = guard_index(s, producer_id);
    return i >= 0 && s->guards[i].guard == guard;
}

void kiq_producer_state_guard_marker(kiq_producer_state_t *s, int64_t producer_id, int16_t marker_epoch)
{
    int i = guard_index(s, producer_id);
    if (i >= 0 && marker_epoch > s->guards[i].spared_epoch) kiq_producer_state_guard_end(s, producer_id, 0);
}

void kiq_producer_state_guard_end(kiq_producer_state_t *s, int64_t producer_id, uint64_t guard)
{
    int i = guard_index(s, producer_id);
    if (i < 0 || (guard && s->guards[i].guard != guard)) return;
    memmove(&s->guards[i], &s->guards[i + 1], (size_t)(s->nguards - i - 1) * sizeof s->guards[0]);
    s->nguards--;
}

size_t kiq_producer_state_count(const kiq_producer_state_t *s) { return s->count; }

void kiq_producer_state_note_refusal(kiq_producer_state_t *s, const kiq_batch_header_t *h, int16_t err,
                                     int64_t now_ns)
{
    if (h->producer_id < 0 || h->base_sequence < 0) return;
    s->refusals[s->next_refusal] = (struct refusal){h->producer_id, now_ns, h->base_sequence, h->producer_epoch, err};
    s->next_refusal = (s->next_refusal + 1) % KIQ_PRODUCER_REFUSALS;
}

int16_t kiq_producer_state_refused(const kiq_producer_state_t *s, int64_t producer_id, int16_t epoch,
                                   int32_t first_seq, int64_t now_ns)
{
    for (int i = 0; i < KIQ_PRODUCER_REFUSALS; i++) {
        const struct refusal *r = &s->refusals[i];
        if (r->at_ns && r->producer_id == producer_id && r->epoch == epoch && r->first_seq == first_seq &&
            now_ns - r->at_ns <= (int64_t)KIQ_PRODUCER_REFUSAL_MS * 1000000)
            return r->err;
    }
    return 0;
}

static kiq_producer_entry_t *find_slot(kiq_producer_entry_t *slots, size_t cap, int64_t id)
{
    for (size_t i = slot_of(id, cap);; i = (i + 1) & (cap - 1))
        if (slots[i].producer_id == id || slots[i].producer_id == EMPTY_ID) return &slots[i];
}

const kiq_producer_entry_t *kiq_producer_state_get(const kiq_producer_state_t *s, int64_t producer_id)
{
    if (producer_id < 0) return NULL;
    kiq_producer_entry_t *e = find_slot(s->slots, s->cap, producer_id);
    return e->producer_id == producer_id ? e : NULL;
}

static int grow(kiq_producer_state_t *s)
{
    size_t cap = s->cap * 2;
    kiq_producer_entry_t *slots = alloc_slots(cap);
    if (!slots) return kiq_error_set("out of memory");
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].producer_id != EMPTY_ID) *find_slot(slots, cap, s->slots[i].producer_id) = s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

int kiq_producer_state_put(kiq_producer_state_t *s, const kiq_producer_entry_t *e)
{
    if (e->producer_id < 0) return kiq_error_set("producer id %" PRId64 " is not valid", e->producer_id);
    kiq_producer_entry_t *slot = find_slot(s->slots, s->cap, e->producer_id);
    if (slot->producer_id == EMPTY_ID) {
        /* at most half full, so probes stay short */
        if ((s->count + 1) * 2 > s->cap) {
            if (grow(s) < 0) return -1;
            slot = find_slot(s->slots, s->cap, e->producer_id);
        }
        s->count++;
    }
    *slot = *e;
    return 0;
}

static bool expired(const kiq_producer_entry_t *e, int64_t before_ts)
{
    return e->producer_id != EMPTY_ID && e->txn_first_offset < 0 && e->nbatches > 0 &&
           e->batches[e->nbatches - 1].timestamp < before_ts;
}

size_t kiq_producer_state_expire(kiq_producer_state_t *s, int64_t before_ts)
{
    size_t gone = 0;
    for (size_t i = 0; i < s->cap; i++) gone += expired(&s->slots[i], before_ts);
    if (!gone) return 0;
    /* linear probing: the survivors go into a new table, so no probe chain
     * breaks where an entry left */
    kiq_producer_entry_t *slots = alloc_slots(s->cap);
    if (!slots) return 0; /* they expire at a later round */
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].producer_id != EMPTY_ID && !expired(&s->slots[i], before_ts))
            *find_slot(slots, s->cap, s->slots[i].producer_id) = s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->count -= gone;
    return gone;
}

void kiq_producer_state_foreach(const kiq_producer_state_t *s, void (*cb)(const kiq_producer_entry_t *e, void *ctx),
                                void *ctx)
{
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].producer_id != EMPTY_ID) cb(&s->slots[i], ctx);
}

/* ---- The rules ---- */

static int32_t seq_add(int32_t seq, int32_t n)
{
    if (seq > INT32_MAX - n) return n - (INT32_MAX - seq) - 1;
    return seq + n;
}

int32_t kiq_producer_last_seq(const kiq_batch_header_t *h)
{
    if (h->base_sequence < 0 || h->last_offset_delta < 0) return h->base_sequence;
    return seq_add(h->base_sequence, h->last_offset_delta);
}

int kiq_producer_entry_check(const kiq_producer_entry_t *e, const kiq_batch_header_t *h, bool *duplicate,
                             kiq_producer_batch_t *original)
{
    *duplicate = false;
    int32_t first = h->base_sequence, last = kiq_producer_last_seq(h);
    bool unsequenced = first < 0 && kiq_batch_is_transactional(h);
    /* A producer this partition does not know (its batches truncated,
     * expired or never replicated here) is taken at any sequence, as Kafka
     * does since KIP-360: a retry after a leader change goes on instead of
     * failing the producer. */
    if (!e) return 0;
    if (h->producer_epoch < e->epoch) {
        kiq_error_set("producer %" PRId64 ": epoch %d is older than the current epoch %d (sequences %" PRId32
                      "..%" PRId32 ")", h->producer_id, h->producer_epoch, e->epoch, first, last);
        return KIQ_ERR_INVALID_PRODUCER_EPOCH;
    }
    /* a coordinator's transactional batch (TxnOffsetCommit) carries no
     * sequence: only its epoch is checked */
    if (unsequenced) return 0;
    if (h->producer_epoch > e->epoch) {
        if (first == 0) return 0;
        kiq_error_set("producer %" PRId64 ": the first batch of new epoch %d starts at sequence %" PRId32
                      " (not 0; previous epoch %d)", h->producer_id, h->producer_epoch, first, e->epoch);
        return KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    }
    for (int i = 0; i < e->nbatches; i++) {
        if (e->batches[i].first_seq == first && e->batches[i].last_seq == last) {
            *duplicate = true;
            if (original) *original = e->batches[i];
            return 0;
        }
    }
    int32_t next = kiq_producer_entry_next_seq(e);
    if (first == next) return 0;
    kiq_error_set("producer %" PRId64 " epoch %d: batch with sequences %" PRId32 "..%" PRId32
                  " is out of order; expected sequence %" PRId32, h->producer_id, h->producer_epoch, first, last, next);
    return KIQ_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
}

int32_t kiq_producer_entry_next_seq(const kiq_producer_entry_t *e)
{
    return e->nbatches ? seq_add(e->batches[e->nbatches - 1].last_seq, 1) : 0;
}

void kiq_producer_entry_init(kiq_producer_entry_t *e, int64_t producer_id, int16_t epoch)
{
    memset(e, 0, sizeof *e);
    e->producer_id = producer_id;
    e->epoch = epoch;
    e->txn_first_offset = -1;
    e->coordinator_epoch = -1;
}

void kiq_producer_entry_update(kiq_producer_entry_t *e, const kiq_batch_header_t *h)
{
    if (h->producer_epoch < e->epoch) return;
    if (h->producer_epoch > e->epoch) {
        /* a fence's abort marker comes at the next epoch: the coordinator
         * epoch and the transaction it ends carry over */
        int64_t txn_first = e->txn_first_offset;
        int32_t coordinator_epoch = e->coordinator_epoch;
        kiq_producer_entry_init(e, h->producer_id, h->producer_epoch);
        e->txn_first_offset = txn_first;
        e->coordinator_epoch = coordinator_epoch;
    }
    if (kiq_batch_is_control(h)) {
        e->txn_first_offset = -1;
        return;
    }
    if (kiq_batch_is_transactional(h) && e->txn_first_offset < 0) e->txn_first_offset = h->base_offset;
    if (h->base_sequence < 0) return; /* nothing to recognise a retry by */
    if (e->nbatches == KIQ_PRODUCER_BATCHES_KEPT) {
        memmove(e->batches, e->batches + 1, (KIQ_PRODUCER_BATCHES_KEPT - 1) * sizeof *e->batches);
        e->nbatches--;
    }
    e->batches[e->nbatches++] = (kiq_producer_batch_t){
        .first_seq = h->base_sequence,
        .last_seq = kiq_producer_last_seq(h),
        .first_offset = h->base_offset,
        .last_offset = kiq_batch_last_offset(h),
        .timestamp = h->max_timestamp,
    };
}

/* ---- Rebuilding from the log ---- */

int kiq_producer_state_replay(kiq_producer_state_t *s, const kiq_batch_header_t *h, int64_t *txn_first)
{
    if (txn_first) *txn_first = -1;
    if (h->producer_id < 0) return 0;
    kiq_producer_entry_t e;
    const kiq_producer_entry_t *cur = kiq_producer_state_get(s, h->producer_id);
    if (cur)
        e = *cur;
    else
        kiq_producer_entry_init(&e, h->producer_id, h->producer_epoch);
    if (txn_first && kiq_batch_is_control(h) && h->producer_epoch >= e.epoch) *txn_first = e.txn_first_offset;
    kiq_producer_entry_update(&e, h);
    return kiq_producer_state_put(s, &e);
}

/* A control batch's type, read whole from the segment at pos: -1 when it
 * cannot be read or is not a marker. */
static int read_marker_type(kiq_segment_t *seg, uint64_t pos, size_t size)
{
    /* a marker is one small record; anything larger is not one */
    if (size > 4096) return -1;
    uint8_t buf[4096];
    if (kiq_segment_read(seg, pos, buf, size) < 0) return -1;
    return kiq_batch_control_type(buf, size);
}

int kiq_producer_state_scan_segment(kiq_producer_state_t *s, kiq_segment_t *seg, int64_t from_offset,
                                    const kiq_marker_watch_t *watch)
{
    if (from_offset >= seg->next_offset) return 0;
    uint64_t pos = 0;
    if (from_offset > seg->base_offset) {
        kiq_batch_loc_t loc;
        int rc = kiq_segment_find(seg, from_offset, &loc);
        if (rc <= 0) return rc;
        pos = loc.position;
    }
    uint8_t head[KIQ_BATCH_HEADER_SIZE];
    while (pos < seg->size) {
        if (seg->size - pos < KIQ_BATCH_HEADER_SIZE)
            return kiq_error_set("%s: a partial batch header at position %" PRIu64, seg->path, pos);
        if (kiq_segment_read(seg, pos, head, sizeof head) < 0) return -1;
        kiq_batch_header_t h;
        if (kiq_batch_header_parse(head, sizeof head, &h) < 0)
            return kiq_error_set("%s: at position %" PRIu64 ": %s", seg->path, pos, kiq_error_get());
        size_t size = kiq_batch_size(&h);
        if (h.batch_length < KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_LOG_OVERHEAD || size > seg->size - pos)
            return kiq_error_set("%s: a batch length of %" PRId32 " at position %" PRIu64 " does not fit", seg->path,
                                 h.batch_length, pos);
        int64_t txn_first;
        if (kiq_producer_state_replay(s, &h, &txn_first) < 0) return -1;
        if (watch && kiq_batch_is_control(&h) && h.producer_id >= 0) {
            int type = read_marker_type(seg, pos, size);
            if (type == KIQ_CONTROL_ABORT || type == KIQ_CONTROL_COMMIT)
                watch->marker(watch->ctx, &h, txn_first, type == KIQ_CONTROL_ABORT);
            else
                KIQ_WARN("%s: control batch at offset %" PRId64 " is not a transaction marker", seg->path,
                         h.base_offset);
        }
        pos += size;
    }
    return 0;
}

/* ---- Snapshots ---- */

typedef struct snap_writer {
    kiq_wr_t *w;
    int32_t count;
} snap_writer_t;

static void write_entry(const kiq_producer_entry_t *e, void *ctx)
{
    snap_writer_t *sw = ctx;
    kiq_wr_i64(sw->w, e->producer_id);
    kiq_wr_i16(sw->w, e->epoch);
    kiq_wr_i8(sw->w, (int8_t)e->nbatches);
    kiq_wr_i64(sw->w, e->txn_first_offset);
    kiq_wr_i32(sw->w, e->coordinator_epoch);
    for (int i = 0; i < e->nbatches; i++) {
        const kiq_producer_batch_t *b = &e->batches[i];
        kiq_wr_i32(sw->w, b->first_seq);
        kiq_wr_i32(sw->w, b->last_seq);
        kiq_wr_i64(sw->w, b->first_offset);
        kiq_wr_i64(sw->w, b->last_offset);
        kiq_wr_i64(sw->w, b->timestamp);
    }
    sw->count++;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return kiq_error_errno("cannot create %s", path);
    int rc = kiq_pwrite_full(fd, buf, len, 0);
    if (rc == 0 && fdatasync(fd) < 0) rc = kiq_error_errno("fdatasync %s", path);
    if (close(fd) < 0 && rc == 0) rc = kiq_error_errno("close %s", path);
    return rc;
}

/* Removes all but the `keep` newest snapshots. */
static void prune_snapshots(const char *dir, int keep)
{
    int64_t *offs = NULL;
    int n = kiq_producer_state_list_snapshots(dir, &offs);
    for (int i = 0; i < n - keep; i++) {
        char path[PATH_MAX];
        if (kiq_log_segment_path(path, sizeof path, dir, offs[i], KIQ_SNAPSHOT_SUFFIX) < 0) continue;
        if (unlink(path) < 0 && errno != ENOENT) KIQ_WARN("unlink %s: %s", path, strerror(errno));
    }
    free(offs);
}

int kiq_producer_state_write_snapshot(const kiq_producer_state_t *s, const char *dir, int64_t offset)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (kiq_log_segment_path(path, sizeof path, dir, offset, KIQ_SNAPSHOT_SUFFIX) < 0 ||
        kiq_log_segment_path(tmp, sizeof tmp, dir, offset, SNAPSHOT_TMP_SUFFIX) < 0)
        return -1;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_raw(&w, SNAPSHOT_MAGIC, sizeof SNAPSHOT_MAGIC);
    kiq_wr_i16(&w, SNAPSHOT_VERSION);
    kiq_wr_u32(&w, 0);
    kiq_wr_i64(&w, offset);
    kiq_wr_i32(&w, 0);
    snap_writer_t sw = {&w, 0};
    kiq_producer_state_foreach(s, write_entry, &sw);
    if (w.err) {
        kiq_wr_free(&w);
        return kiq_error_set("out of memory writing %s", path);
    }
    kiq_put_be32(w.buf + SNAPSHOT_HEAD + 8, (uint32_t)sw.count);
    kiq_put_be32(w.buf + 6, kiq_crc32c(0, w.buf + SNAPSHOT_HEAD, w.len - SNAPSHOT_HEAD));
    int rc = write_file(tmp, w.buf, w.len);
    kiq_wr_free(&w);
    if (rc == 0 && rename(tmp, path) < 0) rc = kiq_error_errno("rename %s to %s", tmp, path);
    if (rc < 0) {
        unlink(tmp);
        return -1;
    }
    if (kiq_fsync_dir(dir) < 0) return -1;
    prune_snapshots(dir, KIQ_SNAPSHOTS_KEPT);
    return 0;
}

/* Parses a whole snapshot file into s (cleared first); -1 with the reason
 * when it is not a sound snapshot of that offset. */
static int parse_snapshot(kiq_producer_state_t *s, const uint8_t *buf, size_t len, int64_t offset)
{
    kiq_producer_state_clear(s);
    if (len < SNAPSHOT_HEAD + 12 || memcmp(buf, SNAPSHOT_MAGIC, sizeof SNAPSHOT_MAGIC) != 0)
        return kiq_error_set("not a producer state snapshot");
    unsigned version = kiq_be16(buf + 4);
    if (version < 1 || version > SNAPSHOT_VERSION) return kiq_error_set("unknown snapshot version %u", version);
    if (kiq_be32(buf + 6) != kiq_crc32c(0, buf + SNAPSHOT_HEAD, len - SNAPSHOT_HEAD))
        return kiq_error_set("CRC mismatch");
    kiq_rd_t rd;
    kiq_rd_init(&rd, buf + SNAPSHOT_HEAD, len - SNAPSHOT_HEAD);
    int64_t at = kiq_rd_i64(&rd);
    int32_t count = kiq_rd_i32(&rd);
    if (at != offset) return kiq_error_set("holds offset %" PRId64 ", its name says %" PRId64, at, offset);
    if (count < 0 || (size_t)count > kiq_rd_left(&rd) / SNAPSHOT_ENTRY_MIN)
        return kiq_error_set("bad entry count %" PRId32, count);
    for (int32_t i = 0; i < count; i++) {
        kiq_producer_entry_t e;
        kiq_producer_entry_init(&e, kiq_rd_i64(&rd), 0);
        e.epoch = kiq_rd_i16(&rd);
        e.nbatches = kiq_rd_i8(&rd);
        if (version >= 2) {
            e.txn_first_offset = kiq_rd_i64(&rd);
            e.coordinator_epoch = kiq_rd_i32(&rd);
        }
        if (rd.err) break;
        if (e.producer_id < 0 || e.nbatches < 0 || e.nbatches > KIQ_PRODUCER_BATCHES_KEPT)
            return kiq_error_set("entry %" PRId32 " is malformed", i);
        for (int j = 0; j < e.nbatches; j++) {
            kiq_producer_batch_t *b = &e.batches[j];
            b->first_seq = kiq_rd_i32(&rd);
            b->last_seq = kiq_rd_i32(&rd);
            b->first_offset = kiq_rd_i64(&rd);
            b->last_offset = kiq_rd_i64(&rd);
            b->timestamp = kiq_rd_i64(&rd);
        }
        if (rd.err) break;
        if (kiq_producer_state_put(s, &e) < 0) return -1;
    }
    if (rd.err) return kiq_error_set("truncated: %s", rd.err);
    if (kiq_rd_left(&rd) != 0) return kiq_error_set("%zu trailing bytes", kiq_rd_left(&rd));
    return 0;
}

static int load_file(kiq_producer_state_t *s, const char *path, int64_t offset)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return kiq_error_errno("cannot open");
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return kiq_error_errno("cannot stat");
    }
    if ((uint64_t)st.st_size > SNAPSHOT_MAX_BYTES) {
        close(fd);
        return kiq_error_set("%lld bytes is too large", (long long)st.st_size);
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        close(fd);
        return kiq_error_set("out of memory");
    }
    ssize_t r = kiq_pread_full(fd, buf, len, 0);
    close(fd);
    int rc = r < 0 ? -1 : (size_t)r != len ? kiq_error_set("shorter than its size") : parse_snapshot(s, buf, len, offset);
    free(buf);
    return rc;
}

int kiq_producer_state_list_snapshots(const char *dir, int64_t **out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return kiq_error_errno("open directory %s", dir);
    int64_t *offs = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    int64_t off;
    while ((e = readdir(d))) {
        if (!kiq_log_segment_name_parse(e->d_name, KIQ_SNAPSHOT_SUFFIX, &off)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            int64_t *p = realloc(offs, (size_t)cap * sizeof *p);
            if (!p) {
                free(offs);
                closedir(d);
                return kiq_error_set("out of memory");
            }
            offs = p;
        }
        offs[n++] = off;
    }
    closedir(d);
    /* a handful of files: insertion sort */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && offs[j - 1] > offs[j]; j--) {
            int64_t t = offs[j];
            offs[j] = offs[j - 1];
            offs[j - 1] = t;
        }
    *out = offs;
    return n;
}

int kiq_producer_state_load_snapshot(kiq_producer_state_t *s, const char *dir, int64_t max_offset,
                                     int64_t *offset_out)
{
    *offset_out = -1;
    kiq_producer_state_clear(s);
    int64_t *offs;
    int n = kiq_producer_state_list_snapshots(dir, &offs);
    if (n < 0) return -1;
    for (int i = n - 1; i >= 0; i--) {
        if (offs[i] > max_offset) continue;
        char path[PATH_MAX];
        if (kiq_log_segment_path(path, sizeof path, dir, offs[i], KIQ_SNAPSHOT_SUFFIX) < 0) continue;
        if (load_file(s, path, offs[i]) == 0) {
            *offset_out = offs[i];
            break;
        }
        KIQ_WARN("%s: producer state snapshot is unusable (%s); removing it", path, kiq_error_get());
        kiq_producer_state_clear(s);
        if (unlink(path) < 0) KIQ_WARN("unlink %s: %s", path, strerror(errno));
    }
    free(offs);
    return 0;
}

int kiq_producer_state_delete_snapshots_above(const char *dir, int64_t offset)
{
    DIR *d = opendir(dir);
    if (!d) return kiq_error_errno("open directory %s", dir);
    struct dirent *e;
    int64_t off;
    int rc = 0;
    while ((e = readdir(d))) {
        bool stale = kiq_log_segment_name_parse(e->d_name, KIQ_SNAPSHOT_SUFFIX, &off) && off > offset;
        /* a temp file is a write cut short */
        bool tmp = kiq_log_segment_name_parse(e->d_name, SNAPSHOT_TMP_SUFFIX, &off);
        if ((stale || tmp) && unlinkat(dirfd(d), e->d_name, 0) < 0 && errno != ENOENT)
            rc = kiq_error_errno("unlink %s/%s", dir, e->d_name);
    }
    closedir(d);
    return rc;
}
