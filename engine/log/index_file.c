#include "log/index_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "log/file_io.h"

int kiq_index_file_open(kiq_index_file_t *f, const char *path, size_t entry_size, bool truncate,
                        size_t max_len, uint8_t **data, size_t *len)
{
    f->fd = -1;
    f->entry_size = entry_size;
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

int kiq_index_file_put(kiq_index_file_t *f, size_t slot, const uint8_t *entry)
{
    if (kiq_pwrite_full(f->fd, entry, f->entry_size, (uint64_t)slot * f->entry_size) < 0)
        return kiq_error_set("%s: %s", f->path, kiq_error_get());
    return 0;
}

int kiq_index_file_truncate(kiq_index_file_t *f, size_t count)
{
    int rc;
    do rc = ftruncate(f->fd, (off_t)(count * f->entry_size));
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
