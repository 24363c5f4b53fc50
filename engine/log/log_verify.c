/* Offline checks of log files; see log_verify.h. */
#include "log/log_verify.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "log/data_loss.h"
#include "log/log_names.h"
#include "log/offset_index.h"
#include "log/topics_internal.h"
#include "proto/reader.h"
#include "record/batch.h"

/* A batch larger than this is taken for garbage in its length field. */
#define MAX_BATCH ((size_t)1 << 30)

static int read_at(int fd, void *buf, size_t n, off_t at)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + done, n - done, at + (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

int kiq_log_verify_fd(int fd, uint64_t size_bytes, const char *name, int64_t after_offset, int tail_ok,
                      kiq_log_verify_result_t *res)
{
    *res = (kiq_log_verify_result_t){.last_offset = after_offset};
    char *why = res->why;
    const size_t n = sizeof res->why;
    const off_t end = (off_t)size_bytes;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (off_t pos = 0; pos < end;) {
        uint8_t head[KIQ_BATCH_LOG_OVERHEAD];
        size_t left = (size_t)(end - pos);
        if (left < sizeof head) {
            snprintf(why, n, "%zu bytes at position %lld are not a whole batch header", left, (long long)pos);
            rc = tail_ok ? 2 : 1;
            break;
        }
        if (read_at(fd, head, sizeof head, pos) < 0) {
            rc = kiq_error_errno("%s: read at %lld", name, (long long)pos);
            break;
        }
        int32_t blen = (int32_t)kiq_be32(head + 8);
        size_t size = (size_t)blen + KIQ_BATCH_LOG_OVERHEAD;
        if (blen < KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_LOG_OVERHEAD || size > MAX_BATCH) {
            snprintf(why, n, "batch at position %lld has length %d", (long long)pos, blen);
            rc = 1;
            break;
        }
        if (size > left) {
            snprintf(why, n, "batch at position %lld needs %zu bytes, %zu are left", (long long)pos, size, left);
            rc = tail_ok ? 2 : 1;
            break;
        }
        if (size > cap) {
            uint8_t *grown = realloc(buf, size);
            if (!grown) {
                rc = kiq_error_set("out of memory");
                break;
            }
            buf = grown;
            cap = size;
        }
        if (read_at(fd, buf, size, pos) < 0) {
            rc = kiq_error_errno("%s: read at %lld", name, (long long)pos);
            break;
        }
        kiq_batch_header_t h;
        if (kiq_batch_check(buf, size, &h) != 0) {
            snprintf(why, n, "batch at position %lld (offset %" PRId64 "): %s", (long long)pos,
                     (int64_t)kiq_be64(buf), kiq_error_get());
            rc = 1;
            break;
        }
        if (h.base_offset <= res->last_offset) {
            snprintf(why, n, "batch at position %lld starts at offset %" PRId64 ", not after %" PRId64,
                     (long long)pos, h.base_offset, res->last_offset);
            rc = 1;
            break;
        }
        res->last_offset = kiq_batch_last_offset(&h);
        res->batches++;
        pos += (off_t)size;
        res->sound_bytes = (uint64_t)pos;
    }
    free(buf);
    return rc == 2 ? 0 : rc;
}

int kiq_log_verify_segment(const char *path, int64_t after_offset, int tail_ok, kiq_log_verify_result_t *res)
{
    *res = (kiq_log_verify_result_t){.last_offset = after_offset};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0) close(fd);
        return kiq_error_errno("%s", path);
    }
    int rc = kiq_log_verify_fd(fd, (uint64_t)st.st_size, path, after_offset, tail_ok, res);
    close(fd);
    return rc;
}

/* The recovery point log directory `logdir` checkpointed for topic-partition
 * `name`, or -1. */
static int64_t checkpointed(const char *logdir, const char *name)
{
    char path[PATH_MAX], topic[256], want_topic[256];
    int32_t want_part;
    snprintf(path, sizeof path, "%s/" RECOVERY_POINT_CHECKPOINT, logdir);
    FILE *f = fopen(path, "r");
    if (!f || kiq_log_dir_parse(name, want_topic, sizeof want_topic, &want_part) != 0) {
        if (f) fclose(f);
        return -1;
    }
    int version, count;
    int64_t found = -1;
    if (fscanf(f, "%d %d", &version, &count) == 2)
        for (int i = 0; i < count; i++) {
            int32_t part;
            long long off;
            if (fscanf(f, "%255s %" SCNd32 " %lld", topic, &part, &off) != 3) break;
            if (part == want_part && strcmp(topic, want_topic) == 0) found = off;
        }
    fclose(f);
    return found;
}

/* The base offset of a .log file missing (its offset index left), or -1:
 * the broker itself only removes segments at either end of a log, the
 * .log first, so one is missing when its index lies between two others,
 * or past the last naming offsets (as the broker's start finds, see
 * partition_log.h). */
static int64_t missing_segment(const char *dir, const int64_t *bases, size_t n)
{
    int64_t *indexes, found = -1;
    size_t k;
    if (kiq_log_segment_bases(dir, KIQ_INDEX_SUFFIX, &indexes, &k) != 0) return -1;
    for (size_t i = 0; i < k && found < 0; i++) {
        if (bsearch(&indexes[i], bases, n, sizeof *bases, kiq_log_cmp_offsets)) continue;
        char path[PATH_MAX];
        kiq_log_segment_path(path, sizeof path, dir, indexes[i], KIQ_INDEX_SUFFIX);
        if ((n >= 2 && indexes[i] > bases[0] && indexes[i] < bases[n - 1]) ||
            ((n == 0 || indexes[i] > bases[n - 1]) && kiq_offset_index_file_end(path, indexes[i]) > indexes[i]))
            found = indexes[i];
    }
    free(indexes);
    return found;
}

static void verify_partition(const char *logdir, const char *name, FILE *out, kiq_log_verify_report_t *rep)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", logdir, name);
    int64_t *bases;
    size_t n;
    rep->partitions++;
    if (kiq_log_segment_bases(dir, KIQ_LOG_SUFFIX, &bases, &n) != 0) {
        fprintf(out, "DAMAGED %s: %s\n", dir, kiq_error_get());
        rep->damaged++;
        return;
    }
    int64_t last = -1, batches = 0;
    bool damaged = false;
    for (size_t i = 0; i < n && !damaged; i++) {
        char path[PATH_MAX];
        kiq_log_segment_path(path, sizeof path, dir, bases[i], KIQ_LOG_SUFFIX);
        if (last >= bases[i]) {
            fprintf(out, "DAMAGED %s: starts at offset %" PRId64 " but the segment before ends at %" PRId64 "\n", path,
                    bases[i], last);
            rep->damaged++;
            damaged = true;
            break;
        }
        if (i > 0 && last + 1 < bases[i])
            rep->warnings++, fprintf(out, "WARNING %s: offsets %" PRId64 "..%" PRId64
                                          " are in no segment (fine only for a compacted topic)\n",
                                     path, last + 1, bases[i] - 1);
        bool active = i + 1 == n;
        kiq_log_verify_result_t res;
        int rc = kiq_log_verify_segment(path, last > bases[i] - 1 ? last : bases[i] - 1, active, &res);
        last = res.last_offset;
        batches += res.batches;
        rep->segments++;
        if (rc != 0) {
            fprintf(out, "DAMAGED %s: %s\n", path, rc < 0 ? kiq_error_get() : res.why);
            rep->damaged++;
            damaged = true;
        } else if (*res.why) {
            fprintf(out, "WARNING %s: %s (a torn tail: the broker cuts it off at start)\n", path, res.why);
            rep->warnings++;
        }
    }
    int64_t rp = checkpointed(logdir, name);
    if (!damaged && rp > last + 1) {
        fprintf(out, "DAMAGED %s: data loss: the log ends at offset %" PRId64 " but was flushed up to %" PRId64
                     " (a segment missing or cut)\n", dir, last + 1, rp);
        rep->damaged++;
        damaged = true;
    }
    int64_t missing = missing_segment(dir, bases, n);
    if (missing >= 0) {
        fprintf(out, "DAMAGED %s: data loss: segment file %020" PRId64 "%s is missing between others (its index is "
                     "there)\n", dir, missing, KIQ_LOG_SUFFIX);
        rep->damaged++;
        damaged = true;
    }
    kiq_data_loss_t loss;
    int marked = kiq_data_loss_load(dir, &loss);
    if (marked != 0) {
        if (marked < 0)
            fprintf(out, "DAMAGED %s: data loss recorded, unreadable: %s\n", dir, kiq_error_get());
        else
            fprintf(out, "DAMAGED %s: data loss not acknowledged: offsets %" PRId64 "..%" PRId64 ": %s (%d finding(s); "
                         "`kafkaiq verify --acknowledge %s` once dealt with)\n",
                    dir, loss.from, loss.to - 1, loss.why, loss.findings, dir);
        rep->damaged++;
        damaged = true;
    }
    rep->batches += batches;
    if (!damaged)
        fprintf(out, "OK %s: %zu segments, %" PRId64 " batches, offsets %" PRId64 "..%" PRId64 "\n", dir, n, batches,
                n ? bases[0] : 0, last);
    free(bases);
}

static int walk(const char *root, FILE *out, kiq_log_verify_report_t *rep, int depth)
{
    DIR *dh = opendir(root);
    if (!dh) return kiq_error_errno("cannot read %s", root);
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(dh))) {
        if (de->d_name[0] == '.') continue;
        char path[PATH_MAX], topic[256];
        int32_t part;
        snprintf(path, sizeof path, "%s/%s", root, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (kiq_log_dir_parse(de->d_name, topic, sizeof topic, &part) == 0)
            verify_partition(root, de->d_name, out, rep);
        else if (depth < 3 && walk(path, out, rep, depth + 1) != 0)
            rc = -1;
    }
    closedir(dh);
    return rc;
}

int kiq_log_verify(const char *root, FILE *out, kiq_log_verify_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    char copy[PATH_MAX], topic[256];
    int32_t part;
    snprintf(copy, sizeof copy, "%s", root);
    size_t len = strlen(copy);
    while (len > 1 && copy[len - 1] == '/') copy[--len] = '\0';
    char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    if (kiq_log_dir_parse(base, topic, sizeof topic, &part) == 0) {
        /* one partition's directory: its log directory is the parent */
        if (slash) *slash = '\0';
        verify_partition(slash ? copy : ".", base, out, rep);
        return 0;
    }
    return walk(copy, out, rep, 0);
}
