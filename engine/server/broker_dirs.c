#include "server/broker_dirs.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "core/uuid.h"
#include "log/file_io.h"

#define CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"

/* meta.properties as Kafka keeps it: ties each directory to a cluster
 * and a broker id, and gives the cluster its id. Every directory that has
 * one must agree (a directory from another broker or cluster is refused);
 * the others get the same. */

static int read_meta(kiq_broker_t *b, kiq_broker_log_dir_t *d, const char **cluster_from)
{
    char path[PATH_MAX], line[256];
    snprintf(path, sizeof path, "%s/meta.properties", d->path);
    FILE *f = fopen(path, "r");
    if (!f) {
        d->fresh = true;
        return 0;
    }
    int id = -1;
    char cluster[64] = "", dir_id[64] = "";
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "broker.id=%d", &id);
        sscanf(line, "cluster.id=%63s", cluster);
        sscanf(line, "directory.id=%63s", dir_id);
    }
    fclose(f);
    /* one written before directory ids gets one now */
    if (kiq_uuid_from_base64(dir_id, &d->dir_id) != 0 || kiq_uuid_is_zero(&d->dir_id)) d->rewrite_meta = true;
    if (id != b->node_id) return kiq_error_set("%s belongs to broker.id %d, not %d", path, id, b->node_id);
    if (strlen(cluster) != 22) return kiq_error_set("%s has no valid cluster.id", path);
    if (*cluster_from && strcmp(cluster, b->cluster_id) != 0)
        return kiq_error_set("%s has cluster.id %s but %s/meta.properties has %s: the log directories belong to different clusters",
                             path, cluster, *cluster_from, b->cluster_id);
    if (!*cluster_from) {
        memcpy(b->cluster_id, cluster, 23);
        *cluster_from = d->path;
    }
    return 0;
}

static int write_meta(kiq_broker_t *b, const kiq_broker_log_dir_t *d)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/meta.properties", d->path);
    FILE *f = fopen(path, "w");
    if (!f) return kiq_error_errno("cannot write %s", path);
    char dir_id[32];
    kiq_uuid_to_base64(&d->dir_id, dir_id);
    fprintf(f, "#kafkaiq\nversion=0\nbroker.id=%d\ncluster.id=%s\ndirectory.id=%s\n", b->node_id, b->cluster_id,
            dir_id);
    int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : kiq_error_errno("cannot write %s", path);
    fclose(f);
    return rc;
}

static int load_meta(kiq_broker_t *b)
{
    const char *cluster_from = NULL;
    for (int i = 0; i < b->nlog_dirs; i++)
        if (read_meta(b, &b->log_dirs[i], &cluster_from) != 0) return -1;
    if (!cluster_from) {
        kiq_uuid_t u;
        if (b->cluster) {
            /* Every broker of a cluster must show one cluster id; Kafka has
             * its nodes formatted with it. Brokers configured with the same
             * controller derive the same one instead. */
            const char *voters = kiq_config_str(b->config, KIQ_CFG_CONTROLLER_QUORUM_VOTERS);
            for (int half = 0; half < 2; half++) {
                uint64_t h = 1469598103934665603ULL ^ (uint64_t)(half + 1);
                for (const char *p = voters; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
                memcpy(u.b + 8 * half, &h, 8);
            }
        } else if (kiq_uuid_random(&u) != 0) {
            return -1;
        }
        kiq_uuid_to_base64(&u, b->cluster_id);
    }
    for (int i = 0; i < b->nlog_dirs; i++) {
        kiq_broker_log_dir_t *d = &b->log_dirs[i];
        if (!d->fresh && !d->rewrite_meta) continue;
        if (kiq_uuid_random(&d->dir_id) != 0) return kiq_error_set("no randomness");
        if (write_meta(b, d) != 0) return -1;
    }
    return 0;
}

/* Kafka writes {"version":0,"brokerEpoch":N} into its clean-shutdown
 * file; a cluster broker adds its incarnation id. */
static void write_incarnation(const kiq_broker_t *b, int fd)
{
    char id[23], buf[160];
    kiq_uuid_to_base64(&b->incarnation, id);
    int n = snprintf(buf, sizeof buf, "{\"version\":0,\"brokerEpoch\":%lld,\"incarnationId\":\"%s\"}\n",
                     (long long)b->last_broker_epoch, id);
    if (write(fd, buf, (size_t)n) != n) KIQ_WARN("cannot write the clean-shutdown marker's incarnation");
}

bool kiq_broker_dirs_read_incarnation(kiq_broker_t *b)
{
    kiq_uuid_t found;
    bool have = false;
    for (int i = 0; i < b->nlog_dirs; i++) {
        char marker[PATH_MAX], buf[256];
        snprintf(marker, sizeof marker, "%s/" CLEAN_SHUTDOWN_FILE, b->log_dirs[i].path);
        int fd = b->log_dirs[i].clean_shutdown ? open(marker, O_RDONLY | O_CLOEXEC) : -1;
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0) close(fd);
        if (n <= 0) return false;
        buf[n] = 0;
        const char *p = strstr(buf, "\"incarnationId\":\"");
        char id[23];
        kiq_uuid_t u;
        if (!p || sscanf(p + 17, "%22[A-Za-z0-9_-]", id) != 1 || kiq_uuid_from_base64(id, &u) != 0) return false;
        if (have && memcmp(&u, &found, sizeof u) != 0) return false;
        found = u;
        have = true;
    }
    if (have) b->incarnation = found;
    return have;
}

static int lock_dir(kiq_broker_log_dir_t *d)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.lock", d->path);
    d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (d->lock_fd < 0) return kiq_error_errno("cannot open %s", path);
    if (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return kiq_error_set("%s is in use by another broker", d->path);
    return 0;
}

int kiq_broker_dirs_parse(kiq_broker_t *b, const char *list)
{
    int n = 1;
    for (const char *c = list; *c; c++) n += *c == ',';
    b->log_dirs = calloc((size_t)n, sizeof *b->log_dirs);
    if (!b->log_dirs) return kiq_error_set("out of memory");
    const char *p = list;
    for (int i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        const char *s = p, *e = end;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        kiq_broker_log_dir_t *d = &b->log_dirs[i];
        d->lock_fd = -1;
        b->nlog_dirs = i + 1;
        if (!(d->path = strndup(s, (size_t)(e - s))) || !(d->health = kiq_log_dir_new(d->path)))
            return kiq_error_set("out of memory");
        p = *end ? end + 1 : end;
    }
    return 0;
}

kiq_broker_log_dir_t *kiq_broker_find_log_dir(kiq_broker_t *b, const char *path)
{
    for (int i = 0; i < b->nlog_dirs; i++)
        if (strcmp(b->log_dirs[i].path, path) == 0) return &b->log_dirs[i];
    return NULL;
}

/* Cluster mode: producer ids come in blocks from the controller. */

int kiq_broker_dirs_claim(kiq_broker_t *b)
{
    for (int i = 0; i < b->nlog_dirs; i++)
        if (kiq_mkdir_p(b->log_dirs[i].path) != 0 || lock_dir(&b->log_dirs[i]) != 0) return -1;
    return load_meta(b);
}

bool kiq_broker_dir_marked_clean(const kiq_broker_log_dir_t *d)
{
    char marker[PATH_MAX];
    snprintf(marker, sizeof marker, "%s/" CLEAN_SHUTDOWN_FILE, d->path);
    return access(marker, F_OK) == 0;
}

int kiq_broker_dirs_unmark(kiq_broker_t *b)
{
    char marker[PATH_MAX];
    for (int i = 0; i < b->nlog_dirs; i++) {
        snprintf(marker, sizeof marker, "%s/" CLEAN_SHUTDOWN_FILE, b->log_dirs[i].path);
        if (b->log_dirs[i].clean_shutdown && unlink(marker) != 0)
            return kiq_error_errno("cannot remove %s", marker);
    }
    return 0;
}

bool kiq_broker_dirs_mark_clean(kiq_broker_t *b)
{
    bool all_marked = true;
    for (int i = 0; i < b->nlog_dirs; i++) {
        if (kiq_log_dir_offline(b->log_dirs[i].health)) {
            all_marked = false;
            continue;
        }
        char marker[PATH_MAX];
        snprintf(marker, sizeof marker, "%s/" CLEAN_SHUTDOWN_FILE, b->log_dirs[i].path);
        int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (b->cluster) write_incarnation(b, fd);
            fsync(fd);
            close(fd);
            kiq_fsync_dir(b->log_dirs[i].path);
        }
    }
    return all_marked;
}
