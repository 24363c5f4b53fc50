#include "log/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "core/error.h"

ssize_t kiq_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return kiq_error_errno("pread %zu bytes at %llu", n - done, (unsigned long long)(off + done));
        }
        if (r == 0) break;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

int kiq_pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pwrite(fd, (const uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return kiq_error_errno("pwrite %zu bytes at %llu", n - done, (unsigned long long)(off + done));
        }
        if (r == 0) return kiq_error_set("pwrite at %llu wrote nothing", (unsigned long long)(off + done));
        done += (size_t)r;
    }
    return 0;
}

int kiq_fsync_dir(const char *dir)
{
    int fd;
    do fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return kiq_error_errno("open directory %s", dir);
    int rc = fsync(fd);
    if (rc < 0) kiq_error_errno("fsync directory %s", dir);
    close(fd);
    return rc < 0 ? -1 : 0;
}

int kiq_mkdir_p(const char *dir)
{
    char path[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return kiq_error_set("bad directory path '%s'", dir);
    memcpy(path, dir, n + 1);
    /* Each prefix ending before a '/' is created in turn; existing ones are fine. */
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) return kiq_error_errno("mkdir %s", path);
        path[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) < 0) return kiq_error_errno("stat %s", dir);
    if (!S_ISDIR(st.st_mode)) return kiq_error_set("%s is not a directory", dir);
    return 0;
}

int kiq_copy_file(int from, const char *to, uint64_t len)
{
    int fd;
    do fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return kiq_error_errno("create %s", to);
    uint8_t buf[64 * 1024];
    int rc = 0;
    for (uint64_t done = 0; done < len && rc == 0;) {
        size_t n = len - done < sizeof buf ? (size_t)(len - done) : sizeof buf;
        ssize_t r = kiq_pread_full(from, buf, n, done);
        if (r >= 0 && (size_t)r < n) kiq_error_set("the file ends at %llu, %llu bytes were expected",
                                                   (unsigned long long)(done + (uint64_t)r), (unsigned long long)len);
        if (r < 0 || (size_t)r < n || kiq_pwrite_full(fd, buf, n, done) < 0) rc = -1;
        done += n;
    }
    if (rc == 0 && fdatasync(fd) < 0) rc = kiq_error_errno("fdatasync %s", to);
    close(fd);
    if (rc < 0) unlink(to);
    return rc;
}
