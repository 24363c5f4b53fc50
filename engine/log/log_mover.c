/* Moving partitions between log directories (log/log_mover.h), the
 * preferred directory of partitions not hosted yet, and finishing at open
 * a move a stop cut short. */
#include "log/log_mover.h"

#include "core/worker.h"
#include "log/log_retention.h"
#include "log/topics_internal.h"

/* How much one move copies per round before the others get their turn,
 * and per read. */
#define MOVE_ROUND_BYTES (8u << 20)
#define MOVE_READ_BYTES (1 << 20)
/* Between rounds while moves are pending: the copy keeps going without
 * taking a core from the request path. */
#define MOVE_PAUSE_MS 5
#define FUTURE_SUFFIX "-future"
#define DELETE_SUFFIX "-delete"

/* One partition being moved. topic, partition and the copy's state are
 * the worker's; dest is written under the mover's mu by whoever asks, and
 * future and future_dir are changed by the worker under mu (DescribeLogDirs
 * reads them there). The worker alone frees a move, after unlinking it
 * under mu. */
typedef struct move {
    kiq_topic_t *topic; /* a reference */
    int32_t partition;
    int dest;                     /* the registry's directory asked for */
    kiq_partition_log_t *future;  /* NULL until the copy starts */
    int future_dir;               /* where future is */
    kiq_partition_log_t *source;  /* the log it copies */
    uint64_t generation;          /* source's when the copy started */
    char path[PATH_MAX];          /* future's directory */
    char id[33];                  /* the hex id in its name */
    struct move *next;
} move_t;

/* Fixed from new to free but the list, which mu guards. */
struct kiq_log_mover {
    kiq_topics_t *topics;
    const kiq_config_t *config;
    pthread_mutex_t mu;
    move_t *moves;
    kiq_worker_t *worker;
};

/* ---- Preferred directories ---- */

int kiq_lm_preferred_dir(const kiq_topics_t *t, const char *topic, int32_t partition)
{
    for (int i = 0; i < t->npreferred; i++)
        if (t->preferred[i].partition == partition && strcmp(t->preferred[i].topic, topic) == 0)
            return t->preferred[i].dir;
    return -1;
}

int kiq_topics_prefer_dir(kiq_topics_t *t, kiq_str_t topic, int32_t partition, int dir)
{
    char *name = strndup(topic.p, (size_t)topic.len);
    if (!name) return kiq_error_set("out of memory");
    pthread_rwlock_wrlock(&t->lock);
    int rc = 0;
    int i = 0;
    while (i < t->npreferred && (t->preferred[i].partition != partition || strcmp(t->preferred[i].topic, name) != 0))
        i++;
    if (i < t->npreferred) {
        t->preferred[i].dir = dir;
        free(name);
    } else {
        struct preferred_dir *np = realloc(t->preferred, (size_t)(t->npreferred + 1) * sizeof *np);
        if (!np) {
            free(name);
            rc = kiq_error_set("out of memory");
        } else {
            t->preferred = np;
            t->preferred[t->npreferred++] = (struct preferred_dir){name, partition, dir};
        }
    }
    pthread_rwlock_unlock(&t->lock);
    return rc;
}

void kiq_lm_free_preferred(kiq_topics_t *t)
{
    for (int i = 0; i < t->npreferred; i++) free(t->preferred[i].topic);
    free(t->preferred);
    t->preferred = NULL;
    t->npreferred = 0;
}

/* ---- At open ---- */

/* Whether name is "<partition dir>.<32 hex>" + suffix; base gets the
 * partition directory's name, id the hex. */
static bool moved_name(const char *name, const char *suffix, char *base, size_t n, char id[33])
{
    size_t len = strlen(name), sl = strlen(suffix);
    if (len < sl + 34 || strcmp(name + len - sl, suffix) != 0) return false;
    const char *dot = name + len - sl - 33;
    if (*dot != '.' || (size_t)(dot - name) >= n) return false;
    for (int i = 0; i < 32; i++)
        if (!strchr("0123456789abcdef", dot[1 + i])) return false;
    memcpy(id, dot + 1, 32);
    id[32] = '\0';
    memcpy(base, name, (size_t)(dot - name));
    base[dot - name] = '\0';
    return true;
}

/* Whether some log directory holds name. */
static bool any_dir_has(const kiq_topics_t *t, const char *name)
{
    char path[PATH_MAX];
    for (int d = 0; d < t->ndirs; d++)
        if ((size_t)snprintf(path, sizeof path, "%s/%s", t->dirs[d].path, name) < sizeof path &&
            access(path, F_OK) == 0)
            return true;
    return false;
}

/* A future copy whose old copy was renamed for deletion was complete:
 * the stop came between the swap's two renames. */
static void settle_future(const kiq_topics_t *t, int d, const char *name)
{
    char base[300], id[33], deleted[400], path[PATH_MAX], to[PATH_MAX];
    if (!moved_name(name, FUTURE_SUFFIX, base, sizeof base, id)) return;
    snprintf(deleted, sizeof deleted, "%s.%s" DELETE_SUFFIX, base, id);
    snprintf(path, sizeof path, "%s/%s", t->dirs[d].path, name);
    if (any_dir_has(t, deleted) && !any_dir_has(t, base) &&
        (size_t)snprintf(to, sizeof to, "%s/%s", t->dirs[d].path, base) < sizeof to && rename(path, to) == 0) {
        kiq_fsync_dir(t->dirs[d].path);
        KIQ_WARN("%s: the move to %s was cut short after its copy was complete: finished", base, t->dirs[d].path);
        return;
    }
    KIQ_INFO("%s: a move to %s did not finish before the stop: its copy is dropped", base, t->dirs[d].path);
    if (kiq_lm_remove_partition_dir(path) != 0) KIQ_WARN("%s", kiq_error_get());
}

/* Removes the directories named <partition>.<id><suffix> in directory d,
 * or settles each (futures). */
static void sweep(const kiq_topics_t *t, int d, const char *suffix, bool futures)
{
    DIR *dh = opendir(t->dirs[d].path);
    if (!dh) return;
    char base[300], id[33], path[PATH_MAX];
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (!moved_name(de->d_name, suffix, base, sizeof base, id)) continue;
        if (futures) {
            settle_future(t, d, de->d_name);
        } else if ((size_t)snprintf(path, sizeof path, "%s/%s", t->dirs[d].path, de->d_name) < sizeof path &&
                   kiq_lm_remove_partition_dir(path) != 0) {
            KIQ_WARN("%s", kiq_error_get());
        }
    }
    closedir(dh);
}

void kiq_lm_finish_moves(kiq_topics_t *t)
{
    for (int d = 0; d < t->ndirs; d++) sweep(t, d, FUTURE_SUFFIX, true);
    for (int d = 0; d < t->ndirs; d++) sweep(t, d, DELETE_SUFFIX, false);
}

/* ---- The copy ---- */

/* Copies source's batches from where fut ends, up to budget bytes (0:
 * until nothing is left). 1 when fut has caught up, 0 when there is more,
 * -1 with the reason. */
static int copy_some(kiq_partition_log_t *source, kiq_partition_log_t *fut, size_t budget)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    size_t copied = 0;
    int rc = 0;
    while (rc == 0 && (budget == 0 || copied < budget)) {
        int64_t start = kiq_partition_log_start_offset(source), from = kiq_partition_log_end_offset(fut);
        /* retention or DeleteRecords moved the start past the copy's end */
        if (from < start) from = start;
        w.len = 0;
        int n = kiq_partition_log_read(source, from, MOVE_READ_BYTES, INT64_MAX, &w);
        kiq_log_append_result_t res;
        if (n == 0) rc = 1;
        else if (n < 0) rc = kiq_error_set("reading %s at %" PRId64 ": %s", kiq_partition_log_dir(source), from,
                                           n == KIQ_LOG_OUT_OF_RANGE ? "out of range" : kiq_error_get());
        else if (kiq_partition_log_append_follower(fut, w.buf, (size_t)n, &res) != 0) rc = -1;
        else if (kiq_partition_log_start_offset(fut) < start && kiq_partition_log_advance_start(fut, start) != 0) rc = -1;
        copied += n > 0 ? (size_t)n : 0;
    }
    kiq_wr_free(&w);
    return rc;
}

/* The worker: drops mv's copy (its files too). */
static void drop_future(kiq_log_mover_t *m, move_t *mv)
{
    pthread_mutex_lock(&m->mu);
    kiq_partition_log_t *f = mv->future;
    mv->future = NULL;
    pthread_mutex_unlock(&m->mu);
    if (f && kiq_partition_log_delete(f) != 0) KIQ_WARN("dropping %s: %s", mv->path, kiq_error_get());
}

/* The worker: an empty copy of source in directory dest. */
static int start_future(kiq_log_mover_t *m, move_t *mv, kiq_partition_log_t *source, int dest)
{
    kiq_topics_t *t = m->topics;
    kiq_topic_t *topic = mv->topic;
    kiq_uuid_t u;
    char name[300];
    if (kiq_uuid_random(&u) != 0) return kiq_error_set("no randomness");
    for (int i = 0; i < 16; i++) snprintf(mv->id + 2 * i, 3, "%02x", u.b[i]);
    if (kiq_log_dir_name(name, sizeof name, topic->name, mv->partition) != 0) return -1;
    if ((size_t)snprintf(mv->path, sizeof mv->path, "%s/%s.%s" FUTURE_SUFFIX, t->dirs[dest].path, name, mv->id) >=
        sizeof mv->path)
        return kiq_error_set("path too long for %s", name);
    kiq_log_config_t cfg;
    pthread_mutex_lock(&topic->config_mu);
    kiq_lm_topic_log_config(t, &topic->configs, &cfg);
    pthread_mutex_unlock(&topic->config_mu);
    cfg.clean_shutdown = false;
    mv->generation = kiq_partition_log_generation(source);
    kiq_partition_log_t *f = NULL;
    if (kiq_mkdir_p(mv->path) != 0 || kiq_lm_write_partition_metadata(mv->path, &topic->id) != 0 ||
        !(f = kiq_partition_log_open_at(mv->path, &cfg, 0))) {
        kiq_lm_remove_partition_dir(mv->path);
        return -1;
    }
    kiq_partition_log_set_log_dir(f, t->dirs[dest].health);
    kiq_fsync_dir(t->dirs[dest].path);
    pthread_mutex_lock(&m->mu);
    mv->future = f;
    mv->future_dir = dest;
    mv->source = source;
    pthread_mutex_unlock(&m->mu);
    KIQ_INFO("%s-%d: moving from %s to %s", topic->name, mv->partition, kiq_partition_log_dir(source),
             t->dirs[dest].path);
    return 0;
}

/* Under host_mu, source sealed and caught up: the copy, closed, takes the
 * partition's name in its directory after source's directory was renamed
 * for deletion, and is opened there. The new log, or NULL with both
 * directories as they were. */
static kiq_partition_log_t *rename_and_open(kiq_log_mover_t *m, move_t *mv, kiq_partition_log_t *source,
                                            const char *gone)
{
    kiq_topics_t *t = m->topics;
    kiq_topic_t *topic = mv->topic;
    char name[300], real[PATH_MAX];
    const char *old = kiq_partition_log_dir(source);
    if (kiq_log_dir_name(name, sizeof name, topic->name, mv->partition) != 0 ||
        (size_t)snprintf(real, sizeof real, "%s/%s", t->dirs[mv->future_dir].path, name) >= sizeof real)
        return NULL;
    pthread_mutex_lock(&m->mu);
    kiq_partition_log_t *f = mv->future;
    mv->future = NULL;
    pthread_mutex_unlock(&m->mu);
    kiq_partition_log_free(f); /* a clean close: reopened without recovery */
    if (rename(old, gone) != 0) {
        kiq_error_errno("cannot rename %s", old);
        kiq_lm_remove_partition_dir(mv->path);
        return NULL;
    }
    if (rename(mv->path, real) != 0) {
        kiq_error_errno("cannot rename %s", mv->path);
        if (rename(gone, old) != 0) KIQ_ERROR("cannot rename %s back to %s: %s", gone, old, strerror(errno));
        kiq_lm_remove_partition_dir(mv->path);
        return NULL;
    }
    kiq_fsync_dir(t->dirs[mv->future_dir].path);
    kiq_fsync_dir(t->dirs[atomic_load(&topic->partitions[mv->partition]->dir_index)].path);
    kiq_log_config_t cfg;
    pthread_mutex_lock(&topic->config_mu);
    kiq_lm_topic_log_config(t, &topic->configs, &cfg);
    cfg.clean_shutdown = true;
    kiq_partition_log_t *l = kiq_partition_log_open_at(real, &cfg, -1);
    pthread_mutex_unlock(&topic->config_mu);
    if (!l) {
        /* the old copy is whole: it stays the partition's */
        KIQ_ERROR("cannot open %s: %s", real, kiq_error_get());
        kiq_lm_remove_partition_dir(real);
        if (rename(gone, old) != 0) KIQ_ERROR("cannot rename %s back to %s: %s", gone, old, strerror(errno));
    }
    return l;
}

/* The worker, mv's copy caught up with source: the swap. 1 when done, 0
 * when source is no longer the partition's (the copy starts again or is
 * dropped), -1 with the reason (source stays). */
static int swap(kiq_log_mover_t *m, move_t *mv, kiq_partition_log_t *source)
{
    kiq_topics_t *t = m->topics;
    kiq_topic_t *topic = mv->topic;
    kiq_partition_t *p = topic->partitions[mv->partition];
    kiq_log_dir_t *sealed = kiq_lm_retired_health(t);
    kiq_retired_log_t *e = calloc(1, sizeof *e);
    if (!sealed || !e) {
        free(e);
        return kiq_error_set("out of memory");
    }
    pthread_mutex_lock(&topic->host_mu);
    int from = atomic_load(&p->dir_index);
    if (atomic_load(&p->log) != source || atomic_load(&topic->deleted) || from < 0) {
        pthread_mutex_unlock(&topic->host_mu);
        free(e);
        return 0;
    }
    /* from here source takes no append: the last batches copied below are
     * all it ever acknowledged */
    kiq_partition_log_set_log_dir(source, sealed);
    char gone[PATH_MAX + 64];
    snprintf(gone, sizeof gone, "%s.%s" DELETE_SUFFIX, kiq_partition_log_dir(source), mv->id);
    kiq_partition_log_t *l = NULL;
    int rc = copy_some(source, mv->future, 0);
    if (rc == 1 && !kiq_partition_log_unchanged(source, mv->generation)) rc = 0;
    if (rc == 1) {
        int64_t hw = kiq_partition_log_high_watermark(source);
        l = rename_and_open(m, mv, source, gone);
        if (l) kiq_partition_log_set_high_watermark(l, hw);
        else rc = -1;
    }
    if (!l) {
        kiq_partition_log_set_log_dir(source, t->dirs[from].health);
        pthread_mutex_unlock(&topic->host_mu);
        free(e);
        return rc < 0 ? -1 : 0;
    }
    kiq_partition_log_set_log_dir(l, t->dirs[mv->future_dir].health);
    pthread_rwlock_wrlock(&t->lock);
    kiq_lm_unplace_partition(t, p);
    int placed = kiq_lm_place_partition(t, p, mv->future_dir);
    pthread_rwlock_unlock(&t->lock);
    if (placed != 0) KIQ_ERROR("%s-%d: %s", topic->name, mv->partition, kiq_error_get());
    atomic_store(&p->log, l);
    /* readers that loaded source keep reading its open files */
    *e = (kiq_retired_log_t){.log = source, .partition = mv->partition, .dir = from, .home = t->dirs[from].health,
                             .deleted = true, .next = topic->retired};
    topic->retired = e;
    if (kiq_lm_remove_partition_dir(gone) != 0) KIQ_WARN("%s (removed at the next start)", kiq_error_get());
    kiq_lm_reap_retired(topic);
    pthread_mutex_unlock(&topic->host_mu);
    kiq_log_retention_apply_topic(topic, m->config);
    kiq_topics_notify_append(t, topic->name, mv->partition);
    KIQ_INFO("%s-%d: moved to %s", topic->name, mv->partition, t->dirs[mv->future_dir].path);
    return 1;
}

/* The worker: one round of mv. true when mv is finished (moved, or given
 * up). */
static bool step(kiq_log_mover_t *m, move_t *mv)
{
    kiq_topic_t *topic = mv->topic;
    kiq_partition_t *p = topic->partitions[mv->partition];
    kiq_partition_log_t *source = atomic_load(&p->log);
    pthread_mutex_lock(&m->mu);
    int dest = mv->dest;
    pthread_mutex_unlock(&m->mu);
    if (!source || atomic_load(&topic->deleted)) {
        KIQ_INFO("%s-%d: no longer hosted here: its move is dropped", topic->name, mv->partition);
        return true;
    }
    /* asked elsewhere, or the log was cut (a follower's truncation) or
     * replaced under the copy: it starts again */
    if (mv->future && (mv->future_dir != dest || mv->source != source ||
                       !kiq_partition_log_unchanged(source, mv->generation)))
        drop_future(m, mv);
    if (!mv->future) {
        if (atomic_load(&p->dir_index) == dest) return true;
        if (kiq_log_dir_offline(m->topics->dirs[dest].health) || start_future(m, mv, source, dest) != 0) {
            KIQ_ERROR("%s-%d: cannot move to %s: %s", topic->name, mv->partition, m->topics->dirs[dest].path,
                      kiq_log_dir_offline(m->topics->dirs[dest].health) ? "it is offline" : kiq_error_get());
            return true;
        }
    }
    int rc = copy_some(source, mv->future, MOVE_ROUND_BYTES);
    if (rc == 1) rc = swap(m, mv, source);
    if (rc < 0) {
        KIQ_ERROR("%s-%d: the move to %s failed: %s", topic->name, mv->partition, m->topics->dirs[dest].path,
                  kiq_error_get());
        return true;
    }
    return rc == 1;
}

static int64_t mover_round(void *arg)
{
    kiq_log_mover_t *m = arg;
    pthread_mutex_lock(&m->mu);
    move_t *mv = m->moves;
    pthread_mutex_unlock(&m->mu);
    /* only this thread removes moves, so the list walked stays */
    while (mv) {
        bool done = step(m, mv);
        pthread_mutex_lock(&m->mu);
        move_t *next = mv->next;
        if (done) {
            move_t **pp = &m->moves;
            while (*pp != mv) pp = &(*pp)->next;
            *pp = mv->next;
        }
        pthread_mutex_unlock(&m->mu);
        if (done) {
            drop_future(m, mv);
            kiq_topic_unref(mv->topic);
            free(mv);
        }
        mv = next;
    }
    pthread_mutex_lock(&m->mu);
    bool more = m->moves != NULL;
    pthread_mutex_unlock(&m->mu);
    return more ? MOVE_PAUSE_MS : -1;
}

kiq_log_mover_t *kiq_log_mover_new(kiq_topics_t *topics, const kiq_config_t *config)
{
    kiq_log_mover_t *m = calloc(1, sizeof *m);
    if (!m) {
        kiq_error_set("out of memory");
        return NULL;
    }
    m->topics = topics;
    m->config = config;
    pthread_mutex_init(&m->mu, NULL);
    kiq_worker_config_t wc = {"log-dir-mover", mover_round, m, 0};
    if (!(m->worker = kiq_worker_start(&wc))) {
        pthread_mutex_destroy(&m->mu);
        free(m);
        return NULL;
    }
    return m;
}

void kiq_log_mover_free(kiq_log_mover_t *m)
{
    if (!m) return;
    kiq_worker_stop(m->worker);
    while (m->moves) {
        move_t *mv = m->moves;
        m->moves = mv->next;
        drop_future(m, mv);
        kiq_topic_unref(mv->topic);
        free(mv);
    }
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int kiq_log_mover_move(kiq_log_mover_t *m, kiq_topic_t *topic, int32_t partition, int dir)
{
    kiq_topics_t *t = m->topics;
    if (dir < 0 || dir >= t->ndirs || kiq_log_dir_offline(t->dirs[dir].health)) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    if (partition < 0 || partition >= atomic_load(&topic->npartitions) ||
        !atomic_load(&topic->partitions[partition]->log)) {
        if (kiq_topics_prefer_dir(t, KIQ_STR(topic->name), partition, dir) != 0) return KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return KIQ_ERR_REPLICA_NOT_AVAILABLE;
    }
    pthread_mutex_lock(&m->mu);
    move_t *mv = m->moves;
    while (mv && (mv->topic != topic || mv->partition != partition)) mv = mv->next;
    if (mv) {
        mv->dest = dir;
    } else if (atomic_load(&topic->partitions[partition]->dir_index) != dir) {
        kiq_topic_t *ref = kiq_topics_get(t, KIQ_STR(topic->name));
        if (ref != topic || !(mv = calloc(1, sizeof *mv))) {
            pthread_mutex_unlock(&m->mu);
            kiq_topic_unref(ref);
            return ref != topic ? KIQ_ERR_REPLICA_NOT_AVAILABLE : KIQ_ERR_UNKNOWN_SERVER_ERROR;
        }
        *mv = (move_t){.topic = ref, .partition = partition, .dest = dir, .future_dir = -1, .next = m->moves};
        m->moves = mv;
    }
    pthread_mutex_unlock(&m->mu);
    if (mv) kiq_worker_poke(m->worker);
    return KIQ_ERR_NONE;
}

bool kiq_log_mover_future(kiq_log_mover_t *m, const kiq_topic_t *topic, int32_t partition, kiq_log_future_t *out)
{
    bool found = false;
    pthread_mutex_lock(&m->mu);
    for (move_t *mv = m->moves; mv && !found; mv = mv->next) {
        if (mv->topic != topic || mv->partition != partition || !mv->future) continue;
        int64_t lag = kiq_partition_log_end_offset(mv->source) - kiq_partition_log_end_offset(mv->future);
        *out = (kiq_log_future_t){mv->future_dir, kiq_partition_log_size(mv->future), lag > 0 ? lag : 0};
        found = true;
    }
    pthread_mutex_unlock(&m->mu);
    return found;
}
