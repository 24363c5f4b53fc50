#include "log/index_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "log/file_io.h"

/* Opens path (created if missing, emptied when `truncate`). *data gets the
 * file's bytes (malloc'd, NULL when empty) and *len their count; a file
 * bigger than max_len is not read and *len is set to max_len + 1. */
static int open_file(kiq_index_file_t *f, const kiq_index_layout_t *layout, const char *path, bool truncate,
                     size_t max_len, uint8_t **data, size_t *len)
{
    f->fd = -1;
    f->layout = layout;
    f->path = strdup(path);
    *data = NULL;
    *len = 0;
    if (!f->path) return kiq_error_set("out of memory");
    int flags = O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0);
    do f->fd = open(path, flags, 0644);
    while (f->fd < 0 && errno == EINTR);
    if (f->fd < 0) {
        kiq_error_errno("open %s", path);
        goto fail;
    }
    struct stat st;
    if (fstat(f->fd, &st) < 0) {
        kiq_error_errno("stat %s", path);
        goto fail;
    }
    if ((uint64_t)st.st_size > max_len) {
        *len = max_len + 1;
        return 0;
    }
    if (st.st_size == 0) return 0;
    *data = malloc((size_t)st.st_size);
    if (!*data) {
        kiq_error_set("out of memory reading %s", path);
        goto fail;
    }
    ssize_t r = kiq_pread_full(f->fd, *data, (size_t)st.st_size, 0);
    if (r < 0) goto fail;
    *len = (size_t)r;
    return 0;
fail:
    free(*data);
    *data = NULL;
    kiq_index_file_close(f);
    return -1;
}

int kiq_index_file_load(kiq_index_file_t *f, const kiq_index_layout_t *layout, const char *path, int32_t max_bytes,
                        bool truncate, void **slots, size_t *count, size_t *cap, bool *torn)
{
    *slots = NULL;
    *count = *cap = 0;
    *torn = false;
    uint8_t *data;
    size_t len;
    /* A file far beyond the configured size is damaged; a little beyond is a
     * shrunken limit and still loads (the segment then rolls at once). */
    size_t max_len = (size_t)max_bytes * 2;
    if (open_file(f, layout, path, truncate, max_len, &data, &len) < 0) return -1;
    if (len > max_len) {
        *torn = true;
        return 0;
    }
    size_t n = len / layout->entry_size;
    *torn = len % layout->entry_size != 0;
    if (n > 0) {
        uint8_t *p = kiq_index_file_grow(f, NULL, cap, n);
        if (!p) {
            free(data);
            kiq_index_file_close(f);
            return -1;
        }
        for (size_t i = 0; i < n; i++) layout->decode(p + i * layout->slot_size, data + i * layout->entry_size);
        *slots = p;
        *count = n;
    }
    free(data);
    return 0;
}

void *kiq_index_file_grow(const kiq_index_file_t *f, void *slots, size_t *cap, size_t n)
{
    if (n <= *cap) return slots;
    size_t c = *cap ? *cap : 64;
    while (c < n) c *= 2;
    void *p = realloc(slots, c * f->layout->slot_size);
    if (!p) {
        kiq_error_set("out of memory growing %s", f->path);
        return NULL;
    }
    *cap = c;
    return p;
}

int kiq_index_file_put(kiq_index_file_t *f, size_t slot, const uint8_t *entry)
{
    if (kiq_pwrite_full(f->fd, entry, f->layout->entry_size, (uint64_t)slot * f->layout->entry_size) < 0)
        return kiq_error_set("%s: %s", f->path, kiq_error_get());
    return 0;
}

int kiq_index_file_truncate(kiq_index_file_t *f, size_t count)
{
    int rc;
    do rc = ftruncate(f->fd, (off_t)(count * f->layout->entry_size));
    while (rc < 0 && errno == EINTR);
    if (rc < 0) return kiq_error_errno("truncate %s", f->path);
    return 0;
}

int kiq_index_file_sync(kiq_index_file_t *f)
{
    if (fdatasync(f->fd) < 0) return kiq_error_errno("fdatasync %s", f->path);
    return 0;
}

void kiq_index_file_close(kiq_index_file_t *f)
{
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
    free(f->path);
    f->path = NULL;
}

int kiq_index_file_unlink(kiq_index_file_t *f)
{
    if (f->path && unlink(f->path) < 0 && errno != ENOENT) return kiq_error_errno("unlink %s", f->path);
    return 0;
}
