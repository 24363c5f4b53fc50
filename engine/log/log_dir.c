#include "log/log_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"

/* How often a full directory is looked at again, and with how much. */
#define FULL_CHECK_NS 1000000000LL
#define PROBE_BYTES 65536

struct kiq_log_dir {
    char *path;
    atomic_int failed_errno; /* 0 while online */
    atomic_int full_errno;   /* ENOSPC or EDQUOT while full; 0 otherwise */
    _Atomic int64_t full_checked_ns;
    atomic_uint_fast64_t refused; /* appends refused while full */
    atomic_bool armed;       /* a fault is injected: the write path takes mu */
    _Atomic int64_t fsync_delay_ms; /* injected: each fsync waits this long first */
    pthread_mutex_t mu;
    int fault_errno;
    int64_t bytes_left; /* before writes fail */
    bool fault_fsyncs;
};

kiq_log_dir_t *kiq_log_dir_new(const char *path)
{
    kiq_log_dir_t *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        kiq_error_set("out of memory");
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    return d;
}

void kiq_log_dir_free(kiq_log_dir_t *d)
{
    if (!d) return;
    pthread_mutex_destroy(&d->mu);
    free(d->path);
    free(d);
}

const char *kiq_log_dir_path(const kiq_log_dir_t *d) { return d->path; }

bool kiq_log_dir_offline(const kiq_log_dir_t *d) { return d && atomic_load(&d->failed_errno) != 0; }

int kiq_log_dir_error(const kiq_log_dir_t *d) { return d ? atomic_load(&d->failed_errno) : 0; }

void kiq_log_dir_fail(kiq_log_dir_t *d, int err, const char *what)
{
    if (!d) return;
    int expected = 0;
    if (err == ENOSPC || err == EDQUOT) {
        /* the write was cut back: what is there is whole and still served */
        atomic_store(&d->full_checked_ns, kiq_clock_mono_ns());
        if (atomic_compare_exchange_strong(&d->full_errno, &expected, err))
            KIQ_ERROR("log directory %s is full (%s): appends to it are refused with KAFKA_STORAGE_ERROR, fetches "
                      "go on, and appends resume by themselves once there is room", d->path, what);
        return;
    }
    if (err == 0) err = EIO;
    if (atomic_compare_exchange_strong(&d->failed_errno, &expected, err))
        KIQ_ERROR("log directory %s is offline (%s): its partitions answer KAFKA_STORAGE_ERROR until a restart",
                  d->path, what);
}

void kiq_log_dir_retire(kiq_log_dir_t *d, int err)
{
    if (d) atomic_store(&d->failed_errno, err ? err : EIO);
}

void kiq_log_dir_reset(kiq_log_dir_t *d)
{
    if (!d) return;
    atomic_store(&d->failed_errno, 0);
    atomic_store(&d->full_errno, 0);
}

int kiq_log_dir_full(const kiq_log_dir_t *d) { return d ? atomic_load(&d->full_errno) : 0; }

/* Whether PROBE_BYTES can be written and synced in the directory (an
 * injected fault applies as to the logs). */
static bool has_room(kiq_log_dir_t *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.kafkaiq-space-probe", d->path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    static const uint8_t zeros[PROBE_BYTES];
    int fault = 0;
    bool ok = kiq_log_dir_write_allowance(d, sizeof zeros, &fault) == sizeof zeros && !fault &&
              kiq_pwrite_full(fd, zeros, sizeof zeros, 0) == 0 && fdatasync(fd) == 0;
    close(fd);
    unlink(path);
    return ok;
}

bool kiq_log_dir_writable(kiq_log_dir_t *d)
{
    if (!d) return true;
    if (atomic_load(&d->failed_errno)) return false;
    int full = atomic_load(&d->full_errno);
    if (!full) return true;
    int64_t now = kiq_clock_mono_ns(), checked = atomic_load(&d->full_checked_ns);
    /* one thread looks, the others go on refusing meanwhile */
    if (now - checked < FULL_CHECK_NS || !atomic_compare_exchange_strong(&d->full_checked_ns, &checked, now)) {
        atomic_fetch_add(&d->refused, 1);
        return false;
    }
    if (!has_room(d)) {
        atomic_fetch_add(&d->refused, 1);
        return false;
    }
    if (atomic_compare_exchange_strong(&d->full_errno, &full, 0))
        KIQ_INFO("log directory %s has room again: appends resume (%llu refused while it was full)", d->path,
                 (unsigned long long)atomic_exchange(&d->refused, 0));
    return true;
}

int kiq_log_dir_inject_fault(kiq_log_dir_t *d, int err, int64_t after_bytes, bool fsyncs)
{
    if (err <= 0) return kiq_error_set("disk fault: errno %d is not an error", err);
    if (after_bytes < 0) return kiq_error_set("disk fault: after_bytes %lld is negative", (long long)after_bytes);
    pthread_mutex_lock(&d->mu);
    d->fault_errno = err;
    d->bytes_left = after_bytes;
    d->fault_fsyncs = fsyncs;
    atomic_store(&d->armed, true);
    pthread_mutex_unlock(&d->mu);
    KIQ_WARN("disk fault injected in %s: writes fail with %s after %lld more bytes%s", d->path, strerror(err),
             (long long)after_bytes, fsyncs ? ", fsyncs fail too" : "");
    return 0;
}

int kiq_log_dir_slow_fsyncs(kiq_log_dir_t *d, int64_t delay_ms)
{
    if (delay_ms < 0) return kiq_error_set("slow disk: a delay of %lld ms is negative", (long long)delay_ms);
    atomic_store(&d->fsync_delay_ms, delay_ms);
    if (delay_ms) KIQ_WARN("slow disk injected in %s: each fsync takes %lld ms longer", d->path, (long long)delay_ms);
    return 0;
}

void kiq_log_dir_clear_fault(kiq_log_dir_t *d)
{
    atomic_store(&d->fsync_delay_ms, 0);
    pthread_mutex_lock(&d->mu);
    atomic_store(&d->armed, false);
    d->fault_errno = 0;
    pthread_mutex_unlock(&d->mu);
}

size_t kiq_log_dir_write_allowance(kiq_log_dir_t *d, size_t n, int *err)
{
    if (!d || !atomic_load(&d->armed)) return n;
    pthread_mutex_lock(&d->mu);
    size_t allowed = n;
    if (d->fault_errno) {
        if ((uint64_t)d->bytes_left < n) {
            allowed = (size_t)d->bytes_left;
            *err = d->fault_errno;
        }
        d->bytes_left -= (int64_t)allowed;
    }
    pthread_mutex_unlock(&d->mu);
    return allowed;
}

int kiq_log_dir_sync_fault(kiq_log_dir_t *d)
{
    int64_t delay_ms = d ? atomic_load(&d->fsync_delay_ms) : 0;
    if (delay_ms > 0) {
        struct timespec ts = {(time_t)(delay_ms / 1000), (long)(delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    if (!d || !atomic_load(&d->armed)) return 0;
    pthread_mutex_lock(&d->mu);
    int err = d->fault_fsyncs ? d->fault_errno : 0;
    pthread_mutex_unlock(&d->mu);
    return err;
}
