#include "server/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "api/api.h"
#include "core/error.h"
#include "core/log.h"
#include "core/uuid.h"
#include "log/file_io.h"

#define CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"

static int parse_listener(const char *l, char *host, size_t hn, int *port)
{
    const char *hp = l + strlen("PLAINTEXT://");
    const char *colon = strrchr(hp, ':');
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || p < 0 || p > 65535)
        return kiq_error_set("listeners: bad port in '%s'", l);
    size_t n = (size_t)(colon - hp);
    if (n >= hn) return kiq_error_set("listeners: host too long in '%s'", l);
    memcpy(host, hp, n);
    host[n] = '\0';
    *port = (int)p;
    return 0;
}

/* meta.properties as Kafka keeps it: ties the directory to a cluster and a
 * broker id, and gives the cluster its id. */
static int load_meta(kiq_broker_t *b)
{
    char path[PATH_MAX], line[256];
    snprintf(path, sizeof path, "%s/meta.properties", b->log_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        int id = -1;
        char cluster[64] = "";
        while (fgets(line, sizeof line, f)) {
            sscanf(line, "broker.id=%d", &id);
            sscanf(line, "cluster.id=%63s", cluster);
        }
        fclose(f);
        if (id != b->node_id)
            return kiq_error_set("%s belongs to broker.id %d, not %d", path, id, b->node_id);
        if (strlen(cluster) != 22) return kiq_error_set("%s has no valid cluster.id", path);
        memcpy(b->cluster_id, cluster, 23);
        return 0;
    }
    b->fresh_dir = true;
    kiq_uuid_t u;
    if (kiq_uuid_random(&u) != 0) return -1;
    kiq_uuid_to_base64(&u, b->cluster_id);
    f = fopen(path, "w");
    if (!f) return kiq_error_errno("cannot write %s", path);
    fprintf(f, "#kafkaiq\nversion=0\nbroker.id=%d\ncluster.id=%s\n", b->node_id, b->cluster_id);
    int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : kiq_error_errno("cannot write %s", path);
    fclose(f);
    return rc;
}

static int lock_dir(kiq_broker_t *b)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.lock", b->log_dir);
    b->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (b->lock_fd < 0) return kiq_error_errno("cannot open %s", path);
    if (flock(b->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return kiq_error_set("%s is in use by another broker", b->log_dir);
    return 0;
}

kiq_broker_t *kiq_broker_new(const kiq_config_t *config)
{
    if (kiq_config_validate(config) != 0) return NULL;
    kiq_broker_t *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->lock_fd = -1;
    b->config = kiq_config_copy(config);
    b->log_dir = strdup(kiq_config_str(config, KIQ_CFG_LOG_DIRS));
    b->node_id = (int32_t)kiq_config_int(config, KIQ_CFG_BROKER_ID);
    if (!b->config || !b->log_dir ||
        parse_listener(kiq_config_str(config, KIQ_CFG_LISTENERS), b->host, sizeof b->host,
                       &b->port) != 0)
        goto fail;
    const char *adv = kiq_config_str(config, KIQ_CFG_ADVERTISED_LISTENERS);
    if (*adv) {
        if (strncmp(adv, "PLAINTEXT://", 12) != 0 || !strrchr(adv + 12, ':')) {
            kiq_error_set("advertised.listeners: '%s' must look like PLAINTEXT://host:port", adv);
            goto fail;
        }
        if (parse_listener(adv, b->advertised_host, sizeof b->advertised_host,
                           &b->advertised_port) != 0)
            goto fail;
    }
    if (kiq_mkdir_p(b->log_dir) != 0 || lock_dir(b) != 0 || load_meta(b) != 0) goto fail;
    b->log_dir_health = kiq_log_dir_new(b->log_dir);
    if (!b->log_dir_health) goto fail;
    kiq_log_config_default(&b->log_cfg);
    b->log_cfg.segment_bytes = (int32_t)kiq_config_int(config, KIQ_CFG_LOG_SEGMENT_BYTES);
    b->log_cfg.index_interval_bytes =
        (int32_t)kiq_config_int(config, KIQ_CFG_LOG_INDEX_INTERVAL_BYTES);
    b->log_cfg.segment_index_bytes =
        (int32_t)kiq_config_int(config, KIQ_CFG_LOG_INDEX_SIZE_MAX_BYTES);
    if (kiq_log_config_check(&b->log_cfg) != 0) goto fail;
    b->hooks = kiq_hooks_new(kiq_config_int(config, KIQ_CFG_HOOK_MAX_INSTRUCTIONS));
    if (!b->hooks) {
        kiq_error_set("out of memory");
        goto fail;
    }
    return b;
fail:
    kiq_broker_free(b);
    return NULL;
}

/* Processor thread: refuse what Kafka refuses before queueing. */
static int admit(void *ctx, kiq_request_t *r)
{
    const kiq_api_codec_t *c = kiq_api_codec(r->header.api_key);
    if (!c || !kiq_api_handler(r->header.api_key)) {
        KIQ_WARN("connection %s: unknown api key %d (version %d, correlation id %d); closing",
                 r->peer, r->header.api_key, r->header.api_version, r->header.correlation_id);
        return -1;
    }
    int16_t v = r->header.api_version;
    if ((v < c->min_version || v > c->max_version) && c->key != KIQ_API_API_VERSIONS) {
        KIQ_WARN("connection %s: unsupported %s version %d (supported %d-%d); closing", r->peer,
                 c->name, v, c->min_version, c->max_version);
        return -1;
    }
    r->codec = c;
    return 0;
}

/* Processor thread: a request is finished. */
static void request_done(void *ctx, const kiq_request_t *r)
{
    kiq_broker_t *b = ctx;
    kiq_request_stats_record(&b->stats, r);
}

static void *io_thread_main(void *arg)
{
    kiq_broker_t *b = arg;
    static atomic_int next_id;
    char name[24];
    snprintf(name, sizeof name, "io-%d", atomic_fetch_add(&next_id, 1));
    kiq_log_thread_name(name);
    kiq_request_t *r;
    while ((r = kiq_request_queue_pop(b->queue))) kiq_broker_handle(b, r);
    return NULL;
}

int kiq_broker_start(kiq_broker_t *b)
{
    char marker[PATH_MAX];
    snprintf(marker, sizeof marker, "%s/" CLEAN_SHUTDOWN_FILE, b->log_dir);
    b->clean_shutdown = access(marker, F_OK) == 0;
    b->log_cfg.clean_shutdown = b->clean_shutdown;
    if (!b->clean_shutdown && !b->fresh_dir)
        KIQ_INFO("no clean-shutdown marker in %s: recovering logs", b->log_dir);
    /* A restart is the way back for a failed directory: it is tried again. */
    kiq_log_dir_reset(b->log_dir_health);
    b->topics = kiq_topics_open(b->log_dir, &b->log_cfg);
    if (!b->topics) return -1;
    kiq_topics_set_log_dir(b->topics, b->log_dir_health);
    /* from now on the logs are open and a crash is unclean */
    if (b->clean_shutdown && unlink(marker) != 0)
        return kiq_error_errno("cannot remove %s", marker);

    b->retention = kiq_log_retention_new(b->topics, b->config);
    if (!b->retention) return -1;
    b->cleaner = kiq_log_cleaner_new(b->topics, b->config);
    if (!b->cleaner) return -1;
    b->flusher = kiq_log_flusher_new(b->topics);
    if (!b->flusher) return -1;

    b->purgatory = kiq_purgatory_new();
    b->queue = kiq_request_queue_new((size_t)kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUESTS));
    if (!b->purgatory || !b->queue) return kiq_error_set("out of memory");
    kiq_topics_set_append_listener(b->topics, kiq_purgatory_poke, b->purgatory);

    b->nprocessors = (int)kiq_config_int(b->config, KIQ_CFG_NUM_NETWORK_THREADS);
    b->processors = calloc((size_t)b->nprocessors, sizeof *b->processors);
    if (!b->processors) return kiq_error_set("out of memory");
    for (int i = 0; i < b->nprocessors; i++) {
        kiq_processor_config_t pc = {
            .id = i,
            .max_request_bytes = (size_t)kiq_config_int(b->config, KIQ_CFG_SOCKET_REQUEST_MAX_BYTES),
            .queue = b->queue,
            .admit = admit,
            .done = request_done,
            .admit_ctx = b,
        };
        b->processors[i] = kiq_processor_new(&pc);
        if (!b->processors[i]) return -1;
        kiq_request_queue_on_space(b->queue, kiq_processor_queue_space, b->processors[i]);
    }
    b->acceptor = kiq_acceptor_new(b->host, b->port, b->processors, b->nprocessors);
    if (!b->acceptor) return -1;
    b->bound_port = kiq_acceptor_port(b->acceptor);
    b->port = b->bound_port; /* a restart comes back on the same port */
    memset(&b->stats, 0, sizeof b->stats);
    if (!b->advertised_host[0]) {
        snprintf(b->advertised_host, sizeof b->advertised_host, "%s", *b->host ? b->host : "127.0.0.1");
        b->advertised_port = b->bound_port;
    }

    if (kiq_purgatory_start(b->purgatory) != 0) return -1;
    b->nio_threads = (int)kiq_config_int(b->config, KIQ_CFG_NUM_IO_THREADS);
    b->io_threads = calloc((size_t)b->nio_threads, sizeof *b->io_threads);
    if (!b->io_threads) return kiq_error_set("out of memory");
    for (int i = 0; i < b->nio_threads; i++) {
        if (pthread_create(&b->io_threads[i], NULL, io_thread_main, b) != 0) {
            b->nio_threads = i;
            return kiq_error_errno("cannot start I/O thread");
        }
    }
    for (int i = 0; i < b->nprocessors; i++)
        if (kiq_processor_start(b->processors[i]) != 0) return -1;
    if (kiq_acceptor_start(b->acceptor) != 0) return -1;
    b->running = true;
    KIQ_INFO("[KafkaIQ broker %d] started: listening on %s:%d, data in %s, cluster %s", b->node_id,
             *b->host ? b->host : "*", b->bound_port, b->log_dir, b->cluster_id);
    return 0;
}

int kiq_broker_port(const kiq_broker_t *b) { return b->bound_port; }

int kiq_broker_inject_disk_fault(kiq_broker_t *b, int err, int64_t after_bytes, bool fsyncs)
{
    return kiq_log_dir_inject_fault(b->log_dir_health, err, after_bytes, fsyncs);
}

void kiq_broker_clear_disk_fault(kiq_broker_t *b) { kiq_log_dir_clear_fault(b->log_dir_health); }

static void broker_shutdown(kiq_broker_t *b, bool clean);

void kiq_broker_stop(kiq_broker_t *b) { broker_shutdown(b, true); }

void kiq_broker_kill(kiq_broker_t *b) { broker_shutdown(b, false); }

static void broker_shutdown(kiq_broker_t *b, bool clean)
{
    if (!b) return;
    /* After a disk failure, the next start recovers what reached the disk. */
    bool mark_clean = b->running && clean && !kiq_log_dir_offline(b->log_dir_health);
    if (b->running && !clean) KIQ_WARN("[KafkaIQ broker %d] killed: no clean shutdown", b->node_id);
    b->running = false;
    /* Stop taking work, answer what is parked, drain the handlers, then the
     * network, and only then close the logs and mark the shutdown clean. */
    kiq_acceptor_free(b->acceptor);
    b->acceptor = NULL;
    kiq_log_retention_free(b->retention);
    b->retention = NULL;
    kiq_log_cleaner_free(b->cleaner);
    b->cleaner = NULL;
    kiq_log_flusher_free(b->flusher);
    b->flusher = NULL;
    if (b->purgatory) kiq_purgatory_stop(b->purgatory);
    if (b->queue) kiq_request_queue_close(b->queue);
    for (int i = 0; i < b->nio_threads; i++) pthread_join(b->io_threads[i], NULL);
    b->nio_threads = 0;
    for (int i = 0; i < b->nprocessors; i++) kiq_processor_free(b->processors[i]);
    free(b->processors);
    b->processors = NULL;
    b->nprocessors = 0;
    kiq_request_queue_free(b->queue);
    b->queue = NULL;
    kiq_purgatory_free(b->purgatory);
    b->purgatory = NULL;
    if (b->topics) {
        kiq_topics_free(b->topics);
        b->topics = NULL;
        if (mark_clean) {
            char marker[PATH_MAX];
            snprintf(marker, sizeof marker, "%s/" CLEAN_SHUTDOWN_FILE, b->log_dir);
            int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd >= 0) {
                fsync(fd);
                close(fd);
                kiq_fsync_dir(b->log_dir);
            }
            KIQ_INFO("[KafkaIQ broker %d] shut down cleanly", b->node_id);
        }
    }
    free(b->io_threads);
    b->io_threads = NULL;
}

void kiq_broker_free(kiq_broker_t *b)
{
    if (!b) return;
    kiq_broker_stop(b);
    if (b->lock_fd >= 0) close(b->lock_fd);
    kiq_config_free(b->config);
    kiq_hooks_free(b->hooks); /* the threads that ran hooks are joined */
    kiq_log_dir_free(b->log_dir_health);
    free(b->log_dir);
    free(b);
}
