#include "log/log_dir.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/say.h"

struct kiq_log_dir {
    char *path;
    atomic_int failed_errno; /* 0 while online */
    atomic_bool armed;       /* a fault is injected: the write path takes mu */
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
    if (d) atomic_store(&d->failed_errno, 0);
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

void kiq_log_dir_clear_fault(kiq_log_dir_t *d)
{
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
    if (!d || !atomic_load(&d->armed)) return 0;
    pthread_mutex_lock(&d->mu);
    int err = d->fault_fsyncs ? d->fault_errno : 0;
    pthread_mutex_unlock(&d->mu);
    return err;
}
