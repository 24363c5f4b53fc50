#include "journey/journal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/say.h"
#include "core/worker.h"
#include "record/crc32c.h"

#define QUEUE_CAP 512        /* journeys waiting for the writer (about 2.5 MiB at most) */
#define WRITER_ROUND_MS 200  /* the writer's pace when nobody pokes it */
#define MAGIC 0x4A51494Bu    /* "KIQJ" */
#define WRITE_BUF (256 << 10) /* records gathered for one write */
#define SUFFIX ".journal"
#define MAX_SEGMENTS 100000

/* A record's head on disk; the journey's bytes (its head and stages,
 * kiq_journey_size) follow. The sizes tell another build's layout apart. */
typedef struct rec_head {
    uint32_t magic, len, crc;
    uint16_t head_size, stage_size;
} rec_head_t;

struct kiq_journal {
    char dir[PATH_MAX];
    int64_t retention_ms, retention_bytes; /* -1: no bound */
    int64_t segment_bytes, segment_ms;     /* when the file written is rolled */

    pthread_mutex_t qmu; /* guards the queue */
    kiq_journey_t *queue; /* a ring of QUEUE_CAP, head the oldest */
    size_t head, count;

    pthread_mutex_t wmu; /* guards what follows: the writing */
    int fd;              /* the segment written, -1 before the first write */
    int64_t seg_base, seg_size;
    int64_t bytes;       /* of all the files */
    int segments;
    int64_t checked_ms;  /* the retention's last look */
    uint8_t *out;        /* records gathered for one write: WRITE_BUF bytes */
    size_t nout;
    uint64_t nrecs;      /* records in it */

    /* what each segment holds, so a lookup reads only the files that may
     * have its journey (a miss reads none); a lookup's, under imu */
    pthread_mutex_t imu;
    struct summary *sums;
    int nsums;

    kiq_worker_t *writer;
    atomic_uint_fast64_t written, dropped;
};

/* One segment's summary: per partition, the offsets its journeys cover;
 * the trace ids they carry as a Bloom filter. Built from the file as it
 * grows: indexed is how far it was read. */
typedef struct span {
    uint64_t key; /* partition_key() */
    int64_t lo, hi;
} span_t;

typedef struct summary {
    int64_t base, indexed;
    bool ended; /* a record that did not check: nothing after it is read */
    int n, cap;
    span_t *spans;
    uint64_t bloom[64]; /* 4096 bits, two per trace id */
} summary_t;

static void segment_path(const kiq_journal_t *jl, int64_t base, char *out, size_t n)
{
    snprintf(out, n, "%s/%020" PRId64 SUFFIX, jl->dir, base);
}

static int by_base(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The segments' bases, oldest first (malloc'd, *n of them); NULL when
 * none or the directory cannot be read. */
static int64_t *list_segments(const kiq_journal_t *jl, int *n)
{
    *n = 0;
    DIR *d = opendir(jl->dir);
    if (!d) return NULL;
    int64_t *bases = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) && *n < MAX_SEGMENTS) {
        size_t len = strlen(e->d_name);
        if (len != 20 + strlen(SUFFIX) || strcmp(e->d_name + 20, SUFFIX) != 0) continue;
        char *end;
        long long base = strtoll(e->d_name, &end, 10);
        if (end != e->d_name + 20 || base < 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *more = realloc(bases, (size_t)cap * sizeof *more);
            if (!more) break;
            bases = more;
        }
        bases[(*n)++] = base;
    }
    closedir(d);
    if (bases) qsort(bases, (size_t)*n, sizeof *bases, by_base);
    return bases;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

/* ---- writing (under wmu) ---- */

/* Deletes the oldest closed segments past the retention: by bytes, and by
 * age (a segment's newest journey is as old as the next one's base). */
static void apply_retention(kiq_journal_t *jl, int64_t now_ms)
{
    jl->checked_ms = now_ms;
    int n;
    int64_t *bases = list_segments(jl, &n);
    int64_t *sizes = n ? calloc((size_t)n, sizeof *sizes) : NULL;
    int64_t total = 0;
    char path[PATH_MAX + 40];
    for (int i = 0; i < n && sizes; i++) {
        segment_path(jl, bases[i], path, sizeof path);
        total += sizes[i] = file_size(path);
    }
    int kept = n;
    for (int i = 0; i + 1 < n && sizes; i++) {
        if (jl->fd >= 0 && bases[i] == jl->seg_base) break;
        bool too_big = jl->retention_bytes >= 0 && total > jl->retention_bytes;
        bool too_old = jl->retention_ms >= 0 && bases[i + 1] < now_ms - jl->retention_ms;
        if (!too_big && !too_old) break;
        segment_path(jl, bases[i], path, sizeof path);
        if (unlink(path) != 0 && errno != ENOENT) {
            KIQ_WARN("journey journal: cannot delete %s: %s", path, strerror(errno));
            break;
        }
        total -= sizes[i];
        kept--;
    }
    jl->bytes = total;
    jl->segments = kept;
    free(sizes);
    free(bases);
}

/* A new segment to write, its base the wall clock's ms (past the newest's). */
static int roll(kiq_journal_t *jl, int64_t now_ms)
{
    if (jl->fd >= 0) close(jl->fd);
    jl->fd = -1;
    int n;
    int64_t *bases = list_segments(jl, &n);
    int64_t base = n && bases[n - 1] >= now_ms ? bases[n - 1] + 1 : now_ms;
    free(bases);
    char path[PATH_MAX + 40];
    /* made with its first journey: a node that records none (a controller) has none */
    if (mkdir(jl->dir, 0755) != 0 && errno != EEXIST) return kiq_error_errno("cannot create %s", jl->dir);
    segment_path(jl, base, path, sizeof path);
    jl->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (jl->fd < 0) return kiq_error_errno("cannot create %s", path);
    jl->seg_base = base;
    jl->seg_size = 0;
    jl->segments++;
    apply_retention(jl, now_ms);
    return 0;
}

/* Under wmu: the records gathered in the write buffer to the segment, in
 * one write (a new segment first when the one written is full or old). */
static int flush_out(kiq_journal_t *jl)
{
    if (jl->nout == 0) return 0;
    int64_t now_ms = kiq_clock_wall_ms();
    size_t n = jl->nout;
    uint64_t recs = jl->nrecs;
    jl->nout = 0;
    jl->nrecs = 0;
    if ((jl->fd < 0 || jl->seg_size >= jl->segment_bytes || now_ms - jl->seg_base >= jl->segment_ms) &&
        roll(jl, now_ms) != 0) {
        atomic_fetch_add_explicit(&jl->dropped, recs, memory_order_relaxed);
        return -1;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(jl->fd, jl->out + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int err = k < 0 ? errno : ENOSPC;
            /* a torn record ends the file's reading: the next go to a new one */
            close(jl->fd);
            jl->fd = -1;
            jl->seg_size += (int64_t)done;
            jl->bytes += (int64_t)done;
            atomic_fetch_add_explicit(&jl->dropped, recs, memory_order_relaxed);
            errno = err;
            return kiq_error_errno("cannot write the journey journal in %s", jl->dir);
        }
        done += (size_t)k;
    }
    jl->seg_size += (int64_t)n;
    jl->bytes += (int64_t)n;
    atomic_fetch_add_explicit(&jl->written, recs, memory_order_relaxed);
    return 0;
}

/* Under wmu: room in the write buffer for a record of len bytes (its
 * head and journey), flushing what it holds first when needed; where
 * it goes. NULL when the flush failed. */
static uint8_t *out_room(kiq_journal_t *jl, size_t len)
{
    /* a write fills a segment at most (one record aside), so files stay near their size */
    size_t cap = (int64_t)WRITE_BUF < jl->segment_bytes ? WRITE_BUF : (size_t)jl->segment_bytes;
    if (jl->nout > 0 && jl->nout + sizeof(rec_head_t) + len > cap && flush_out(jl) != 0) {
        KIQ_WARN_LIMITED("%s", kiq_error_get());
        return NULL;
    }
    return jl->out + jl->nout;
}

/* Under wmu: seals the record copied at at (its journey after the head). */
static void out_seal(kiq_journal_t *jl, uint8_t *at)
{
    rec_head_t h = {MAGIC, 0, 0, (uint16_t)KIQ_JOURNEY_HEAD_SIZE, (uint16_t)sizeof(kiq_journey_stage_t)};
    const kiq_journey_t *jr = (const kiq_journey_t *)(at + sizeof h);
    size_t len = kiq_journey_size(jr);
    h.len = (uint32_t)len;
    h.crc = kiq_crc32c(0, jr, len);
    memcpy(at, &h, sizeof h);
    jl->nout += sizeof h + len;
    jl->nrecs++;
}

/* Under wmu: writes the queue out, gathered in the write buffer (the
 * queue's lock is not held over the disk). */
static void drain(kiq_journal_t *jl)
{
    for (;;) {
        /* NULL: the buffer's records were lost (counted), and it is empty now */
        uint8_t *at = out_room(jl, sizeof(kiq_journey_t));
        if (!at) continue;
        pthread_mutex_lock(&jl->qmu);
        bool any = jl->count > 0;
        if (any) {
            const kiq_journey_t *q = &jl->queue[jl->head];
            memcpy(at + sizeof(rec_head_t), q, kiq_journey_size(q));
            jl->head = (jl->head + 1) % QUEUE_CAP;
            jl->count--;
        }
        pthread_mutex_unlock(&jl->qmu);
        if (!any) break;
        out_seal(jl, at);
    }
    if (flush_out(jl) != 0) KIQ_WARN_LIMITED("%s", kiq_error_get());
}

/* The writer's round: the queue out, the retention now and then. */
static int64_t writer_round(void *ctx)
{
    kiq_journal_t *jl = ctx;
    pthread_mutex_lock(&jl->wmu);
    drain(jl);
    int64_t now_ms = kiq_clock_wall_ms();
    if (now_ms - jl->checked_ms >= 1000) {
        /* a quiet journal still rolls its aged segment, so it can go */
        if (jl->fd >= 0 && now_ms - jl->seg_base >= jl->segment_ms) {
            close(jl->fd);
            jl->fd = -1;
        }
        apply_retention(jl, now_ms);
    }
    pthread_mutex_unlock(&jl->wmu);
    return WRITER_ROUND_MS;
}

/* ---- the journal ---- */

kiq_journal_t *kiq_journal_open(const char *dir, int64_t retention_ms, int64_t retention_bytes)
{
    kiq_journal_t *jl = calloc(1, sizeof *jl);
    if (!jl || strlen(dir) >= sizeof jl->dir || !(jl->queue = calloc(QUEUE_CAP, sizeof *jl->queue)) ||
        !(jl->out = malloc(WRITE_BUF))) {
        kiq_error_set(jl && strlen(dir) >= sizeof jl->dir ? "journey journal path too long" : "out of memory");
        if (jl) {
            free(jl->out);
            free(jl->queue);
            free(jl);
        }
        return NULL;
    }
    strcpy(jl->dir, dir);
    jl->retention_ms = retention_ms;
    jl->retention_bytes = retention_bytes;
    /* a tenth of the retention per file, so deleting one frees a tenth */
    int64_t sb = retention_bytes > 0 ? retention_bytes / 10 : 64 << 20;
    jl->segment_bytes = sb < 4096 ? 4096 : sb > (64 << 20) ? (64 << 20) : sb;
    int64_t sm = retention_ms > 0 ? retention_ms / 10 : 24 * 3600 * 1000;
    jl->segment_ms = sm < 100 ? 100 : sm > 3600 * 1000 ? 3600 * 1000 : sm;
    jl->fd = -1;
    pthread_mutex_init(&jl->qmu, NULL);
    pthread_mutex_init(&jl->wmu, NULL);
    pthread_mutex_init(&jl->imu, NULL);
    atomic_init(&jl->written, 0);
    atomic_init(&jl->dropped, 0);
    apply_retention(jl, kiq_clock_wall_ms());
    kiq_worker_config_t wc = {.name = "journal", .round = writer_round, .ctx = jl, .first_delay_ms = WRITER_ROUND_MS};
    if (!(jl->writer = kiq_worker_start(&wc))) {
        kiq_journal_close(jl);
        return NULL;
    }
    return jl;
}

void kiq_journal_close(kiq_journal_t *jl)
{
    if (!jl) return;
    kiq_worker_stop(jl->writer);
    pthread_mutex_lock(&jl->wmu);
    drain(jl);
    if (jl->fd >= 0) close(jl->fd);
    pthread_mutex_unlock(&jl->wmu);
    pthread_mutex_destroy(&jl->qmu);
    pthread_mutex_destroy(&jl->wmu);
    pthread_mutex_destroy(&jl->imu);
    for (int i = 0; i < jl->nsums; i++) free(jl->sums[i].spans);
    free(jl->sums);
    free(jl->out);
    free(jl->queue);
    free(jl);
}

bool kiq_journal_offer(kiq_journal_t *jl, const kiq_journey_t *jr)
{
    pthread_mutex_lock(&jl->qmu);
    bool room = jl->count < QUEUE_CAP;
    if (room) {
        memcpy(&jl->queue[(jl->head + jl->count) % QUEUE_CAP], jr, kiq_journey_size(jr));
        jl->count++;
    }
    /* the writer wakes by itself every round; a filling queue hurries it */
    bool poke = jl->count == QUEUE_CAP / 4;
    pthread_mutex_unlock(&jl->qmu);
    if (!room) atomic_fetch_add_explicit(&jl->dropped, 1, memory_order_relaxed);
    if (poke) kiq_worker_poke(jl->writer);
    return room;
}

int kiq_journal_write_now(kiq_journal_t *jl, const kiq_journey_t *jr)
{
    pthread_mutex_lock(&jl->wmu);
    drain(jl);
    uint8_t *at = out_room(jl, kiq_journey_size(jr));
    if (at) {
        memcpy(at + sizeof(rec_head_t), jr, kiq_journey_size(jr));
        out_seal(jl, at);
    }
    int rc = at ? flush_out(jl) : -1;
    pthread_mutex_unlock(&jl->wmu);
    return rc;
}

/* ---- finding ---- */

typedef bool (*match_fn)(const kiq_journey_t *jr, const void *want);

typedef struct by_offset {
    const char *topic;
    int32_t partition;
    int64_t offset;
} by_offset_t;

static bool match_offset(const kiq_journey_t *jr, const void *want)
{
    const by_offset_t *w = want;
    return jr->partition == w->partition && w->offset >= jr->first_offset && w->offset <= jr->last_offset &&
           strcmp(jr->topic, w->topic) == 0;
}

static bool match_trace(const kiq_journey_t *jr, const void *want)
{
    uint64_t h = *(const uint64_t *)want;
    for (int t = 0; t < KIQ_JOURNEY_TRACES && jr->traces[t]; t++)
        if (jr->traces[t] == h) return true;
    return false;
}

/* The next record of f into scratch (its strings ended): its length; 0 at
 * the file's end or a record not written whole yet; -1 at one that does not
 * check (damaged, or not a journal's). */
static long read_record(FILE *f, kiq_journey_t *scratch)
{
    rec_head_t h;
    if (fread(&h, sizeof h, 1, f) != 1) return 0;
    const size_t head = KIQ_JOURNEY_HEAD_SIZE, stage = sizeof(kiq_journey_stage_t);
    if (h.magic != MAGIC || h.head_size != head || h.stage_size != stage || h.len < head || h.len > sizeof *scratch ||
        (h.len - head) % stage)
        return -1;
    if (fread(scratch, h.len, 1, f) != 1) return 0;
    if (kiq_crc32c(0, scratch, h.len) != h.crc || kiq_journey_size(scratch) != h.len) return -1;
    scratch->topic[KIQ_JOURNEY_TOPIC - 1] = '\0';
    scratch->trace[KIQ_JOURNEY_TRACE - 1] = '\0';
    return (long)h.len;
}

/* The newest matching journey of one segment into out (through scratch);
 * a record that does not check ends the reading. */
static bool find_in_file(const char *path, match_fn match, const void *want, kiq_journey_t *scratch,
                         kiq_journey_t *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool found = false;
    long len;
    while ((len = read_record(f, scratch)) > 0) {
        if (match(scratch, want)) {
            memcpy(out, scratch, (size_t)len);
            found = true;
        }
    }
    fclose(f);
    return found;
}

static uint64_t partition_key(const char *topic, int32_t partition)
{
    return kiq_hash_partition(topic, strlen(topic), partition);
}

static void bloom_bits(uint64_t trace, unsigned *a, unsigned *b)
{
    *a = (unsigned)(trace % 4096);
    *b = (unsigned)((trace >> 32) % 4096);
}

/* Under imu: adds journey jr to summary m. */
static void summarize(summary_t *m, const kiq_journey_t *jr)
{
    uint64_t key = partition_key(jr->topic, jr->partition);
    span_t *sp = NULL;
    for (int i = 0; i < m->n && !sp; i++)
        if (m->spans[i].key == key) sp = &m->spans[i];
    if (!sp && m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 8;
        span_t *more = realloc(m->spans, (size_t)cap * sizeof *more);
        if (!more) {
            m->ended = true; /* out of memory: the file is read whole each time instead */
            return;
        }
        m->spans = more;
        m->cap = cap;
    }
    if (!sp) {
        sp = &m->spans[m->n++];
        *sp = (span_t){key, jr->first_offset, jr->last_offset};
    }
    if (jr->first_offset < sp->lo) sp->lo = jr->first_offset;
    if (jr->last_offset > sp->hi) sp->hi = jr->last_offset;
    for (int t = 0; t < KIQ_JOURNEY_TRACES && jr->traces[t]; t++) {
        unsigned a, b;
        bloom_bits(jr->traces[t], &a, &b);
        m->bloom[a / 64] |= 1ULL << (a % 64);
        m->bloom[b / 64] |= 1ULL << (b % 64);
    }
}

/* Under imu: summary m brought up to the file's end (what is whole of it). */
static void summary_update(const char *path, summary_t *m, kiq_journey_t *scratch)
{
    if (m->ended) return;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    if (fseeko(f, m->indexed, SEEK_SET) != 0) {
        fclose(f);
        return;
    }
    long len;
    while ((len = read_record(f, scratch)) > 0) {
        summarize(m, scratch);
        if (m->ended) break;
        m->indexed += (int64_t)(sizeof(rec_head_t) + (size_t)len);
    }
    if (len < 0) m->ended = true;
    fclose(f);
}

/* Under imu: the summary of the segment at base, made if new; NULL when
 * out of memory. */
static summary_t *summary_of(kiq_journal_t *jl, int64_t base)
{
    for (int i = 0; i < jl->nsums; i++)
        if (jl->sums[i].base == base) return &jl->sums[i];
    summary_t *more = realloc(jl->sums, (size_t)(jl->nsums + 1) * sizeof *more);
    if (!more) return NULL;
    jl->sums = more;
    summary_t *m = &jl->sums[jl->nsums++];
    memset(m, 0, sizeof *m);
    m->base = base;
    return m;
}

/* Under imu: drops the summaries of segments no longer there. */
static void summaries_prune(kiq_journal_t *jl, const int64_t *bases, int n)
{
    for (int i = 0; i < jl->nsums;) {
        bool there = false;
        for (int k = 0; k < n && !there; k++) there = bases[k] == jl->sums[i].base;
        if (there) {
            i++;
            continue;
        }
        free(jl->sums[i].spans);
        jl->sums[i] = jl->sums[--jl->nsums];
    }
}

/* Whether segment m may hold what is wanted (a summary that ended early
 * cannot say: the file is read). */
static bool may_hold(const summary_t *m, match_fn match, const void *want)
{
    if (m->ended) return true;
    if (match == match_trace) {
        unsigned a, b;
        bloom_bits(*(const uint64_t *)want, &a, &b);
        return (m->bloom[a / 64] >> (a % 64) & 1) && (m->bloom[b / 64] >> (b % 64) & 1);
    }
    const by_offset_t *w = want;
    uint64_t key = partition_key(w->topic, w->partition);
    for (int i = 0; i < m->n; i++)
        if (m->spans[i].key == key && w->offset >= m->spans[i].lo && w->offset <= m->spans[i].hi) return true;
    return false;
}

static bool find(kiq_journal_t *jl, match_fn match, const void *want, kiq_journey_t *out)
{
    /* the queue holds the newest */
    bool found = false;
    pthread_mutex_lock(&jl->qmu);
    for (size_t k = jl->count; k > 0 && !found; k--) {
        const kiq_journey_t *q = &jl->queue[(jl->head + k - 1) % QUEUE_CAP];
        if (match(q, want)) {
            memcpy(out, q, kiq_journey_size(q));
            found = true;
        }
    }
    pthread_mutex_unlock(&jl->qmu);
    if (found) return true;
    kiq_journey_t *scratch = malloc(sizeof *scratch);
    int n;
    int64_t *bases = scratch ? list_segments(jl, &n) : NULL;
    char path[PATH_MAX + 40];
    pthread_mutex_lock(&jl->imu);
    summaries_prune(jl, bases, bases ? n : 0);
    for (int i = (bases ? n : 0) - 1; i >= 0 && !found; i--) {
        segment_path(jl, bases[i], path, sizeof path);
        summary_t *m = summary_of(jl, bases[i]);
        if (m) summary_update(path, m, scratch);
        if (!m || may_hold(m, match, want)) found = find_in_file(path, match, want, scratch, out);
    }
    pthread_mutex_unlock(&jl->imu);
    free(bases);
    free(scratch);
    return found;
}

bool kiq_journal_find(kiq_journal_t *jl, const char *topic, int32_t partition, int64_t offset, kiq_journey_t *out)
{
    by_offset_t want = {topic, partition, offset};
    return find(jl, match_offset, &want, out);
}

bool kiq_journal_find_trace(kiq_journal_t *jl, uint64_t trace, kiq_journey_t *out)
{
    return find(jl, match_trace, &trace, out);
}

void kiq_journal_stats(kiq_journal_t *jl, kiq_journal_stats_t *out)
{
    pthread_mutex_lock(&jl->wmu);
    *out = (kiq_journal_stats_t){
        .written = atomic_load_explicit(&jl->written, memory_order_relaxed),
        .dropped = atomic_load_explicit(&jl->dropped, memory_order_relaxed),
        .bytes = jl->bytes,
        .segments = jl->segments,
    };
    pthread_mutex_unlock(&jl->wmu);
}
