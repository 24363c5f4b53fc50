/* Metadata snapshot files; see metadata_snapshot.h. */
#include "controller/metadata_snapshot.h"

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
#include "log/file_io.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"

/* Records per batch of a snapshot's body: batches stay small, as Kafka's
 * snapshot writer's (8 KiB), for a reader that checks one at a time. */
#define RECORDS_PER_BATCH 256
/* The largest snapshot file read whole. */
#define MAX_SNAPSHOT_BYTES (1LL << 30)

int kiq_snapshot_path(char *buf, size_t n, const char *dir, kiq_raft_epoch_end_t id, const char *suffix)
{
    int w = snprintf(buf, n, "%s/%020" PRId64 "-%010" PRId32 "%s", dir, id.end_offset, id.epoch, suffix);
    return w < 0 || (size_t)w >= n ? kiq_error_set("snapshot path too long in %s", dir) : 0;
}

/* "<20 digits>-<10 digits><suffix>" exactly. */
static bool parse_name(const char *name, const char *suffix, kiq_raft_epoch_end_t *id)
{
    size_t n = strlen(name), sl = strlen(suffix);
    if (n != 31 + sl || strcmp(name + 31, suffix) != 0 || name[20] != '-')
        return false;
    int64_t end = 0, epoch = 0;
    for (int i = 0; i < 31; i++) {
        if (i == 20)
            continue;
        if (name[i] < '0' || name[i] > '9')
            return false;
        if (i < 20)
            end = end * 10 + (name[i] - '0');
        else
            epoch = epoch * 10 + (name[i] - '0');
    }
    if (end < 0 || epoch > INT32_MAX)
        return false;
    *id = (kiq_raft_epoch_end_t){ (int32_t)epoch, end };
    return true;
}

static int by_end(const void *a, const void *b)
{
    const kiq_raft_epoch_end_t *x = a, *y = b;
    return x->end_offset < y->end_offset ? -1 : x->end_offset > y->end_offset;
}

int kiq_snapshot_list(const char *dir, kiq_raft_epoch_end_t *out, int max)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : kiq_error_errno("%s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        kiq_raft_epoch_end_t id;
        if (parse_name(e->d_name, KIQ_METADATA_SNAPSHOT_PART_SUFFIX, &id)) {
            char path[PATH_MAX];
            if (kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_PART_SUFFIX) == 0)
                unlink(path);
        } else if (parse_name(e->d_name, KIQ_METADATA_SNAPSHOT_SUFFIX, &id)) {
            if (n < max)
                out[n] = id;
            n++;
        }
    }
    closedir(d);
    qsort(out, (size_t)(n < max ? n : max), sizeof *out, by_end);
    return n;
}

/* One control batch of one record: key (version 0, type), value; then
 * the voter set's KRaftVersionRecord and VotersRecord where voters. */
static int control_batch(kiq_wr_t *out, int16_t type, const kiq_wr_t *value, const kiq_snapshot_voters_t *voters,
                         int64_t base, int32_t epoch, int64_t now)
{
    kiq_wr_t key;
    kiq_wr_init(&key);
    kiq_wr_i16(&key, 0);
    kiq_wr_i16(&key, type);
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now);
    bb.control = true;
    bb.base_offset = base;
    bb.partition_leader_epoch = epoch;
    int rc = key.err || value->err ? kiq_error_set("out of memory")
             : kiq_batch_builder_add(&bb, key.buf, (int32_t)key.len, value->buf, (int32_t)value->len, NULL, 0, now);
    if (rc == 0 && voters)
        rc = kiq_quorum_voters_add(&bb, &voters->set, voters->eps, true, now);
    if (rc == 0)
        rc = kiq_batch_builder_finish(&bb, out);
    kiq_batch_builder_free(&bb);
    kiq_wr_free(&key);
    return rc;
}

/* The whole file's bytes into out. */
static int build(kiq_wr_t *out, kiq_raft_epoch_end_t id, int64_t last_timestamp, const kiq_snapshot_voters_t *voters,
                 const kiq_metadata_record_t *records, size_t n, int64_t now)
{
    kiq_wr_t v;
    kiq_wr_init(&v);
    kiq_snapshot_header_record_t h;
    kiq_snapshot_header_record_init(&h);
    h.last_contained_log_timestamp = last_timestamp;
    kiq_snapshot_header_record_encode(&v, 0, &h);
    int rc = control_batch(out, KIQ_CONTROL_SNAPSHOT_HEADER, &v, voters, 0, id.epoch, now);
    kiq_wr_free(&v);
    int64_t at = voters ? 3 : 1;
    for (size_t i = 0; rc == 0 && i < n; i += RECORDS_PER_BATCH) {
        kiq_batch_builder_t bb;
        kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now);
        bb.base_offset = at;
        bb.partition_leader_epoch = id.epoch;
        for (size_t j = i; rc == 0 && j < n && j < i + RECORDS_PER_BATCH; j++) {
            kiq_wr_t value;
            kiq_wr_init(&value);
            rc = kiq_metadata_record_encode(&value, &records[j]);
            if (rc == 0 && (value.err || value.len > INT32_MAX))
                rc = kiq_error_set("metadata record of %zu bytes", value.len);
            if (rc == 0)
                rc = kiq_batch_builder_add(&bb, NULL, -1, value.buf, (int32_t)value.len, NULL, 0, now);
            kiq_wr_free(&value);
            at++;
        }
        if (rc == 0)
            rc = kiq_batch_builder_finish(&bb, out);
        kiq_batch_builder_free(&bb);
    }
    if (rc != 0)
        return rc;
    kiq_wr_init(&v);
    kiq_snapshot_footer_record_t f;
    kiq_snapshot_footer_record_init(&f);
    kiq_snapshot_footer_record_encode(&v, 0, &f);
    rc = control_batch(out, KIQ_CONTROL_SNAPSHOT_FOOTER, &v, NULL, at, id.epoch, now);
    kiq_wr_free(&v);
    return rc == 0 && out->err ? kiq_error_set("out of memory") : rc;
}

/* path's bytes written to path.part, synced, renamed over path, the
 * directory synced. */
static int write_atomically(const char *dir, const char *path, const char *part, const void *p, size_t len)
{
    int fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return kiq_error_errno("%s", part);
    int rc = kiq_pwrite_full(fd, p, len, 0);
    if (rc == 0 && fsync(fd) != 0)
        rc = kiq_error_errno("fsync %s", part);
    close(fd);
    if (rc == 0 && rename(part, path) != 0)
        rc = kiq_error_errno("rename %s", part);
    if (rc != 0)
        unlink(part);
    return rc == 0 ? kiq_fsync_dir(dir) : rc;
}

int kiq_snapshot_write(const char *dir, kiq_raft_epoch_end_t id, int64_t last_timestamp,
                       const kiq_snapshot_voters_t *voters, const kiq_metadata_record_t *records, size_t n)
{
    char path[PATH_MAX], part[PATH_MAX];
    if (kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX) != 0 ||
        kiq_snapshot_path(part, sizeof part, dir, id, KIQ_METADATA_SNAPSHOT_PART_SUFFIX) != 0)
        return -1;
    kiq_wr_t w;
    kiq_wr_init(&w);
    int rc = build(&w, id, last_timestamp, voters, records, n, last_timestamp);
    if (rc == 0)
        rc = write_atomically(dir, path, part, w.buf, w.len);
    kiq_wr_free(&w);
    return rc;
}

typedef struct parse_ctx {
    kiq_metadata_replay_fn cb;
    void *ctx;
    int64_t offset; /* what the callback is told */
} parse_ctx_t;

static int at_snapshot(void *ctx, int64_t offset, const kiq_metadata_record_t *r)
{
    parse_ctx_t *c = ctx;
    return c->cb ? c->cb(c->ctx, c->offset, r) : 0;
}

int kiq_snapshot_parse(const uint8_t *p, size_t len, kiq_raft_epoch_end_t id, kiq_metadata_replay_fn cb, void *ctx)
{
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int64_t next = 0;
    bool footer = false;
    parse_ctx_t pc = { cb, ctx, id.end_offset - 1 };
    int rc;
    while ((rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
        if (footer)
            return kiq_error_set("bytes after its footer at offset %" PRId64, next);
        if (kiq_batch_check(batch, blen, &h) != 0)
            return -1;
        if (h.base_offset != next)
            return kiq_error_set("a batch at offset %" PRId64 " where %" PRId64 " was due", h.base_offset, next);
        int type = kiq_batch_is_control(&h) ? kiq_batch_control_type(batch, blen) : -1;
        if (next == 0 && type != KIQ_CONTROL_SNAPSHOT_HEADER)
            return kiq_error_set("its first batch is not a SnapshotHeader control record");
        if (type == KIQ_CONTROL_SNAPSHOT_FOOTER) {
            footer = true;
        } else if (type >= 0 && next != 0 && type != KIQ_CONTROL_KRAFT_VERSION && type != KIQ_CONTROL_KRAFT_VOTERS) {
            return kiq_error_set("a control batch of type %d at offset %" PRId64, type, next);
        } else if (type < 0) {
            rc = kiq_quorum_log_replay_batch(batch, blen, 0, INT64_MAX, at_snapshot, &pc);
            if (rc != 0)
                return rc;
        }
        next = kiq_batch_last_offset(&h) + 1;
    }
    if (rc < 0)
        return -1;
    if (next == 0)
        return kiq_error_set("empty");
    if (!footer)
        return kiq_error_set("no SnapshotFooter: cut short at offset %" PRId64, next);
    return 0;
}

/* A snapshot's whole file into *out (malloc'd). */
static int slurp(const char *path, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kiq_error_errno("%s", path);
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : kiq_error_errno("%s", path);
    if (rc == 0 && st.st_size > MAX_SNAPSHOT_BYTES)
        rc = kiq_error_set("%s: %lld bytes, more than a snapshot may hold", path, (long long)st.st_size);
    uint8_t *buf = rc == 0 ? malloc((size_t)st.st_size + 1) : NULL;
    if (rc == 0 && !buf)
        rc = kiq_error_set("out of memory");
    if (rc == 0 && kiq_pread_full(fd, buf, (size_t)st.st_size, 0) != st.st_size)
        rc = kiq_error_set("%s: cannot read %lld bytes", path, (long long)st.st_size);
    close(fd);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = (size_t)st.st_size;
    return 0;
}

/* kiq_snapshot_parse of the file at path, the reason naming it. */
static int parse_file(const char *path, kiq_raft_epoch_end_t id, kiq_metadata_replay_fn cb, void *ctx)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (slurp(path, &buf, &len) != 0)
        return -1;
    int rc = kiq_snapshot_parse(buf, len, id, cb, ctx);
    free(buf);
    if (rc != 0) {
        char reason[512]; /* the slot itself cannot be an argument of kiq_error_set */
        snprintf(reason, sizeof reason, "%s", kiq_error_get());
        kiq_error_set("metadata snapshot %s is not a whole snapshot: %s", path, reason);
    }
    return rc;
}

int kiq_snapshot_load(const char *dir, kiq_raft_epoch_end_t id, kiq_metadata_replay_fn cb, void *ctx)
{
    char path[PATH_MAX];
    if (kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX) != 0)
        return -1;
    return parse_file(path, id, cb, ctx);
}

int kiq_snapshot_voters(const char *dir, kiq_raft_epoch_end_t id, kiq_snapshot_voters_t *out)
{
    char path[PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    if (kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX) != 0 ||
        slurp(path, &buf, &len) != 0)
        return -1;
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, buf, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int found = 0;
    /* the control batches before the metadata records */
    while (found == 0 && kiq_batch_iter_next(&it, &batch, &blen, &h) == 1 && kiq_batch_is_control(&h))
        found = kiq_quorum_voters_decode(batch, blen, &out->set, out->eps);
    free(buf);
    if (found < 0) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", kiq_error_get());
        kiq_error_set("metadata snapshot %s: %s", path, reason);
    }
    return found;
}

int kiq_snapshot_remove(const char *dir, kiq_raft_epoch_end_t id)
{
    char path[PATH_MAX];
    if (kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX) != 0)
        return -1;
    return unlink(path) == 0 || errno == ENOENT ? 0 : kiq_error_errno("%s", path);
}

int kiq_snapshot_read_chunk(const char *dir, kiq_raft_epoch_end_t id, int64_t position, int32_t max_bytes,
                            kiq_arena_t *arena, const uint8_t **data, int32_t *len, int64_t *size)
{
    char path[PATH_MAX];
    *data = NULL;
    *len = 0;
    *size = 0;
    if (id.epoch < 0 || id.end_offset < 0 || kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX) != 0) {
        kiq_error_set("no snapshot %" PRId64 "-%" PRId32, id.end_offset, id.epoch);
        return KIQ_ERR_SNAPSHOT_NOT_FOUND;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        kiq_error_errno("snapshot %" PRId64 "-%" PRId32, id.end_offset, id.epoch);
        return errno == ENOENT ? KIQ_ERR_SNAPSHOT_NOT_FOUND : -1;
    }
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : kiq_error_errno("%s", path);
    if (rc == 0 && (position < 0 || position >= st.st_size)) {
        rc = KIQ_ERR_POSITION_OUT_OF_RANGE;
        kiq_error_set("position %" PRId64 " of a snapshot of %lld bytes", position, (long long)st.st_size);
    }
    if (rc == 0) {
        int64_t n = st.st_size - position;
        if (max_bytes > 0 && n > max_bytes)
            n = max_bytes;
        uint8_t *buf = kiq_arena_alloc(arena, (size_t)n);
        if (kiq_pread_full(fd, buf, (size_t)n, (uint64_t)position) != n) {
            rc = kiq_error_set("%s: cannot read %" PRId64 " bytes at %" PRId64, path, n, position);
        } else {
            *data = buf;
            *len = (int32_t)n;
            *size = st.st_size;
        }
    }
    close(fd);
    return rc;
}

int kiq_snapshot_part_write(const char *dir, kiq_raft_epoch_end_t id, int64_t position, const void *data, size_t len)
{
    char part[PATH_MAX];
    if (kiq_snapshot_path(part, sizeof part, dir, id, KIQ_METADATA_SNAPSHOT_PART_SUFFIX) != 0)
        return -1;
    int fd = open(part, O_WRONLY | O_CREAT | (position == 0 ? O_TRUNC : 0) | O_CLOEXEC, 0644);
    if (fd < 0)
        return kiq_error_errno("%s", part);
    int rc = kiq_pwrite_full(fd, data, len, (uint64_t)position);
    close(fd);
    return rc;
}

int kiq_snapshot_part_finish(const char *dir, kiq_raft_epoch_end_t id, int64_t size)
{
    char path[PATH_MAX], part[PATH_MAX];
    if (kiq_snapshot_path(path, sizeof path, dir, id, KIQ_METADATA_SNAPSHOT_SUFFIX) != 0 ||
        kiq_snapshot_path(part, sizeof part, dir, id, KIQ_METADATA_SNAPSHOT_PART_SUFFIX) != 0)
        return -1;
    struct stat st;
    int rc = stat(part, &st) == 0 ? 0 : kiq_error_errno("%s", part);
    if (rc == 0 && st.st_size != size)
        rc = kiq_error_set("fetched snapshot %s is %lld bytes, the leader said %" PRId64, part, (long long)st.st_size,
                           size);
    if (rc == 0)
        rc = parse_file(part, id, NULL, NULL);
    int fd = rc == 0 ? open(part, O_RDONLY | O_CLOEXEC) : -1;
    if (rc == 0 && (fd < 0 || fsync(fd) != 0))
        rc = kiq_error_errno("fsync %s", part);
    if (fd >= 0)
        close(fd);
    if (rc == 0 && rename(part, path) != 0)
        rc = kiq_error_errno("rename %s", part);
    if (rc != 0) {
        unlink(part);
        return -1;
    }
    return kiq_fsync_dir(dir);
}
