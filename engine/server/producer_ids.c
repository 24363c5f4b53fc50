#include "server/producer_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "log/file_io.h"

/* The file: one line "kafkaiq-producer-ids v1 next=<first id of the next block>". */
#define FILE_PREFIX "kafkaiq-producer-ids v1 next="

/* Guarded by mu, except the paths, block and source, fixed at new. */
struct kiq_producer_ids {
    pthread_mutex_t mu;
    kiq_producer_id_source_t source; /* a cluster's blocks; NULL request: the file */
    char *dir;
    char path[PATH_MAX];
    int64_t block;
    int64_t next;      /* the next id to hand out */
    int64_t block_end; /* ids below it are reserved on disk, or given by the source */
    int64_t block_len; /* the source's current block's length */
    int64_t spare_start, spare_len; /* the source's next block, 0 long when none */
    bool asking;                    /* a request to the source is out */
};

static int read_file(kiq_producer_ids_t *p)
{
    FILE *f = fopen(p->path, "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        return kiq_error_errno("cannot open %s", p->path);
    }
    char line[128];
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char *end;
    if (!got || strncmp(line, FILE_PREFIX, strlen(FILE_PREFIX)) != 0)
        return kiq_error_set("%s is not a producer id file", p->path);
    errno = 0;
    long long v = strtoll(line + strlen(FILE_PREFIX), &end, 10);
    if (errno || end == line + strlen(FILE_PREFIX) || (*end != '\n' && *end != '\0') || v < 0)
        return kiq_error_set("%s has a malformed next id", p->path);
    p->next = p->block_end = (int64_t)v;
    return 0;
}

/* Under mu: reserves ids below end on disk. */
static int write_file(kiq_producer_ids_t *p, int64_t end)
{
    char tmp[PATH_MAX + 8], text[96];
    snprintf(tmp, sizeof tmp, "%s.tmp", p->path);
    int n = snprintf(text, sizeof text, FILE_PREFIX "%" PRId64 "\n", end);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return kiq_error_errno("cannot create %s", tmp);
    int rc = kiq_pwrite_full(fd, text, (size_t)n, 0);
    if (rc == 0 && fsync(fd) < 0) rc = kiq_error_errno("fsync %s", tmp);
    if (close(fd) < 0 && rc == 0) rc = kiq_error_errno("close %s", tmp);
    if (rc == 0 && rename(tmp, p->path) < 0) rc = kiq_error_errno("rename %s to %s", tmp, p->path);
    if (rc < 0) {
        unlink(tmp);
        return -1;
    }
    return kiq_fsync_dir(p->dir);
}

kiq_producer_ids_t *kiq_producer_ids_new(const char *dir, int64_t block_size)
{
    if (block_size <= 0) {
        kiq_error_set("producer id block size %" PRId64 " must be positive", block_size);
        return NULL;
    }
    kiq_producer_ids_t *p = calloc(1, sizeof *p);
    if (!p || !(p->dir = strdup(dir))) {
        free(p);
        kiq_error_set("out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->block = block_size;
    int w = snprintf(p->path, sizeof p->path, "%s/" KIQ_PRODUCER_IDS_FILE, dir);
    if (w < 0 || (size_t)w >= sizeof p->path) {
        kiq_error_set("%s: path too long", dir);
        kiq_producer_ids_free(p);
        return NULL;
    }
    if (read_file(p) < 0) {
        kiq_producer_ids_free(p);
        return NULL;
    }
    return p;
}

kiq_producer_ids_t *kiq_producer_ids_new_from(const kiq_producer_id_source_t *source)
{
    kiq_producer_ids_t *p = calloc(1, sizeof *p);
    if (!p || !(p->dir = strdup(""))) {
        free(p);
        kiq_error_set("out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->source = *source;
    return p;
}

void kiq_producer_ids_free(kiq_producer_ids_t *p)
{
    if (!p) return;
    pthread_mutex_destroy(&p->mu);
    free(p->dir);
    free(p);
}

void kiq_producer_ids_given(kiq_producer_ids_t *p, int rc, int64_t start, int64_t len)
{
    if (rc != 0) KIQ_WARN("no producer ids from the controller: %s", kiq_error_get());
    pthread_mutex_lock(&p->mu);
    p->asking = false;
    bool came = rc == 0 && len > 0;
    if (came) {
        p->spare_start = start;
        p->spare_len = len;
        KIQ_DEBUG("producer ids %" PRId64 "..%" PRId64 " given", start, start + len - 1);
    }
    pthread_mutex_unlock(&p->mu);
    if (came && p->source.arrived) p->source.arrived(p->source.ctx);
}

bool kiq_producer_ids_ready(kiq_producer_ids_t *p)
{
    if (!p->source.request) return true;
    pthread_mutex_lock(&p->mu);
    bool ready = p->next < p->block_end || p->spare_len > 0;
    pthread_mutex_unlock(&p->mu);
    if (!ready) kiq_producer_ids_prefetch(p);
    return ready;
}

/* From the source's blocks, under mu; *ask set (when ask is not NULL)
 * when the next block is to be asked for. */
static int next_given(kiq_producer_ids_t *p, int64_t *id, bool *ask)
{
    if (p->next >= p->block_end && p->spare_len > 0) {
        p->next = p->spare_start;
        p->block_end = p->spare_start + p->spare_len;
        p->block_len = p->spare_len;
        p->spare_len = 0;
    }
    int rc = 0;
    if (p->next >= p->block_end)
        rc = kiq_error_set("producer ids are on their way from the controller");
    else
        *id = p->next++;
    if (ask && !p->asking && p->spare_len == 0 && p->block_end - p->next <= p->block_len / 10)
        *ask = p->asking = true;
    return rc;
}

void kiq_producer_ids_prefetch(kiq_producer_ids_t *p)
{
    pthread_mutex_lock(&p->mu);
    bool ask = p->source.request && !p->asking && p->spare_len == 0 && p->next >= p->block_end;
    if (ask) p->asking = true;
    pthread_mutex_unlock(&p->mu);
    if (ask) p->source.request(p->source.ctx, p);
}

int kiq_producer_ids_next(kiq_producer_ids_t *p, int64_t *id)
{
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    bool ask = false;
    if (p->source.request) {
        rc = next_given(p, id, &ask);
    } else if (p->next >= p->block_end) {
        if (p->block_end > INT64_MAX - p->block) {
            rc = kiq_error_set("producer ids are exhausted");
        } else if ((rc = write_file(p, p->block_end + p->block)) == 0) {
            p->next = p->block_end;
            p->block_end += p->block;
            KIQ_DEBUG("producer ids %" PRId64 "..%" PRId64 " reserved", p->next, p->block_end - 1);
        }
    }
    if (rc == 0 && !p->source.request) *id = p->next++;
    pthread_mutex_unlock(&p->mu);
    if (ask) {
        char why[256];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        p->source.request(p->source.ctx, p);
        /* a source that answered at once (the controller is here) */
        if (rc != 0) {
            pthread_mutex_lock(&p->mu);
            rc = next_given(p, id, NULL);
            pthread_mutex_unlock(&p->mu);
            if (rc != 0) kiq_error_set("%s", why);
        }
    }
    return rc;
}
