/* The quorum's log and quorum-state file; see quorum_log.h. */
#include "controller/quorum_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "controller/metadata_snapshot.h"
#include "core/say.h"
#include "log/leader_epoch_cache.h"
#include "log/partition_log.h"
#include "log/producer_state.h"
#include "record/batch.h"
#include "record/compression.h"

#define MAX_EPOCHS 1024
/* Snapshots looked at when the log opens, newest first. */
#define MAX_SNAPSHOTS 64

/* Owned by the quorum's thread. */
struct kiq_quorum_log {
    kiq_partition_log_t *log; /* NULL only after a reset that could not reopen it */
    kiq_log_config_t cfg;
    char dir[PATH_MAX];
    kiq_raft_epoch_end_t snapshot; /* epoch -1: none */
    char state_path[PATH_MAX];
    int32_t voters[KIQ_RAFT_MAX_VOTERS];
    int n_voters;
    kiq_raft_quorum_state_t state;
    kiq_raft_epoch_end_t starts[MAX_EPOCHS];
    kiq_wr_t read_buf;
    kiq_raft_entry_t *entries;
    int cap_entries;
};

static int read_state(kiq_quorum_log_t *l)
{
    l->state = (kiq_raft_quorum_state_t){ 0, -1, -1 };
    if (access(l->state_path, F_OK) != 0)
        return 0;
    json_error_t jerr;
    json_t *j = json_load_file(l->state_path, 0, &jerr);
    if (!j)
        return kiq_error_set("%s: %s (line %d)", l->state_path, jerr.text, jerr.line);
    json_t *epoch = json_object_get(j, "leaderEpoch"), *leader = json_object_get(j, "leaderId"),
           *voted = json_object_get(j, "votedId");
    int rc = 0;
    if (!json_is_integer(epoch) || !json_is_integer(leader) || !json_is_integer(voted) ||
        json_integer_value(epoch) < 0 || json_integer_value(epoch) > INT32_MAX)
        rc = kiq_error_set("%s: leaderEpoch, leaderId and votedId expected", l->state_path);
    else
        l->state = (kiq_raft_quorum_state_t){ (int32_t)json_integer_value(epoch), (int32_t)json_integer_value(voted),
                                              (int32_t)json_integer_value(leader) };
    json_decref(j);
    return rc;
}

/* The log's files (segments, their indexes, producer snapshots, the
 * epoch checkpoint) removed, an empty segment made at start, the log
 * reopened: it holds nothing and ends at start. */
static int reset_log(kiq_quorum_log_t *l, int64_t start)
{
    kiq_partition_log_free(l->log);
    l->log = NULL;
    static const char *const suffixes[] = { KIQ_LOG_SUFFIX, KIQ_INDEX_SUFFIX, KIQ_TIMEINDEX_SUFFIX,
                                            KIQ_TXNINDEX_SUFFIX, KIQ_SNAPSHOT_SUFFIX };
    DIR *d = opendir(l->dir);
    if (!d)
        return kiq_error_errno("%s", l->dir);
    struct dirent *e;
    char path[PATH_MAX + 256];
    while ((e = readdir(d))) {
        int64_t base;
        bool ours = strcmp(e->d_name, KIQ_LEADER_EPOCH_CHECKPOINT) == 0;
        for (size_t i = 0; !ours && i < sizeof suffixes / sizeof *suffixes; i++)
            ours = kiq_log_segment_name_parse(e->d_name, suffixes[i], &base);
        snprintf(path, sizeof path, "%s/%s", l->dir, e->d_name);
        if (ours && unlink(path) != 0 && errno != ENOENT) {
            closedir(d);
            return kiq_error_errno("%s", path);
        }
    }
    closedir(d);
    int fd = kiq_log_segment_path(path, sizeof path, l->dir, start, KIQ_LOG_SUFFIX) == 0
                 ? open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (fd < 0)
        return kiq_error_errno("%s", path);
    close(fd);
    l->log = kiq_partition_log_open_at(l->dir, &l->cfg, 0);
    if (!l->log)
        return -1;
    KIQ_INFO("%s: the log now starts empty at offset %" PRId64, l->dir, start);
    return 0;
}

/* At the open: the latest snapshot that reads whole, and the log made to
 * start at its end. */
static int find_snapshot(kiq_quorum_log_t *l)
{
    kiq_raft_epoch_end_t ids[MAX_SNAPSHOTS];
    int n = kiq_snapshot_list(l->dir, ids, MAX_SNAPSHOTS);
    if (n < 0)
        return -1;
    int64_t start = kiq_partition_log_start_offset(l->log), end = kiq_partition_log_end_offset(l->log);
    for (int i = (n < MAX_SNAPSHOTS ? n : MAX_SNAPSHOTS) - 1; i >= 0; i--) {
        if (kiq_snapshot_load(l->dir, ids[i], NULL, NULL) != 0) {
            KIQ_ERROR("%s; the snapshot before it is tried", kiq_error_get());
            continue;
        }
        if (ids[i].end_offset < start)
            return kiq_error_set("%s: the latest whole metadata snapshot ends at offset %" PRId64 " but the log starts "
                                 "after it, at %" PRId64 ": the metadata cannot be rebuilt here",
                                 l->dir, ids[i].end_offset, start);
        l->snapshot = ids[i];
        /* a fetched snapshot whose log reset was cut short */
        if (ids[i].end_offset > end)
            return reset_log(l, ids[i].end_offset);
        return kiq_partition_log_advance_start(l->log, ids[i].end_offset) == 0 ? 0 : -1;
    }
    if (start > 0)
        return kiq_error_set("%s: the log starts at offset %" PRId64 " and no whole metadata snapshot holds what was "
                             "before it: the metadata cannot be rebuilt here", l->dir, start);
    return 0;
}

kiq_quorum_log_t *kiq_quorum_log_open(const char *dir, const int32_t *voters, int n_voters)
{
    char path[PATH_MAX];
    if (n_voters < 0 || n_voters > KIQ_RAFT_MAX_VOTERS) {
        kiq_error_set("%d controller quorum voters (at most %d)", n_voters, KIQ_RAFT_MAX_VOTERS);
        return NULL;
    }
    if (snprintf(path, sizeof path, "%s/%s", dir, KIQ_METADATA_PARTITION_DIR) >= (int)sizeof path) {
        kiq_error_set("metadata log directory name too long: %s", dir);
        return NULL;
    }
    kiq_quorum_log_t *l = calloc(1, sizeof *l);
    if (!l)
        abort();
    if (snprintf(l->state_path, sizeof l->state_path, "%s/quorum-state", path) >= (int)sizeof l->state_path) {
        kiq_error_set("metadata log directory name too long: %s", dir);
        free(l);
        return NULL;
    }
    memcpy(l->voters, voters, (size_t)n_voters * sizeof *voters);
    l->n_voters = n_voters;
    kiq_wr_init(&l->read_buf);
    snprintf(l->dir, sizeof l->dir, "%s", path);
    l->snapshot = (kiq_raft_epoch_end_t){ -1, -1 };
    kiq_log_config_default(&l->cfg);
    l->cfg.clean_shutdown = false;
    l->log = kiq_partition_log_open_at(path, &l->cfg, 0);
    if (!l->log || read_state(l) != 0) {
        kiq_quorum_log_free(l);
        return NULL;
    }
    kiq_segment_recovery_t rec;
    kiq_partition_log_recovery(l->log, &rec);
    if (rec.bytes_truncated)
        KIQ_WARN("%s: cut %llu bytes of torn or corrupt tail; the log now ends at offset %lld", path,
                 (unsigned long long)rec.bytes_truncated, (long long)kiq_partition_log_end_offset(l->log));
    if (find_snapshot(l) != 0) {
        kiq_quorum_log_free(l);
        return NULL;
    }
    return l;
}

void kiq_quorum_log_free(kiq_quorum_log_t *l)
{
    if (!l)
        return;
    kiq_partition_log_free(l->log);
    kiq_wr_free(&l->read_buf);
    free(l->entries);
    free(l);
}

void kiq_quorum_log_fill(kiq_quorum_log_t *l, kiq_raft_config_t *cfg)
{

    kiq_epoch_entry_t e[MAX_EPOCHS];
    int n = kiq_partition_log_epochs(l->log, e, MAX_EPOCHS);
    if (n > MAX_EPOCHS)
        n = MAX_EPOCHS;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (e[i].epoch >= 0)
            l->starts[k++] = (kiq_raft_epoch_end_t){ e[i].epoch, e[i].start_offset };
    cfg->snapshot = l->snapshot;
    cfg->epoch_starts = l->starts;
    cfg->n_epoch_starts = k;
    cfg->log_end = kiq_partition_log_end_offset(l->log);
    cfg->state = l->state;
}

/* What every use of a log that a failed reset left closed gets. */
static int closed(const kiq_quorum_log_t *l)
{
    return kiq_error_set("%s: the metadata log is closed (a fetched snapshot could not replace it)", l->dir);
}

int64_t kiq_quorum_log_end(kiq_quorum_log_t *l)
{
    return l->log ? kiq_partition_log_end_offset(l->log) : l->snapshot.end_offset;
}

int kiq_quorum_log_append(kiq_quorum_log_t *l, int64_t offset, const kiq_raft_entry_t *e, int n)
{
    if (!l->log)
        return closed(l);
    if (offset != kiq_partition_log_end_offset(l->log))
        return kiq_error_set("metadata log: an append at %lld, the log ends at %lld", (long long)offset,
                             (long long)kiq_partition_log_end_offset(l->log));
    kiq_wr_t w;
    kiq_wr_init(&w);
    int64_t at = offset;
    for (int i = 0; i < n; i++) {
        kiq_batch_header_t h;
        if (e[i].len < KIQ_BATCH_HEADER_SIZE || kiq_batch_header_parse(e[i].data, e[i].len, &h) != 0 ||
            kiq_batch_last_offset(&h) - h.base_offset + 1 != e[i].count) {
            kiq_wr_free(&w);
            return kiq_error_set("metadata log: entry %d at %lld is not one batch of %d records", i, (long long)at,
                                 e[i].count);
        }
        size_t pos = w.len;
        kiq_wr_raw(&w, e[i].data, e[i].len);
        if (w.err)
            break;
        kiq_batch_set_base_offset(w.buf + pos, at);
        kiq_batch_set_leader_epoch(w.buf + pos, e[i].epoch);
        at += e[i].count;
    }
    kiq_log_append_result_t res;
    int rc = w.err ? kiq_error_set("out of memory") : kiq_partition_log_append_follower(l->log, w.buf, w.len, &res);
    kiq_wr_free(&w);
    /* durable before a vote or an acknowledgement counts on it */
    return rc == 0 ? kiq_partition_log_flush(l->log) : rc;
}

int kiq_quorum_log_truncate(kiq_quorum_log_t *l, int64_t end)
{
    if (!l->log)
        return closed(l);
    return kiq_partition_log_truncate_to(l->log, end);
}

int kiq_quorum_log_read(kiq_quorum_log_t *l, int64_t offset, int32_t max_bytes, const kiq_raft_entry_t **e, int *n)
{
    *n = 0;
    *e = l->entries;
    if (!l->log)
        return closed(l);
    int64_t end = kiq_partition_log_end_offset(l->log);
    if (offset >= end)
        return 0;
    kiq_wr_free(&l->read_buf);
    kiq_wr_init(&l->read_buf);
    int got = kiq_partition_log_read(l->log, offset, max_bytes, end, &l->read_buf);
    if (got < 0 || l->read_buf.err)
        return kiq_error_set("metadata log: cannot read at %lld", (long long)offset);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, l->read_buf.buf, l->read_buf.len, true);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
        if (kiq_batch_last_offset(&h) < offset)
            continue; /* a read starts at the batch holding offset; raft asks at boundaries */
        if (*n == l->cap_entries) {
            l->cap_entries = l->cap_entries ? l->cap_entries * 2 : 32;
            l->entries = realloc(l->entries, (size_t)l->cap_entries * sizeof *l->entries);
            if (!l->entries)
                abort();
            *e = l->entries;
        }
        l->entries[(*n)++] = (kiq_raft_entry_t){ h.partition_leader_epoch,
                                                 (int32_t)(kiq_batch_last_offset(&h) - h.base_offset + 1), batch, blen, NULL };
    }
    return 0;
}

int kiq_quorum_log_persist(kiq_quorum_log_t *l, const kiq_raft_quorum_state_t *s)
{
    json_t *voters = json_array();
    for (int i = 0; i < l->n_voters; i++)
        json_array_append_new(voters, json_pack("{s:i}", "voterId", l->voters[i]));
    json_t *j = json_pack("{s:i,s:i,s:i,s:i,s:o,s:i}", "leaderId", s->leader_id, "leaderEpoch", s->epoch, "votedId",
                          s->voted_for, "appliedOffset", 0, "currentVoters", voters, "data_version", 0);
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", l->state_path);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text)
        return kiq_error_set("out of memory");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(text);
    int rc = -1;
    if (fd < 0)
        kiq_error_errno("%s", tmp);
    else if (write(fd, text, len) != (ssize_t)len || fsync(fd) != 0)
        kiq_error_errno("%s", tmp);
    else if (rename(tmp, l->state_path) != 0)
        kiq_error_errno("rename %s", tmp);
    else
        rc = 0;
    if (fd >= 0)
        close(fd);
    free(text);
    if (rc == 0)
        l->state = *s;
    return rc;
}

typedef struct replay_ctx {
    kiq_metadata_replay_fn cb;
    void *ctx;
    int64_t from, to;
    int stopped;
} replay_ctx_t;

static int replay_record(const kiq_record_t *rec, void *arg)
{
    replay_ctx_t *c = arg;
    if (rec->offset < c->from || rec->offset >= c->to)
        return 0; /* a batch may straddle either end */
    if (!rec->value.p)
        return kiq_error_set(KIQ_METADATA_TOPIC " record at offset %lld has no value", (long long)rec->offset);
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    kiq_metadata_record_t r;
    int rc = kiq_metadata_record_decode(rec->value.p, (size_t)rec->value.len, &arena, &r);
    if (rc == KIQ_METADATA_RECORD_UNKNOWN) {
        KIQ_WARN(KIQ_METADATA_TOPIC " record at offset %lld skipped: %s", (long long)rec->offset, kiq_error_get());
        rc = 0;
    } else if (rc != 0) {
        char reason[512]; /* the slot itself cannot be an argument of kiq_error_set */
        snprintf(reason, sizeof reason, "%s", kiq_error_get());
        kiq_error_set(KIQ_METADATA_TOPIC " record at offset %lld: %s", (long long)rec->offset, reason);
    } else {
        rc = c->stopped = c->cb(c->ctx, rec->offset, &r);
    }
    kiq_arena_reset(&arena);
    return rc;
}

/* fn for each whole batch of [from, to), in offset order; its nonzero
 * return stops the walk and is returned. A batch that does not parse is an
 * error when strict, else the end of that read. */
typedef int (*batch_fn)(void *ctx, const kiq_batch_header_t *h, const uint8_t *batch, size_t len);

static int each_batch(kiq_quorum_log_t *l, int64_t from, int64_t to, bool strict, batch_fn fn, void *ctx)
{
    for (int64_t offset = from; offset < to;) {
        kiq_wr_t w;
        kiq_wr_init(&w);
        int n = kiq_partition_log_read(l->log, offset, 1 << 20, to, &w);
        if (n <= 0 || w.err) {
            kiq_wr_free(&w);
            return kiq_error_set("cannot read " KIQ_METADATA_TOPIC " at offset %lld", (long long)offset);
        }
        kiq_batch_iter_t it;
        kiq_batch_iter_init(&it, w.buf, w.len, true);
        const uint8_t *batch;
        size_t blen;
        kiq_batch_header_t h;
        int64_t next = offset;
        int rc = 0, more;
        while (rc == 0 && (more = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
            if (kiq_batch_last_offset(&h) < offset)
                continue;
            next = kiq_batch_last_offset(&h) + 1;
            rc = fn(ctx, &h, batch, blen);
        }
        kiq_wr_free(&w);
        if (rc != 0)
            return rc;
        if (strict && more < 0)
            return -1;
        if (next <= offset)
            return kiq_error_set(KIQ_METADATA_TOPIC " read at offset %lld does not advance", (long long)offset);
        offset = next;
    }
    return 0;
}

/* A data batch's records to the replay's callback: what it stopped with,
 * or -1 when the batch does not decode. */
static int replay_batch(void *ctx, const kiq_batch_header_t *h, const uint8_t *batch, size_t len)
{
    replay_ctx_t *c = ctx;
    if (kiq_batch_is_control(h))
        return 0;
    int rc = kiq_batch_foreach_record(batch, len, KIQ_BATCH_MAX_DECOMPRESSED, replay_record, c);
    return c->stopped ? c->stopped : rc != 0 ? -1 : 0;
}

int kiq_quorum_log_replay(kiq_quorum_log_t *l, int64_t from, int64_t to, kiq_metadata_replay_fn cb, void *ctx)
{
    replay_ctx_t c = { .cb = cb, .ctx = ctx, .from = from, .to = to };
    if (!l->log)
        return closed(l);
    return each_batch(l, from, to, true, replay_batch, &c);
}

typedef struct control_scan {
    int (*cb)(void *ctx, int64_t offset, const uint8_t *batch, size_t len);
    void *ctx;
} control_scan_t;

static int control_batch(void *ctx, const kiq_batch_header_t *h, const uint8_t *batch, size_t len)
{
    control_scan_t *s = ctx;
    return kiq_batch_is_control(h) ? s->cb(s->ctx, h->base_offset, batch, len) : 0;
}

int kiq_quorum_log_scan_control(kiq_quorum_log_t *l, int (*cb)(void *ctx, int64_t offset, const uint8_t *batch,
                                                               size_t len),
                                void *ctx)
{
    control_scan_t s = { cb, ctx };
    return each_batch(l, kiq_partition_log_start_offset(l->log), kiq_partition_log_end_offset(l->log), false,
                      control_batch, &s);
}

int kiq_quorum_log_replay_batch(const uint8_t *batch, size_t len, int64_t from, int64_t to, kiq_metadata_replay_fn cb,
                                void *ctx)
{
    replay_ctx_t c = { .cb = cb, .ctx = ctx, .from = from, .to = to };
    int rc = kiq_batch_foreach_record(batch, len, KIQ_BATCH_MAX_DECOMPRESSED, replay_record, &c);
    return c.stopped ? c.stopped : rc;
}

int kiq_quorum_log_batch(const kiq_metadata_record_t *records, size_t n, kiq_wr_t *out)
{
    if (n == 0 || n > INT32_MAX)
        return kiq_error_set("%zu metadata records in one batch", n);
    int64_t now = kiq_clock_wall_ms();
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        kiq_wr_t value;
        kiq_wr_init(&value);
        rc = kiq_metadata_record_encode(&value, &records[i]);
        if (rc == 0 && value.len > INT32_MAX)
            rc = kiq_error_set("metadata record of %zu bytes", value.len);
        if (rc == 0)
            rc = kiq_batch_builder_add(&bb, NULL, -1, value.buf, (int32_t)value.len, NULL, 0, now);
        kiq_wr_free(&value);
    }
    if (rc == 0)
        rc = kiq_batch_builder_finish(&bb, out);
    if (rc == 0 && out->err)
        rc = kiq_error_set("out of memory");
    kiq_batch_builder_free(&bb);
    return rc;
}

int kiq_quorum_log_set_segment_bytes(kiq_quorum_log_t *l, int32_t bytes)
{
    kiq_log_config_t cfg = l->cfg;
    cfg.segment_bytes = bytes;
    if (kiq_log_config_check(&cfg) != 0)
        return -1;
    l->cfg = cfg;
    if (l->log)
        kiq_partition_log_set_config(l->log, &cfg);
    return 0;
}

const char *kiq_quorum_log_dir(const kiq_quorum_log_t *l)
{
    return l->dir;
}

kiq_raft_epoch_end_t kiq_quorum_log_snapshot(const kiq_quorum_log_t *l)
{
    return l->snapshot;
}

int32_t kiq_quorum_log_epoch_before(kiq_quorum_log_t *l, int64_t end)
{
    kiq_epoch_entry_t e[MAX_EPOCHS];
    int n = l->log ? kiq_partition_log_epochs(l->log, e, MAX_EPOCHS) : 0;
    for (int i = (n < MAX_EPOCHS ? n : MAX_EPOCHS) - 1; i >= 0; i--)
        if (e[i].epoch >= 0 && e[i].start_offset < end)
            return e[i].epoch;
    return l->snapshot.epoch >= 0 ? l->snapshot.epoch : 0;
}

uint64_t kiq_quorum_log_size(kiq_quorum_log_t *l)
{
    return l->log ? kiq_partition_log_size(l->log) : 0;
}

/* Every snapshot before `keep` goes. */
static void remove_before(kiq_quorum_log_t *l, int64_t keep)
{
    kiq_raft_epoch_end_t ids[MAX_SNAPSHOTS];
    int n = kiq_snapshot_list(l->dir, ids, MAX_SNAPSHOTS);
    for (int i = 0; i < n && i < MAX_SNAPSHOTS; i++)
        if (ids[i].end_offset < keep && kiq_snapshot_remove(l->dir, ids[i]) != 0)
            KIQ_WARN("%s", kiq_error_get());
}

int kiq_quorum_log_snapshot_taken(kiq_quorum_log_t *l, kiq_raft_epoch_end_t id)
{
    if (!l->log)
        return closed(l);
    int64_t previous = l->snapshot.epoch >= 0 ? l->snapshot.end_offset : 0;
    if (kiq_partition_log_advance_start(l->log, id.end_offset) != 0)
        return -1;
    l->snapshot = id;
    /* the previous one stays: a follower may be fetching it */
    remove_before(l, previous);
    return 0;
}

int kiq_quorum_log_reset_to(kiq_quorum_log_t *l, kiq_raft_epoch_end_t id)
{
    l->snapshot = id;
    if (reset_log(l, id.end_offset) != 0)
        return -1;
    remove_before(l, id.end_offset);
    return 0;
}
