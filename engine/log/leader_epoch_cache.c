#include "log/leader_epoch_cache.h"

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

/* A checkpoint larger than this is not a leader-epoch checkpoint. */
#define MAX_CHECKPOINT_BYTES (16u << 20)

struct kiq_leader_epoch_cache {
    kiq_epoch_entry_t *e; /* epochs strictly increasing, start offsets not decreasing */
    size_t n, cap;
};

kiq_leader_epoch_cache_t *kiq_leader_epoch_cache_new(void)
{
    kiq_leader_epoch_cache_t *c = calloc(1, sizeof *c);
    if (!c) kiq_error_set("out of memory");
    return c;
}

void kiq_leader_epoch_cache_free(kiq_leader_epoch_cache_t *c)
{
    if (!c) return;
    free(c->e);
    free(c);
}

void kiq_leader_epoch_cache_clear(kiq_leader_epoch_cache_t *c) { c->n = 0; }

size_t kiq_leader_epoch_cache_count(const kiq_leader_epoch_cache_t *c) { return c->n; }

kiq_epoch_entry_t kiq_leader_epoch_cache_entry(const kiq_leader_epoch_cache_t *c, size_t i) { return c->e[i]; }

static int push(kiq_leader_epoch_cache_t *c, int32_t epoch, int64_t start_offset)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        kiq_epoch_entry_t *p = realloc(c->e, cap * sizeof *p);
        if (!p) return kiq_error_set("out of memory");
        c->e = p;
        c->cap = cap;
    }
    c->e[c->n++] = (kiq_epoch_entry_t){.epoch = epoch, .start_offset = start_offset};
    return 0;
}

int kiq_leader_epoch_cache_assign(kiq_leader_epoch_cache_t *c, int32_t epoch, int64_t start_offset)
{
    if (epoch < 0) return 0;
    if (start_offset < 0) {
        KIQ_WARN("leader epoch %" PRId32 " with start offset %" PRId64 " ignored", epoch, start_offset);
        return 0;
    }
    if (c->n == 0) return push(c, epoch, start_offset) < 0 ? -1 : 1;
    kiq_epoch_entry_t *last = &c->e[c->n - 1];
    if (epoch == last->epoch && start_offset >= last->start_offset) return 0;
    if (epoch <= last->epoch || start_offset < last->start_offset) {
        KIQ_WARN("leader epoch %" PRId32 " at offset %" PRId64 " ignored: the latest is epoch %" PRId32
                 " from offset %" PRId64,
                 epoch, start_offset, last->epoch, last->start_offset);
        return 0;
    }
    /* The previous epoch wrote nothing: it has no range of the log to
     * describe, and Kafka drops it the same way. */
    if (start_offset == last->start_offset) {
        last->epoch = epoch;
        return 1;
    }
    return push(c, epoch, start_offset) < 0 ? -1 : 1;
}

int32_t kiq_leader_epoch_cache_latest_epoch(const kiq_leader_epoch_cache_t *c)
{
    return c->n ? c->e[c->n - 1].epoch : KIQ_UNDEFINED_EPOCH;
}

/* Index of the first entry whose epoch is > epoch (n when none). */
static size_t first_above(const kiq_leader_epoch_cache_t *c, int32_t epoch)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->e[mid].epoch > epoch)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void kiq_leader_epoch_cache_end_offset_for(const kiq_leader_epoch_cache_t *c, int32_t epoch, int64_t leo,
                                           int32_t *out_epoch, int64_t *out_end_offset)
{
    *out_epoch = KIQ_UNDEFINED_EPOCH;
    *out_end_offset = KIQ_UNDEFINED_EPOCH_OFFSET;
    if (epoch == KIQ_UNDEFINED_EPOCH || c->n == 0) return;
    if (epoch == c->e[c->n - 1].epoch) {
        *out_epoch = epoch;
        *out_end_offset = leo;
        return;
    }
    size_t higher = first_above(c, epoch);
    if (higher == c->n) return;
    *out_epoch = higher == 0 ? epoch : c->e[higher - 1].epoch;
    *out_end_offset = c->e[higher].start_offset;
}

int32_t kiq_leader_epoch_cache_epoch_for_offset(const kiq_leader_epoch_cache_t *c, int64_t offset)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->e[mid].start_offset > offset)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo == 0 ? KIQ_UNDEFINED_EPOCH : c->e[lo - 1].epoch;
}

bool kiq_leader_epoch_cache_truncate_from_end(kiq_leader_epoch_cache_t *c, int64_t offset)
{
    size_t n = c->n;
    while (n > 0 && c->e[n - 1].start_offset >= offset) n--;
    bool changed = n != c->n;
    c->n = n;
    return changed;
}

bool kiq_leader_epoch_cache_truncate_from_start(kiq_leader_epoch_cache_t *c, int64_t offset)
{
    size_t keep = 0; /* the last entry starting at or below offset */
    while (keep + 1 < c->n && c->e[keep + 1].start_offset <= offset) keep++;
    if (c->n == 0 || (keep == 0 && c->e[0].start_offset >= offset)) return false;
    memmove(c->e, c->e + keep, (c->n - keep) * sizeof *c->e);
    c->n -= keep;
    c->e[0].start_offset = offset;
    return true;
}

/* ---- The checkpoint file ---- */

int kiq_leader_epoch_cache_save(const kiq_leader_epoch_cache_t *c, const char *dir)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, KIQ_LEADER_EPOCH_CHECKPOINT) >= sizeof tmp)
        return kiq_error_set("%s: path too long", dir);
    snprintf(path, sizeof path, "%s/%s", dir, KIQ_LEADER_EPOCH_CHECKPOINT);
    FILE *f = fopen(tmp, "w");
    if (!f) return kiq_error_errno("cannot create %s", tmp);
    fprintf(f, "0\n%zu\n", c->n);
    for (size_t i = 0; i < c->n; i++) fprintf(f, "%" PRId32 " %" PRId64 "\n", c->e[i].epoch, c->e[i].start_offset);
    int rc = 0;
    if (fflush(f) != 0 || ferror(f)) rc = kiq_error_errno("cannot write %s", tmp);
    if (rc == 0 && fsync(fileno(f)) < 0) rc = kiq_error_errno("fsync %s", tmp);
    if (fclose(f) != 0 && rc == 0) rc = kiq_error_errno("close %s", tmp);
    if (rc == 0 && rename(tmp, path) < 0) rc = kiq_error_errno("rename %s to %s", tmp, path);
    if (rc < 0) {
        unlink(tmp);
        return -1;
    }
    return kiq_fsync_dir(dir);
}

/* The whole file into a malloc'd, NUL-terminated *out. 1 when there is no
 * file, 0 or -1. */
static int read_small_file(const char *path, char **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 1 : kiq_error_errno("cannot open %s", path);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return kiq_error_errno("stat %s", path);
    }
    if ((uint64_t)st.st_size > MAX_CHECKPOINT_BYTES) {
        close(fd);
        return kiq_error_set("%s: %lld bytes is too large", path, (long long)st.st_size);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return kiq_error_set("out of memory");
    }
    ssize_t r = kiq_pread_full(fd, buf, (size_t)st.st_size, 0);
    close(fd);
    if (r < 0) {
        free(buf);
        return -1;
    }
    buf[r] = '\0';
    *out = buf;
    return 0;
}

/* The next line of *p (its newline replaced by NUL, *p moved past it), or
 * NULL at the end of the text. */
static char *next_line(char **p)
{
    if (**p == '\0') return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = line + strlen(line);
    }
    return line;
}

/* A decimal integer in [0, max] followed by blanks only up to *end's
 * next field (end may be NULL: then nothing may follow). */
static bool parse_field(const char *s, int64_t max, int64_t *out, const char **end)
{
    while (*s == ' ' || *s == '\t') s++;
    if (*s < '0' || *s > '9') return false;
    errno = 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (errno || v > max) return false;
    if (end) {
        if (*e != ' ' && *e != '\t') return false;
        *end = e;
    } else {
        while (*e == ' ' || *e == '\t' || *e == '\r') e++;
        if (*e) return false;
    }
    *out = v;
    return true;
}

int kiq_leader_epoch_cache_load(kiq_leader_epoch_cache_t *c, const char *dir)
{
    char path[PATH_MAX];
    c->n = 0;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, KIQ_LEADER_EPOCH_CHECKPOINT) >= sizeof path)
        return kiq_error_set("%s: path too long", dir);
    char *text = NULL;
    int rc = read_small_file(path, &text);
    if (rc != 0) return rc;
    char *p = text, *line;
    int64_t version, count;
    if (!(line = next_line(&p)) || !parse_field(line, INT32_MAX, &version, NULL) || version != 0) {
        rc = kiq_error_set("%s: not a version 0 checkpoint", path);
        goto out;
    }
    if (!(line = next_line(&p)) || !parse_field(line, INT32_MAX, &count, NULL)) {
        rc = kiq_error_set("%s: unreadable entry count", path);
        goto out;
    }
    int64_t i = 0;
    for (; (line = next_line(&p)); i++) {
        const char *rest;
        int64_t epoch, offset;
        if (i >= count) {
            rc = kiq_error_set("%s: more entries than the %" PRId64 " announced", path, count);
            goto out;
        }
        if (!parse_field(line, INT32_MAX, &epoch, &rest) || !parse_field(rest, INT64_MAX, &offset, NULL)) {
            rc = kiq_error_set("%s: entry %" PRId64 " is not \"epoch startOffset\"", path, i + 1);
            goto out;
        }
        if (c->n > 0 && (epoch <= c->e[c->n - 1].epoch || offset < c->e[c->n - 1].start_offset)) {
            rc = kiq_error_set("%s: entry %" PRId64 " (epoch %" PRId64 " at %" PRId64 ") goes backwards", path, i + 1,
                               epoch, offset);
            goto out;
        }
        if (push(c, (int32_t)epoch, offset) < 0) {
            rc = -1;
            goto out;
        }
    }
    if (i != count) rc = kiq_error_set("%s: %" PRId64 " entries announced, %" PRId64 " found", path, count, i);
out:
    free(text);
    if (rc != 0) c->n = 0;
    return rc;
}
