/* Whole-buffer file I/O for the log: retries on EINTR and short transfers so
 * callers see either everything or an error. Callable from any thread. */
#ifndef KIQ_LOG_FILE_IO_H
#define KIQ_LOG_FILE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads up to n bytes at off; fewer only at end of file. Returns the count,
 * or -1 with the reason recorded. */
ssize_t kiq_pread_full(int fd, void *buf, size_t n, uint64_t off);
/* Writes all n bytes at off; 0, or -1 with the reason recorded (a prefix may
 * have reached the file). */
int kiq_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
/* fsync of a directory, so entries created or removed in it survive a crash. */
int kiq_fsync_dir(const char *dir);
/* Writes the first len bytes of the open file from into a new file at
 * path `to` (replaced if there) and syncs it; on failure nothing is left at
 * `to`. 0 or -1. */
int kiq_copy_file(int from, const char *to, uint64_t len);
/* mkdir -p with mode 0755; 0 when the directory exists afterwards. */
int kiq_mkdir_p(const char *dir);

#endif
