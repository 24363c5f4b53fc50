#include "log/txn_index.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"
#include "log/log_names.h"
#include "proto/writer.h"

/* A .txnindex larger than this is not read (a million aborts per segment). */
#define MAX_FILE_BYTES ((size_t)KIQ_TXN_INDEX_ENTRY << 20)

struct kiq_txn_index {
    char *dir;
    kiq_aborted_t *e; /* by last_offset, ascending */
    size_t n, cap;
};

kiq_txn_index_t *kiq_txn_index_new(const char *dir)
{
    kiq_txn_index_t *x = calloc(1, sizeof *x);
    if (!x || !(x->dir = strdup(dir))) {
        free(x);
        kiq_error_set("out of memory");
        return NULL;
    }
    return x;
}

void kiq_txn_index_free(kiq_txn_index_t *x)
{
    if (!x) return;
    free(x->e);
    free(x->dir);
    free(x);
}

size_t kiq_txn_index_count(const kiq_txn_index_t *x) { return x->n; }

static int push(kiq_txn_index_t *x, const kiq_aborted_t *e)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 8;
        kiq_aborted_t *p = realloc(x->e, cap * sizeof *p);
        if (!p) return kiq_error_set("out of memory");
        x->e = p;
        x->cap = cap;
    }
    x->e[x->n++] = *e;
    return 0;
}

static void encode(uint8_t *p, const kiq_aborted_t *e)
{
    kiq_put_be16(p, 0);
    kiq_put_be64(p + 2, (uint64_t)e->producer_id);
    kiq_put_be64(p + 10, (uint64_t)e->first_offset);
    kiq_put_be64(p + 18, (uint64_t)e->last_offset);
    kiq_put_be64(p + 26, (uint64_t)e->last_stable_offset);
}

static int load_file(kiq_txn_index_t *x, int64_t base)
{
    char path[PATH_MAX];
    if (kiq_log_segment_path(path, sizeof path, x->dir, base, KIQ_TXNINDEX_SUFFIX) < 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) KIQ_WARN("%s: %s; its aborted transactions are not known", path, strerror(errno));
        return 0;
    }
    struct stat st;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size <= MAX_FILE_BYTES) {
        len = (size_t)st.st_size;
        buf = malloc(len ? len : 1);
        if (buf && kiq_pread_full(fd, buf, len, 0) != (ssize_t)len) len = 0;
    } else {
        KIQ_WARN("%s: unreadable or too large; its aborted transactions are not known", path);
    }
    close(fd);
    if (!buf) return len ? kiq_error_set("out of memory") : 0;
    if (len % KIQ_TXN_INDEX_ENTRY) KIQ_WARN("%s: a torn last entry (%zu bytes) is ignored", path, len % KIQ_TXN_INDEX_ENTRY);
    int rc = 0;
    for (size_t at = 0; at + KIQ_TXN_INDEX_ENTRY <= len && rc == 0; at += KIQ_TXN_INDEX_ENTRY) {
        const uint8_t *p = buf + at;
        kiq_aborted_t e = {
            .producer_id = (int64_t)kiq_be64(p + 2),
            .first_offset = (int64_t)kiq_be64(p + 10),
            .last_offset = (int64_t)kiq_be64(p + 18),
            .last_stable_offset = (int64_t)kiq_be64(p + 26),
            .segment_base = base,
        };
        if (kiq_be16(p) != 0 || e.first_offset > e.last_offset || (x->n && e.last_offset <= x->e[x->n - 1].last_offset)) {
            KIQ_WARN("%s: entry %zu is malformed; the rest of the file is ignored", path, at / KIQ_TXN_INDEX_ENTRY);
            break;
        }
        rc = push(x, &e);
    }
    free(buf);
    return rc;
}

int kiq_txn_index_load(kiq_txn_index_t *x, const int64_t *bases, size_t n)
{
    x->n = 0;
    for (size_t i = 0; i < n; i++)
        if (load_file(x, bases[i]) < 0) return -1;
    return 0;
}

int kiq_txn_index_add(kiq_txn_index_t *x, const kiq_aborted_t *e)
{
    if (x->n && e->last_offset <= x->e[x->n - 1].last_offset) return 0;
    char path[PATH_MAX];
    if (kiq_log_segment_path(path, sizeof path, x->dir, e->segment_base, KIQ_TXNINDEX_SUFFIX) < 0) return -1;
    if (push(x, e) < 0) return -1;
    uint8_t buf[KIQ_TXN_INDEX_ENTRY];
    encode(buf, e);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return kiq_error_errno("cannot open %s", path);
    ssize_t w = write(fd, buf, sizeof buf);
    int rc = w == (ssize_t)sizeof buf ? 0 : kiq_error_errno("write %s", path);
    close(fd);
    return rc;
}

/* Writes the entries of segment base from x->e[from..] anew. */
static int rewrite(kiq_txn_index_t *x, int64_t base, size_t from)
{
    char path[PATH_MAX];
    if (kiq_log_segment_path(path, sizeof path, x->dir, base, KIQ_TXNINDEX_SUFFIX) < 0) return -1;
    size_t n = 0;
    while (from + n < x->n && x->e[from + n].segment_base == base) n++;
    if (n == 0) {
        if (unlink(path) < 0 && errno != ENOENT) return kiq_error_errno("unlink %s", path);
        return 0;
    }
    uint8_t *buf = malloc(n * KIQ_TXN_INDEX_ENTRY);
    if (!buf) return kiq_error_set("out of memory");
    for (size_t i = 0; i < n; i++) encode(buf + i * KIQ_TXN_INDEX_ENTRY, &x->e[from + i]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = fd < 0 ? kiq_error_errno("cannot open %s", path) : kiq_pwrite_full(fd, buf, n * KIQ_TXN_INDEX_ENTRY, 0);
    if (fd >= 0) close(fd);
    free(buf);
    return rc;
}

int kiq_txn_index_truncate(kiq_txn_index_t *x, int64_t offset)
{
    size_t keep = x->n;
    while (keep > 0 && x->e[keep - 1].last_offset >= offset) keep--;
    if (keep == x->n) return 0;
    int64_t base = x->e[keep].segment_base;
    x->n = keep;
    /* the segment cut at offset keeps its earlier entries; later ones are gone whole */
    size_t from = keep;
    while (from > 0 && x->e[from - 1].segment_base == base) from--;
    return rewrite(x, base, from);
}

void kiq_txn_index_drop_below(kiq_txn_index_t *x, int64_t start_offset)
{
    size_t drop = 0;
    while (drop < x->n && x->e[drop].last_offset < start_offset) drop++;
    if (!drop) return;
    memmove(x->e, x->e + drop, (x->n - drop) * sizeof *x->e);
    x->n -= drop;
}

size_t kiq_txn_index_collect(const kiq_txn_index_t *x, int64_t from, int64_t upper, kiq_arena_t *arena,
                             kiq_aborted_t **out)
{
    *out = NULL;
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].last_offset < from) lo = mid + 1;
        else hi = mid;
    }
    size_t n = 0;
    for (size_t i = lo; i < x->n; i++)
        if (x->e[i].first_offset < upper) n++;
    if (!n) return 0;
    kiq_aborted_t *a = kiq_arena_alloc(arena, n * sizeof *a);
    if (!a) return 0;
    size_t k = 0;
    for (size_t i = lo; i < x->n; i++)
        if (x->e[i].first_offset < upper) a[k++] = x->e[i];
    *out = a;
    return n;
}
