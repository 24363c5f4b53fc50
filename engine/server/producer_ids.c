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
    kiq_producer_id_source_t source; /* a cluster's blocks; NULL reserve: the file */
    char *dir;
    char path[PATH_MAX];
    int64_t block;
    int64_t next;      /* the next id to hand out */
    int64_t block_end; /* ids below it are reserved on disk */
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

int kiq_producer_ids_next(kiq_producer_ids_t *p, int64_t *id)
{
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (p->next >= p->block_end && p->source.reserve) {
        int64_t start, len;
        if ((rc = p->source.reserve(p->source.ctx, &start, &len)) == 0) {
            p->next = start;
            p->block_end = start + len;
            KIQ_DEBUG("producer ids %" PRId64 "..%" PRId64 " given", p->next, p->block_end - 1);
        }
    } else if (p->next >= p->block_end) {
        if (p->block_end > INT64_MAX - p->block) {
            rc = kiq_error_set("producer ids are exhausted");
        } else if ((rc = write_file(p, p->block_end + p->block)) == 0) {
            p->next = p->block_end;
            p->block_end += p->block;
            KIQ_DEBUG("producer ids %" PRId64 "..%" PRId64 " reserved", p->next, p->block_end - 1);
        }
    }
    if (rc == 0) *id = p->next++;
    pthread_mutex_unlock(&p->mu);
    return rc;
}
