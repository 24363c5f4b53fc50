/* The log manager (log/topics.h): the log directories, where each
 * partition's log lives, loading and recovering them at open, hosting and
 * unhosting them, and Kafka's checkpoint files. */
#include "log/topics_internal.h"

/* Frees the topic's retired logs: closed cleanly when kept on disk
 * (their directory's health given back first, so the close writes what a
 * clean close writes), their files removed too when remove. */
void kiq_lm_free_retired(kiq_topic_t *topic, bool remove)
{
    while (topic->retired) {
        kiq_retired_log_t *e = topic->retired;
        topic->retired = e->next;
        if (e->deleted) {
            kiq_partition_log_free(e->log); /* offline: writes nothing */
        } else if (remove) {
            if (kiq_partition_log_delete(e->log) != 0)
                KIQ_ERROR("deleting %s-%d: %s", topic->name, e->partition, kiq_error_get());
        } else {
            kiq_partition_log_set_log_dir(e->log, e->home);
            kiq_partition_log_free(e->log);
        }
        free(e);
    }
}

/* Under the registry's write lock (or before it is shared): Kafka's rule,
 * the online directory with the fewest partitions, the first on a tie;
 * -1 when every directory is offline. */
int kiq_lm_pick_dir(const kiq_topics_t *t)
{
    int best = -1;
    for (int i = 0; i < t->ndirs; i++)
        if (!kiq_log_dir_offline(t->dirs[i].health) &&
            (best < 0 || t->dirs[i].npartitions < t->dirs[best].npartitions))
            best = i;
    return best;
}

/* Same lock (and the topic's host_mu once it is shared): puts the
 * partition in directory d and counts it there. */
int kiq_lm_place_partition(kiq_topics_t *t, kiq_partition_t *p, int d)
{
    char *dir = strdup(t->dirs[d].path);
    if (!dir) return kiq_error_set("out of memory");
    free(p->dir);
    p->dir = dir;
    atomic_store(&p->dir_index, d);
    t->dirs[d].npartitions++;
    return 0;
}

/* Same locks: the partition no longer counts for placement (its dir
 * stays, for a log taken back). */
void kiq_lm_unplace_partition(kiq_topics_t *t, kiq_partition_t *p)
{
    int d = atomic_load(&p->dir_index);
    if (d < 0) return;
    t->dirs[d].npartitions--;
    atomic_store(&p->dir_index, -1);
}

/* Same lock: the topic's partitions no longer count for placement. */
void kiq_lm_unplace_topic(kiq_topics_t *t, const kiq_topic_t *topic)
{
    int32_t n = topic->npartitions;
    for (int32_t i = 0; i < n; i++) {
        int d = atomic_load(&topic->partitions[i]->dir_index);
        if (d >= 0) t->dirs[d].npartitions--;
    }
}

int kiq_lm_partition_path(char *buf, size_t n, const kiq_partition_t *p)
{
    char name[300];
    if (kiq_log_dir_name(name, sizeof name, p->topic->name, p->index) != 0) return -1;
    if ((size_t)snprintf(buf, n, "%s/%s", p->dir, name) >= n)
        return kiq_error_set("path too long for %s", name);
    return 0;
}

/* partition.metadata, as Kafka writes it: the topic id, so a topic deleted
 * and re-created under the same name is told apart. */
int kiq_lm_write_partition_metadata(const char *pdir, const kiq_uuid_t *id)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 40], b64[23];
    snprintf(path, sizeof path, "%s/partition.metadata", pdir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    kiq_uuid_to_base64(id, b64);
    FILE *f = fopen(tmp, "w");
    if (!f) return kiq_error_errno("cannot write %s", tmp);
    fprintf(f, "version: 0\ntopic_id: %s\n", b64);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fclose(f);
        return kiq_error_errno("cannot write %s", tmp);
    }
    fclose(f);
    if (rename(tmp, path) != 0) return kiq_error_errno("cannot rename %s", tmp);
    return 0;
}

static int read_partition_metadata(const char *pdir, kiq_uuid_t *id)
{
    char path[PATH_MAX + 32], line[128], b64[64] = "";
    snprintf(path, sizeof path, "%s/partition.metadata", pdir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "topic_id: %63s", b64) == 1) break;
    fclose(f);
    return b64[0] ? kiq_uuid_from_base64(b64, id) : -1;
}

/* The broker's log settings with the topic's own on top. */
void kiq_lm_topic_log_config(kiq_topics_t *t, const kiq_topic_configs_t *c, kiq_log_config_t *out)
{
    pthread_mutex_lock(&t->log_cfg_mu);
    *out = t->log_cfg;
    pthread_mutex_unlock(&t->log_cfg_mu);
    int64_t v = kiq_topic_configs_int(c, KIQ_TCFG_SEGMENT_BYTES, out->segment_bytes);
    out->segment_bytes = (int32_t)(v < LOG_MIN_SEGMENT_BYTES ? LOG_MIN_SEGMENT_BYTES : v);
    v = kiq_topic_configs_int(c, KIQ_TCFG_SEGMENT_INDEX_BYTES, out->segment_index_bytes);
    out->segment_index_bytes = (int32_t)(v < LOG_MIN_INDEX_BYTES ? LOG_MIN_INDEX_BYTES : v);
    out->index_interval_bytes =
        (int32_t)kiq_topic_configs_int(c, KIQ_TCFG_INDEX_INTERVAL_BYTES, out->index_interval_bytes);
}

/* Under the topic's config_mu (or before the topic is shared): the values
 * the request path reads without the lock. */
void kiq_lm_apply_hot_configs(kiq_topic_t *topic)
{
    const kiq_topic_configs_t *c = &topic->configs;
    atomic_store(&topic->max_message_bytes, (int)kiq_topic_configs_int(c, KIQ_TCFG_MAX_MESSAGE_BYTES, -1));
    const char *ts = c->value[KIQ_TCFG_MESSAGE_TIMESTAMP_TYPE];
    atomic_store(&topic->log_append_time, ts ? strcmp(ts, "LogAppendTime") == 0 : -1);
    atomic_store(&topic->timestamp_before_max_ms,
                 kiq_topic_configs_int(c, KIQ_TCFG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS, -1));
    atomic_store(&topic->timestamp_after_max_ms, kiq_topic_configs_int(c, KIQ_TCFG_MESSAGE_TIMESTAMP_AFTER_MAX_MS, -1));
    atomic_store(&topic->min_insync_replicas, kiq_topic_configs_int(c, KIQ_TCFG_MIN_INSYNC_REPLICAS, -1));
    atomic_store(&topic->compacted,
                 c->value[KIQ_TCFG_CLEANUP_POLICY] ? kiq_topic_config_policy_has(NULL, c, "compact") : -1);
    atomic_store(&topic->max_decompressed_message_bytes,
                 kiq_topic_configs_int(c, KIQ_TCFG_MAX_DECOMPRESSED_MESSAGE_BYTES, -1));
}

/* At open: where recovery of a partition starts; 0 (scan everything, as
 * Kafka does) when the checkpoint does not name it. */
static int64_t saved_recovery_point(const kiq_topics_t *t, const kiq_topic_t *topic, int32_t partition)
{
    int d = topic->partitions[partition]->dir_index;
    for (size_t i = 0; i < t->nrps; i++)
        if (t->rps[i].partition == partition && t->rps[i].dir == d && strcmp(t->rps[i].topic, topic->name) == 0)
            return t->rps[i].offset;
    return 0;
}

/* Opens the log of every placed partition (the others stay unhosted).
 * Also sets the topic's hot config values (before the topic is shared). */
int kiq_lm_open_partition_logs(kiq_topics_t *t, kiq_topic_t *topic, bool create)
{
    kiq_lm_apply_hot_configs(topic);
    kiq_log_config_t cfg;
    kiq_lm_topic_log_config(t, &topic->configs, &cfg);
    int32_t n = topic->npartitions;
    for (int32_t i = 0; i < n; i++) {
        int di = atomic_load(&topic->partitions[i]->dir_index);
        if (di < 0) continue;
        char pdir[PATH_MAX];
        const topics_dir_t *d = &t->dirs[di];
        if (kiq_lm_partition_path(pdir, sizeof pdir, topic->partitions[i]) != 0) return -1;
        int64_t rp = create ? -1 : saved_recovery_point(t, topic, i);
        cfg.clean_shutdown = d->clean_shutdown;
        /* The id first: a crash between the two leaves a directory whose
         * topic id is known, never one with segments and no id. */
        if (create && (kiq_mkdir_p(pdir) != 0 || kiq_lm_write_partition_metadata(pdir, &topic->id) != 0)) return -1;
        kiq_partition_log_t *l = kiq_partition_log_open_at(pdir, &cfg, rp);
        if (!l) return -1;
        atomic_store(&topic->partitions[i]->log, l);
        kiq_partition_log_set_log_dir(l, d->health);
    }
    return 0;
}

struct found_partition {
    char topic[256];
    int32_t partition;
    int dir;
};

static int found_cmp(const void *a, const void *b)
{
    const struct found_partition *x = a, *y = b;
    int c = strcmp(x->topic, y->topic);
    if (c) return c;
    return x->partition < y->partition ? -1 : x->partition > y->partition;
}

/* Adds the partition directories of log directory d to *entries. */
static int scan_dir(kiq_topics_t *t, int d, struct found_partition **entries, size_t *n, size_t *cap)
{
    DIR *dh = opendir(t->dirs[d].path);
    if (!dh) return kiq_error_errno("cannot open log directory %s", t->dirs[d].path);
    struct dirent *de;
    while ((de = readdir(dh))) {
        struct found_partition e = {.dir = d};
        if (de->d_name[0] == '.') continue;
        if (kiq_log_dir_parse(de->d_name, e.topic, sizeof e.topic, &e.partition) != 0) continue;
        /* the controller's metadata log lives beside the partitions, as in Kafka */
        if (strcmp(e.topic, KIQ_METADATA_TOPIC) == 0) continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            struct found_partition *ne = realloc(*entries, nc * sizeof *ne);
            if (!ne) {
                closedir(dh);
                return kiq_error_set("out of memory");
            }
            *entries = ne;
            *cap = nc;
        }
        (*entries)[(*n)++] = e;
    }
    closedir(dh);
    return 0;
}

/* Loads the topics of entries[0..n), one topic's partitions sorted. A
 * partition missing on disk is placed as a new one would be, or stays
 * unhosted in a partial registry. */
static int load_topic(kiq_topics_t *t, const struct found_partition *e, size_t n)
{
    const char *name = e[0].topic;
    kiq_topic_t *topic = kiq_lm_topic_alloc(t, name, e[n - 1].partition + 1);
    if (!topic) return kiq_error_set("out of memory");
    for (size_t j = 0; j < n; j++)
        if (kiq_lm_place_partition(t, topic->partitions[e[j].partition], e[j].dir) != 0) goto fail;
    for (int32_t p = 0; p < topic->npartitions && !t->partial; p++) {
        int d = kiq_lm_pick_dir(t);
        if (topic->partitions[p]->dir_index < 0 && kiq_lm_place_partition(t, topic->partitions[p], d < 0 ? 0 : d) != 0)
            goto fail;
    }
    char pdir[PATH_MAX];
    bool have_id = false;
    for (int32_t p = 0; p < topic->npartitions && !have_id; p++)
        if (topic->partitions[p]->dir_index >= 0 && kiq_lm_partition_path(pdir, sizeof pdir, topic->partitions[p]) == 0 &&
            read_partition_metadata(pdir, &topic->id) == 0)
            have_id = true;
    if (!have_id) {
        /* Written by a broker older than the id, or by hand: one broker's
         * own from now on, a cluster's controller's once it names one. */
        kiq_uuid_random(&topic->id);
        topic->id_guessed = true;
        KIQ_WARN("topic %s has no partition.metadata: given a new topic id", name);
    }
    if (kiq_topic_config_store_load(t->store, name, &topic->configs) != 0)
        KIQ_ERROR("topic %s starts with default configs: %s", name, kiq_error_get());
    if (kiq_lm_open_partition_logs(t, topic, !have_id) != 0) goto fail;
    bool found;
    int at = kiq_lm_find_index(t, KIQ_STR(topic->name), &found);
    if (kiq_lm_insert_topic(t, topic, at) != 0) goto fail;
    KIQ_INFO("loaded topic %s with %d partition(s)", topic->name, topic->npartitions);
    return 0;
fail:
    KIQ_ERROR("cannot load topic %s: %s", name, kiq_error_get());
    kiq_lm_topic_destroy(topic);
    return -1;
}

/* Groups the partition directories of every log directory by topic; the
 * same partition in two directories is refused (which copy is the real
 * one is not this broker's guess to make). */
static int load_existing(kiq_topics_t *t)
{
    struct found_partition *entries = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (int d = 0; d < t->ndirs && rc == 0; d++) rc = scan_dir(t, d, &entries, &n, &cap);
    if (rc == 0 && n > 1) qsort(entries, n, sizeof *entries, found_cmp);
    for (size_t i = 1; i < n && rc == 0; i++)
        if (found_cmp(&entries[i - 1], &entries[i]) == 0)
            rc = kiq_error_set("partition %s-%d is in two log directories, %s and %s: remove one copy",
                               entries[i].topic, entries[i].partition, t->dirs[entries[i - 1].dir].path,
                               t->dirs[entries[i].dir].path);
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i + 1;
        while (j < n && strcmp(entries[j].topic, entries[i].topic) == 0) j++;
        rc = load_topic(t, &entries[i], j - i);
        i = j;
    }
    free(entries);
    return rc;
}

/* At open, before the registry is shared: applies each "topic partition
 * offset" line of directory d's checkpoint `file` to the log it names
 * (when that log lives in d); apply returns 0 or -1 with the reason. */
static void load_offset_checkpoint(kiq_topics_t *t, int d, const char *file, const char *what,
                                   int (*apply)(kiq_partition_log_t *l, int64_t offset))
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", t->dirs[d].path, file);
    FILE *f = fopen(path, "r");
    if (!f) return;
    int version = -1, count = -1;
    if (fscanf(f, "%d %d", &version, &count) != 2 || version != 0 || count < 0) {
        KIQ_WARN("%s: unreadable header; %s not restored", path, what);
        fclose(f);
        return;
    }
    char name[256];
    int32_t partition;
    long long offset;
    for (int i = 0; i < count; i++) {
        if (fscanf(f, "%255s %" SCNd32 " %lld", name, &partition, &offset) != 3) {
            KIQ_WARN("%s: entry %d is unreadable; the rest are ignored", path, i + 1);
            break;
        }
        bool found;
        int at = kiq_lm_find_index(t, KIQ_STR(name), &found);
        if (!found || partition < 0 || partition >= t->topics[at]->npartitions ||
            t->topics[at]->partitions[partition]->dir_index != d)
            continue;
        kiq_partition_log_t *l = atomic_load(&t->topics[at]->partitions[partition]->log);
        if (l && apply(l, offset) != 0)
            KIQ_WARN("%s-%d: saved %s %lld not applied: %s", name, partition, what, offset, kiq_error_get());
    }
    fclose(f);
}

/* A saved log start above a log's first offset is honoured (reads below
 * it are then out of range). */
static int apply_log_start(kiq_partition_log_t *l, int64_t offset)
{
    return kiq_partition_log_advance_start(l, offset) == 0 ? 0 : -1;
}

/* A saved high watermark, clamped to what the log holds. */
static int apply_high_watermark(kiq_partition_log_t *l, int64_t offset)
{
    kiq_partition_log_set_high_watermark(l, offset);
    return 0;
}

/* Kafka's offset checkpoint format, written to a temporary file, synced
 * and renamed over `file`, so a crash leaves the old or the new one. */
static int write_checkpoint(kiq_topics_t *t, int d, const char *file, int64_t (*get)(kiq_partition_log_t *l))
{
    const char *dir = t->dirs[d].path;
    int count;
    kiq_topic_t **list = kiq_topics_list(t, &count);
    if (!list) return kiq_error_set("out of memory");
    char path[PATH_MAX], tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, file) >= sizeof tmp) {
        kiq_topics_list_free(list, count);
        return kiq_error_set("log directory path too long");
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    pthread_mutex_lock(&t->checkpoint_mu);
    /* The lines first: the count heads the file, and partitions may be
     * hosted or unhosted meanwhile. Unhosted partitions are not named. */
    int rc = -1, n = 0;
    char *lines = NULL;
    size_t len = 0;
    FILE *f = NULL, *mem = open_memstream(&lines, &len);
    if (!mem) {
        kiq_error_errno("cannot write %s", path);
        goto out;
    }
    for (int i = 0; i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&list[i]->partitions[p]->log);
            if (!l || atomic_load(&list[i]->partitions[p]->dir_index) != d) continue;
            fprintf(mem, "%s %d %lld\n", list[i]->name, p, (long long)get(l));
            n++;
        }
    if (fclose(mem) != 0) {
        kiq_error_set("out of memory writing %s", path);
        goto out;
    }
    if (!(f = fopen(tmp, "w"))) {
        kiq_error_errno("cannot write %s", tmp);
        goto out;
    }
    fprintf(f, "0\n%d\n", n);
    bool ok = fwrite(lines, 1, len, f) == len;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) {
        kiq_error_errno("cannot write %s", path);
        unlink(tmp);
        goto out;
    }
    kiq_fsync_dir(dir);
    rc = 0;
out:
    pthread_mutex_unlock(&t->checkpoint_mu);
    kiq_topics_list_free(list, count);
    free(lines);
    return rc;
}

/* Every directory's file, even when one fails. */
static int write_checkpoints(kiq_topics_t *t, const char *file, int64_t (*get)(kiq_partition_log_t *l))
{
    int rc = 0;
    for (int d = 0; d < t->ndirs; d++)
        if (write_checkpoint(t, d, file, get) != 0) rc = -1;
    return rc;
}

int kiq_topics_checkpoint_log_start(kiq_topics_t *t)
{
    return write_checkpoints(t, LOG_START_CHECKPOINT, kiq_partition_log_start_offset);
}

int kiq_topics_checkpoint_recovery_points(kiq_topics_t *t)
{
    return write_checkpoints(t, RECOVERY_POINT_CHECKPOINT, kiq_partition_log_recovery_point);
}

int kiq_topics_checkpoint_high_watermarks(kiq_topics_t *t)
{
    return write_checkpoints(t, HIGH_WATERMARK_CHECKPOINT, kiq_partition_log_high_watermark);
}

/* Before the logs open: the recovery points saved by the last flushes or
 * clean shutdown. An unreadable file only makes recovery scan more. */
static void load_recovery_points(kiq_topics_t *t, int d)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" RECOVERY_POINT_CHECKPOINT, t->dirs[d].path);
    FILE *f = fopen(path, "r");
    if (!f) return;
    int version = -1, count = -1;
    if (fscanf(f, "%d %d", &version, &count) != 2 || version != 0 || count < 0 || count > 1000000) {
        KIQ_WARN("%s: unreadable header; recovery scans whole logs", path);
        fclose(f);
        return;
    }
    recovery_point_t *rps = realloc(t->rps, (t->nrps + (size_t)count + 1) * sizeof *rps);
    if (!rps) {
        fclose(f);
        return;
    }
    t->rps = rps;
    long long offset;
    for (int i = 0; i < count; i++) {
        recovery_point_t *rp = &t->rps[t->nrps];
        if (fscanf(f, "%255s %" SCNd32 " %lld", rp->topic, &rp->partition, &offset) != 3 || offset < 0) {
            KIQ_WARN("%s: entry %d is unreadable; the rest are ignored", path, i + 1);
            break;
        }
        rp->offset = offset;
        rp->dir = d;
        t->nrps++;
    }
    fclose(f);
}

/* At open, before the registry is shared. */
static bool topic_loaded(const char *name, void *ctx)
{
    bool found;
    kiq_lm_find_index(ctx, KIQ_STR(name), &found);
    return found;
}

kiq_topics_t *kiq_topics_open_dirs(const kiq_topics_dir_spec_t *dirs, int ndirs, const kiq_log_config_t *log_cfg)
{
    return kiq_topics_open_dirs_ex(dirs, ndirs, log_cfg, false);
}

kiq_topics_t *kiq_topics_open_dirs_ex(const kiq_topics_dir_spec_t *dirs, int ndirs, const kiq_log_config_t *log_cfg,
                                      bool partial)
{
    if (ndirs < 1) {
        kiq_error_set("no log directory");
        return NULL;
    }
    kiq_topics_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->log_cfg = *log_cfg;
    t->partial = partial;
    pthread_rwlock_init(&t->lock, NULL);
    pthread_mutex_init(&t->checkpoint_mu, NULL);
    pthread_mutex_init(&t->log_cfg_mu, NULL);
    t->dirs = calloc((size_t)ndirs, sizeof *t->dirs);
    bool ok = t->dirs != NULL;
    for (int i = 0; ok && i < ndirs; i++) {
        t->dirs[i] = (topics_dir_t){.path = strdup(dirs[i].path), .health = dirs[i].health,
                                    .clean_shutdown = dirs[i].clean_shutdown};
        t->ndirs = i + 1;
        ok = t->dirs[i].path != NULL;
    }
    t->store = ok ? kiq_topic_config_store_files_new(t->dirs[0].path) : NULL;
    if (t->store)
        /* after a clean shutdown too: they tell a log that lost its end */
        for (int i = 0; i < t->ndirs; i++) load_recovery_points(t, i);
    if (t->store) kiq_lm_finish_moves(t);
    int loaded = t->store ? load_existing(t) : -1;
    free(t->rps);
    t->rps = NULL;
    t->nrps = 0;
    if (loaded != 0) {
        kiq_topics_free(t);
        return NULL;
    }
    t->store->ops->prune(t->store, topic_loaded, t);
    /* The log starts first: a high watermark is clamped to them. */
    for (int i = 0; i < t->ndirs; i++)
        load_offset_checkpoint(t, i, LOG_START_CHECKPOINT, "log start offset", apply_log_start);
    for (int i = 0; i < t->ndirs; i++)
        load_offset_checkpoint(t, i, HIGH_WATERMARK_CHECKPOINT, "high watermark", apply_high_watermark);
    return t;
}

kiq_topics_t *kiq_topics_open(const char *log_dir, const kiq_log_config_t *log_cfg)
{
    kiq_topics_dir_spec_t d = {.path = log_dir, .clean_shutdown = log_cfg->clean_shutdown};
    return kiq_topics_open_dirs(&d, 1, log_cfg);
}

void kiq_topics_free(kiq_topics_t *t)
{
    if (!t) return;
    if (t->store && kiq_topics_checkpoint_log_start(t) != 0)
        KIQ_WARN("cannot write the log start offsets: %s", kiq_error_get());
    /* A clean shutdown flushes everything, so the next open trusts it all. */
    if (t->store) {
        for (int i = 0; i < t->count; i++)
            for (int32_t p = 0; p < t->topics[i]->npartitions; p++) {
                kiq_partition_log_t *l = atomic_load(&t->topics[i]->partitions[p]->log);
                if (!l || kiq_partition_log_offline(l)) continue;
                /* what the next open will find: a file gone now is written back */
                kiq_partition_log_check_files(l, true);
                if (kiq_partition_log_flush(l) < 0)
                    KIQ_WARN("flushing %s-%d: %s", t->topics[i]->name, p, kiq_error_get());
            }
        if (kiq_topics_checkpoint_recovery_points(t) != 0)
            KIQ_WARN("cannot write the recovery points: %s", kiq_error_get());
        if (kiq_topics_checkpoint_high_watermarks(t) != 0)
            KIQ_WARN("cannot write the high watermarks: %s", kiq_error_get());
    }
    for (int i = 0; i < t->count; i++) kiq_topic_unref(t->topics[i]);
    free(t->topics);
    kiq_log_dir_free(t->retired_health); /* after the topics: their retired logs point to it */
    kiq_lm_free_preferred(t);
    kiq_topic_config_store_free(t->store);
    pthread_rwlock_destroy(&t->lock);
    pthread_mutex_destroy(&t->checkpoint_mu);
    pthread_mutex_destroy(&t->log_cfg_mu);
    for (int i = 0; i < t->ndirs; i++) free(t->dirs[i].path);
    free(t->dirs);
    free(t);
}

/* Under host_mu, the caller holding one reference: frees the retired
 * logs once no reader can hold one. Every reader that could have loaded a
 * retired log took its topic reference before the log left its slot, so
 * when only the registry's reference and the caller's remain (the
 * caller's alone once deleted; host_mu keeps that flag steady), those
 * readers are gone. refs is read first: a registry reference dropped
 * after that read was still there, so no reader was. */
void kiq_lm_reap_retired(kiq_topic_t *topic)
{
    if (!topic->retired) return;
    int refs = atomic_load(&topic->refs);
    bool deleted = atomic_load(&topic->deleted);
    if (refs <= (deleted ? 1 : 2)) kiq_lm_free_retired(topic, deleted);
}

/* The always-offline health retired logs are tied to, made once. */
kiq_log_dir_t *kiq_lm_retired_health(kiq_topics_t *t)
{
    pthread_rwlock_wrlock(&t->lock);
    if (!t->retired_health && (t->retired_health = kiq_log_dir_new("(partitions no longer hosted here)")))
        kiq_log_dir_retire(t->retired_health, ESHUTDOWN);
    kiq_log_dir_t *h = t->retired_health;
    pthread_rwlock_unlock(&t->lock);
    return h;
}

/* rm -r of a partition directory (it holds files only), then a sync of
 * its parent so the removal is durable. */
int kiq_lm_remove_partition_dir(const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh) return errno == ENOENT ? 0 : kiq_error_errno("cannot open %s", dir);
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dh)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 && unlinkat(dirfd(dh), de->d_name, 0) != 0)
            rc = kiq_error_errno("cannot remove %s/%s", dir, de->d_name);
    closedir(dh);
    if (rc == 0 && rmdir(dir) != 0) rc = kiq_error_errno("cannot remove %s", dir);
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        kiq_fsync_dir(parent);
    }
    return rc;
}

int kiq_topics_adopt_id(kiq_topics_t *t, kiq_topic_t *topic, const kiq_uuid_t *id)
{
    pthread_mutex_lock(&topic->host_mu);
    pthread_rwlock_wrlock(&t->lock);
    bool same = memcmp(topic->id.b, id->b, sizeof id->b) == 0;
    bool adopt = !same && topic->id_guessed;
    if (adopt) topic->id = *id;
    if (same || adopt) topic->id_guessed = false;
    pthread_rwlock_unlock(&t->lock);
    int rc = same || adopt ? 0 : kiq_error_set("topic %s has another id here", topic->name);
    int32_t n = atomic_load(&topic->npartitions);
    for (int32_t i = 0; adopt && rc == 0 && i < n; i++) {
        char pdir[PATH_MAX];
        if (atomic_load(&topic->partitions[i]->dir_index) < 0) continue;
        if (kiq_lm_partition_path(pdir, sizeof pdir, topic->partitions[i]) != 0 || kiq_lm_write_partition_metadata(pdir, id) != 0)
            rc = -1;
    }
    pthread_mutex_unlock(&topic->host_mu);
    if (adopt && rc == 0) KIQ_INFO("topic %s takes the topic id its controller names", topic->name);
    return rc;
}

/* Under host_mu and config_mu: opens partition p's log in a directory
 * picked for it, recovering whatever is already there. */
static int open_hosted_log(kiq_topics_t *t, kiq_topic_t *topic, kiq_partition_t *p, kiq_log_config_t *cfg)
{
    pthread_rwlock_wrlock(&t->lock);
    int d = kiq_lm_preferred_dir(t, topic->name, p->index);
    if (d < 0 || kiq_log_dir_offline(t->dirs[d].health)) d = kiq_lm_pick_dir(t);
    int rc = d < 0 ? kiq_error_set("every log directory is offline") : kiq_lm_place_partition(t, p, d);
    pthread_rwlock_unlock(&t->lock);
    if (rc != 0) return -1;
    char pdir[PATH_MAX];
    kiq_partition_log_t *l = NULL;
    /* Not from any checkpoint: scan whatever the directory holds. */
    cfg->clean_shutdown = false;
    if (kiq_lm_partition_path(pdir, sizeof pdir, p) == 0 && kiq_mkdir_p(pdir) == 0 &&
        kiq_lm_write_partition_metadata(pdir, &topic->id) == 0 && (l = kiq_partition_log_open_at(pdir, cfg, 0))) {
        kiq_partition_log_set_log_dir(l, t->dirs[d].health);
        kiq_fsync_dir(t->dirs[d].path);
        atomic_store(&p->log, l);
        return 0;
    }
    pthread_rwlock_wrlock(&t->lock);
    kiq_lm_unplace_partition(t, p);
    pthread_rwlock_unlock(&t->lock);
    return -1;
}

/* Under host_mu, the topic not deleted: gives p's slot a log, a retired
 * one taken back or one opened in a directory picked for it. */
static int host_locked(kiq_topics_t *t, kiq_topic_t *topic, kiq_partition_t *p)
{
    if (atomic_load(&p->log)) return KIQ_ERR_NONE;
    int rc = KIQ_ERR_NONE;
    kiq_retired_log_t **pp = &topic->retired;
    while (*pp && ((*pp)->partition != p->index || (*pp)->deleted)) pp = &(*pp)->next;
    /* config_mu: a config change either sees the log or is seen by it */
    pthread_mutex_lock(&topic->config_mu);
    kiq_log_config_t cfg;
    kiq_lm_topic_log_config(t, &topic->configs, &cfg);
    if (*pp) {
        kiq_retired_log_t *e = *pp;
        pthread_rwlock_wrlock(&t->lock);
        rc = kiq_lm_place_partition(t, p, e->dir) == 0 ? KIQ_ERR_NONE : KIQ_ERR_KAFKA_STORAGE_ERROR;
        pthread_rwlock_unlock(&t->lock);
        if (rc == KIQ_ERR_NONE) {
            kiq_partition_log_set_log_dir(e->log, t->dirs[e->dir].health);
            kiq_partition_log_set_config(e->log, &cfg);
            atomic_store(&p->log, e->log);
            *pp = e->next;
            free(e);
        }
    } else if (open_hosted_log(t, topic, p, &cfg) != 0) {
        rc = KIQ_ERR_KAFKA_STORAGE_ERROR;
    }
    pthread_mutex_unlock(&topic->config_mu);
    if (rc == KIQ_ERR_NONE) KIQ_INFO("hosting %s-%d in %s", topic->name, p->index, p->dir);
    else KIQ_ERROR("cannot host %s-%d: %s", topic->name, p->index, kiq_error_get());
    return rc;
}

int kiq_topics_host_partition(kiq_topics_t *t, kiq_topic_t *topic, int32_t partition)
{
    if (partition < 0 || partition >= topic->npartitions) {
        kiq_error_set("topic %s has %d partition(s), not %d", topic->name, topic->npartitions, partition + 1);
        return KIQ_ERR_INVALID_PARTITIONS;
    }
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&topic->host_mu);
    if (atomic_load(&topic->deleted)) {
        kiq_error_set("Topic %s does not exist", topic->name);
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    } else {
        rc = host_locked(t, topic, topic->partitions[partition]);
    }
    kiq_lm_reap_retired(topic);
    pthread_mutex_unlock(&topic->host_mu);
    return rc;
}

int kiq_topics_add_partitions(kiq_topics_t *t, kiq_topic_t *topic, int32_t npartitions, bool host)
{
    pthread_mutex_lock(&topic->host_mu);
    int rc = KIQ_ERR_NONE;
    int32_t old = topic->npartitions;
    if (atomic_load(&topic->deleted)) {
        kiq_error_set("Topic %s does not exist", topic->name);
        rc = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    } else if (npartitions > old) {
        struct kiq_partition_slots *slots = kiq_lm_slots_alloc(t, topic, old, npartitions);
        if (!slots) {
            kiq_error_set("out of memory");
            rc = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        } else {
            memcpy(slots->p, topic->partitions, (size_t)old * sizeof slots->p[0]);
            slots->older = topic->slots;
            topic->slots = slots;
            /* the array first: whoever reads the new count finds its slots */
            atomic_store(&topic->partitions, slots->p);
            atomic_store(&topic->npartitions, npartitions);
            KIQ_INFO("topic %s has %d partitions now (was %d)", topic->name, npartitions, old);
            for (int32_t i = old; host && i < npartitions; i++) {
                int hr = host_locked(t, topic, slots->p[i]);
                if (hr != KIQ_ERR_NONE) rc = hr;
            }
        }
    }
    pthread_mutex_unlock(&topic->host_mu);
    return rc;
}

int kiq_topics_unhost_partition(kiq_topics_t *t, kiq_topic_t *topic, int32_t partition, bool delete_files)
{
    if (partition < 0 || partition >= topic->npartitions) {
        kiq_error_set("topic %s has %d partition(s), not %d", topic->name, topic->npartitions, partition + 1);
        return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    kiq_partition_t *p = topic->partitions[partition];
    int rc = KIQ_ERR_NONE;
    pthread_mutex_lock(&topic->host_mu);
    kiq_partition_log_t *l = atomic_load(&p->log);
    if (l) {
        kiq_retired_log_t *e = calloc(1, sizeof *e);
        kiq_log_dir_t *offline = e ? kiq_lm_retired_health(t) : NULL;
        if (!offline) {
            free(e);
            kiq_error_set("out of memory");
            pthread_mutex_unlock(&topic->host_mu);
            return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
        int d = atomic_load(&p->dir_index);
        *e = (kiq_retired_log_t){.log = l, .partition = partition, .dir = d, .home = t->dirs[d].health,
                                 .next = topic->retired};
        topic->retired = e;
        /* from here on new readers see it unhosted */
        atomic_store(&p->log, NULL);
        pthread_rwlock_wrlock(&t->lock);
        kiq_lm_unplace_partition(t, p);
        pthread_rwlock_unlock(&t->lock);
        /* what it acknowledged stays durable; appends after this are refused */
        if (!delete_files && !kiq_partition_log_offline(l) && kiq_partition_log_flush(l) < 0)
            KIQ_WARN("flushing %s-%d: %s", topic->name, partition, kiq_error_get());
        kiq_partition_log_set_log_dir(l, offline);
        KIQ_INFO("%s-%d is no longer hosted here%s", topic->name, partition, delete_files ? "; deleting it" : "");
    }
    if (delete_files) {
        for (kiq_retired_log_t *e = topic->retired; e; e = e->next)
            if (e->partition == partition && !e->deleted) {
                e->deleted = true;
                if (kiq_lm_remove_partition_dir(kiq_partition_log_dir(e->log)) != 0) rc = KIQ_ERR_KAFKA_STORAGE_ERROR;
            }
        /* kept by an earlier unhost whose log is already closed */
        char name[300], pdir[PATH_MAX];
        for (int d = 0; d < t->ndirs && kiq_log_dir_name(name, sizeof name, topic->name, partition) == 0; d++)
            if ((size_t)snprintf(pdir, sizeof pdir, "%s/%s", t->dirs[d].path, name) < sizeof pdir &&
                kiq_lm_remove_partition_dir(pdir) != 0)
                rc = KIQ_ERR_KAFKA_STORAGE_ERROR;
        if (rc != KIQ_ERR_NONE) KIQ_ERROR("deleting %s-%d: %s", topic->name, partition, kiq_error_get());
    }
    kiq_lm_reap_retired(topic);
    pthread_mutex_unlock(&topic->host_mu);
    return rc;
}
