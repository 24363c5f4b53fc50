/* The replica fetcher thread; see replica_fetcher.h. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/uuid.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/log_flusher.h"
#include "log/log_names.h"
#include "net/peer_channel.h"
#include "proto/errors.h"
#include "proto/messages.h"
#include "record/batch.h"
#include "replica/partition_replica.h"
#include "replica/replica_fetcher.h"

/* After a round with no usable answer the fetcher waits, doubling from the
 * first to the most: the usual cause, a follower told of a new partition
 * before its leader, passes within milliseconds, while a leader that is
 * down is not hammered. */
#define FIRST_BACKOFF_MS 5
#define MAX_BACKOFF_MS 200
#define REQUEST_TIMEOUT_MS 30000

typedef struct followed {
    kiq_topic_t *topic; /* a reference */
    int32_t partition;
} followed_t;

/* A partition as the fetch session last heard of it. */
typedef struct sent {
    kiq_uuid_t topic_id;
    char *topic;
    int32_t partition;
    kiq_fetch_request_topics_partitions_t asked;
    int64_t lag; /* behind the leader's high watermark in the last answer that named it */
} sent_t;

struct kiq_replica_fetcher {
    kiq_replica_fetcher_config_t cfg;
    char host[256];
    /* fetches while it follows something and is not paused: a round is one
     * Fetch (a long poll); poked by a partition added or a pause lifted */
    kiq_worker_t *worker;
    pthread_mutex_t mu; /* guards the list, running and paused */
    /* Held by the thread while it applies an answer, and by a removal
     * (before mu): a partition removed (it becomes leader, or follows
     * another) is past any apply, and no later one touches it, so a stale
     * answer never truncates or appends to a log taking produce batches. */
    pthread_mutex_t apply_mu;
    followed_t *parts;
    int nparts, cap;
    bool running, paused;
    kiq_peer_channel_t *line; /* to the leader: the worker's; interrupted from any thread */
    /* The largest lag behind the leader's high watermark, in offsets, in
     * the last answer (Kafka's MaxLag); written by the thread. */
    atomic_int_fast64_t max_lag;
    int backoff_ms; /* the last wait after a failed round, 0 after a good one; the thread's */
    /* The incremental fetch session with the leader (KIP-227), the
     * thread's: a Fetch names only the partitions whose position changed
     * since the session last heard of them, and its answer only those with
     * news. Epoch 0: the next fetch is full (closing session_id, if any,
     * and opening another). */
    int32_t session_id, session_epoch;
    sent_t *sent;
    int nsent;
};

/* The length of the whole batches at the start of records: a leader may
 * cut the last one short at max_bytes. */
static size_t whole_batches(const uint8_t *p, size_t len)
{
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, len, true);
    const uint8_t *b;
    size_t blen, total = 0;
    kiq_batch_header_t h;
    while (kiq_batch_iter_next(&it, &b, &blen, &h) == 1) total = (size_t)(b + blen - p);
    return total;
}

/* APPENDED for each leader batch a follower append wrote, where it went. */
static void announce(const kiq_partition_replica_t *rep, kiq_partition_log_t *log, int32_t leader, const uint8_t *p,
                     size_t len, const kiq_log_append_result_t *res)
{
    char file[4096];
    const char *path =
        kiq_log_segment_path(file, sizeof file, kiq_partition_log_dir(log), res->segment_base, KIQ_LOG_SUFFIX) == 0
            ? file
            : NULL;
    kiq_batch_iter_t it;
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    kiq_batch_iter_init(&it, p, len, false);
    int64_t at = res->position;
    while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
        kiq_event_t e = kiq_event(KIQ_POINT_APPENDED, rep->self);
        e.t_ns = res->written_ns; /* before the fsync flush.messages may have asked for */
        e.topic = rep->topic;
        e.partition = rep->partition;
        e.first_offset = h.base_offset;
        e.last_offset = kiq_batch_last_offset(&h);
        e.file = path;
        e.position = at;
        e.bytes = (int64_t)blen;
        e.peer = leader;
        e.flags = KIQ_EVENT_FOLLOWER;
        kiq_observers_emit(rep->observers, &e);
        at += (int64_t)blen;
    }
}

/* Under apply_mu: whether the partition is still fetched here (it may have
 * been removed while the answer was on its way). */
static bool listed(kiq_replica_fetcher_t *f, const kiq_topic_t *topic, int32_t partition)
{
    bool found = false;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nparts && !found; i++) found = f->parts[i].topic == topic && f->parts[i].partition == partition;
    pthread_mutex_unlock(&f->mu);
    return found;
}

/* One partition's answer; false when it was an error (or stale). */
static bool apply(kiq_replica_fetcher_t *f, kiq_partition_t *part, int32_t epoch_asked,
                  const kiq_fetch_response_responses_partitions_t *pr)
{
    kiq_partition_replica_t *rep = part->replica;
    kiq_partition_log_t *log = part->log;
    const char *topic = part->topic->name;
    int32_t epoch;
    /* the controller moved the partition meanwhile: this answer is stale */
    if (!log || !kiq_partition_replica_follows(rep, f->cfg.leader, &epoch) || epoch != epoch_asked) return false;
    if (pr->error_code) {
        KIQ_DEBUG("fetch of %s-%d from broker %d: error %d", topic, part->index, f->cfg.leader, pr->error_code);
        return false;
    }
    if (pr->diverging_epoch.epoch >= 0 && pr->diverging_epoch.end_offset >= 0) {
        int64_t leo = kiq_partition_log_end_offset(log);
        int64_t to = pr->diverging_epoch.end_offset < leo ? pr->diverging_epoch.end_offset : leo;
        KIQ_INFO("%s-%d: the log diverges from leader %d's at epoch %d; truncating from offset %lld to %lld", topic,
                 part->index, f->cfg.leader, pr->diverging_epoch.epoch, (long long)leo, (long long)to);
        if (kiq_partition_log_truncate_to(log, to) != 0)
            KIQ_ERROR("%s-%d: cannot truncate to %lld: %s", topic, part->index, (long long)to, kiq_error_get());
        return true;
    }
    if (pr->records.p && pr->records.len > 0) {
        size_t n = whole_batches(pr->records.p, (size_t)pr->records.len);
        if (n > 0) {
            kiq_log_append_result_t res;
            if (kiq_partition_log_append_follower(log, pr->records.p, n, &res) != 0) {
                KIQ_WARN("%s-%d: cannot append what leader %d sent: %s", topic, part->index, f->cfg.leader,
                         kiq_error_get());
                return false;
            }
            if (kiq_observers_want(rep->observers, KIQ_POINT_APPENDED)) announce(rep, log, f->cfg.leader, pr->records.p, n, &res);
            if (res.flushed)
                kiq_log_flush_announce(rep->observers, rep->self, NULL, rep->topic, rep->partition, &res.flush, 0);
        }
    }
    if (pr->log_start_offset > kiq_partition_log_start_offset(log) &&
        pr->log_start_offset <= kiq_partition_log_end_offset(log))
        kiq_partition_log_advance_start(log, pr->log_start_offset);
    int64_t leo = kiq_partition_log_end_offset(log);
    int64_t hw = pr->high_watermark < leo ? pr->high_watermark : leo;
    if (hw > kiq_partition_log_high_watermark(log)) kiq_partition_log_set_high_watermark(log, hw);
    return true;
}

/* A damaged log (the scrubber's mark) is fetched again from the leader
 * from the damaged segment on, once the controller has taken this replica
 * out of the ISR (its broker reported it impaired): until then a leader
 * election could still count on what is there. Here, in the thread that
 * appends, so no answer to an earlier fetch lands past the cut. True when
 * the log was cut. */
static bool refetch_damaged(kiq_replica_fetcher_t *f, const kiq_topic_t *topic, int32_t partition,
                            kiq_partition_replica_t *rep, kiq_partition_log_t *log)
{
    int64_t from = kiq_partition_log_damaged(log, NULL, 0);
    if (from < 0) return false;
    kiq_replica_view_t v;
    kiq_partition_replica_view(rep, &v);
    for (int i = 0; i < v.nisr; i++)
        if (v.isr[i] == f->cfg.self) return false;
    if (from < kiq_partition_log_start_offset(log)) from = kiq_partition_log_start_offset(log);
    KIQ_WARN("%s-%d: fetching the damaged range from offset %lld again from leader %d", topic->name, partition,
             (long long)from, f->cfg.leader);
    if (kiq_partition_log_truncate_to(log, from) != 0)
        KIQ_ERROR("%s-%d: cannot truncate the damaged range: %s", topic->name, partition, kiq_error_get());
    return true;
}

/* Snapshot of the list with references, so no lock is held over the fetch. */
static int snapshot(kiq_replica_fetcher_t *f, followed_t **out)
{
    pthread_mutex_lock(&f->mu);
    int n = f->nparts;
    followed_t *s = n ? calloc((size_t)n, sizeof *s) : NULL;
    for (int i = 0; s && i < n; i++) {
        s[i] = f->parts[i];
        atomic_fetch_add(&s[i].topic->refs, 1);
    }
    pthread_mutex_unlock(&f->mu);
    *out = s;
    return s ? n : 0;
}

/* Whether a Fetch answer's topic entry is topic: by id from v13. */
static bool names_topic(int16_t v, const kiq_fetch_response_responses_t *tr, const kiq_topic_t *topic)
{
    if (v >= 13) return memcmp(tr->topic_id.b, topic->id.b, sizeof topic->id.b) == 0;
    return tr->topic.len == (int32_t)strlen(topic->name) && memcmp(tr->topic.p, topic->name, (size_t)tr->topic.len) == 0;
}

static void forget_sent(kiq_replica_fetcher_t *f)
{
    for (int i = 0; i < f->nsent; i++) free(f->sent[i].topic);
    free(f->sent);
    f->sent = NULL;
    f->nsent = 0;
}

/* The next fetch is full: it closes the session (keep) or, after the
 * leader lost it, opens another alone. */
static void session_restart(kiq_replica_fetcher_t *f, bool keep)
{
    if (!keep) f->session_id = 0;
    f->session_epoch = 0;
    forget_sent(f);
}

/* The same partition: by topic id, random and never reused; by name
 * too for a topic without one. */
static bool is_sent(const sent_t *s, const kiq_topic_t *topic, int32_t partition)
{
    return s->partition == partition && memcmp(s->topic_id.b, topic->id.b, sizeof s->topic_id.b) == 0 &&
           (!kiq_uuid_is_zero(&topic->id) || strcmp(s->topic, topic->name) == 0);
}

/* Where the session has the partition, looked for at hint first (the
 * partitions come in the same order round after round); -1: not there. */
static int find_sent(const kiq_replica_fetcher_t *f, int hint, const kiq_topic_t *topic, int32_t partition)
{
    if (hint < f->nsent && is_sent(&f->sent[hint], topic, partition)) return hint;
    for (int i = 0; i < f->nsent; i++)
        if (is_sent(&f->sent[i], topic, partition)) return i;
    return -1;
}

static bool same_ask(const kiq_fetch_request_topics_partitions_t *a, const kiq_fetch_request_topics_partitions_t *b)
{
    return a->fetch_offset == b->fetch_offset && a->last_fetched_epoch == b->last_fetched_epoch &&
           a->log_start_offset == b->log_start_offset && a->current_leader_epoch == b->current_leader_epoch &&
           a->partition_max_bytes == b->partition_max_bytes;
}

/* After an answer the session took: it now knows the partitions as they
 * were asked (the sent list is kept when the same partitions were asked,
 * rebuilt when they changed); each one's lag, from this answer when it
 * named it. -1 when out of memory. */
static int remember_sent(kiq_replica_fetcher_t *f, const followed_t *asked, const kiq_fetch_request_topics_t *topics,
                         const int64_t *lags, int nasked)
{
    bool same = f->nsent == nasked;
    for (int k = 0; k < nasked && same; k++) same = is_sent(&f->sent[k], asked[k].topic, asked[k].partition);
    if (!same) {
        sent_t *next = calloc((size_t)(nasked ? nasked : 1), sizeof *next);
        if (!next) return -1;
        for (int k = 0; k < nasked; k++) {
            int at = find_sent(f, k, asked[k].topic, asked[k].partition);
            next[k] = (sent_t){.topic_id = asked[k].topic->id, .partition = asked[k].partition,
                               .lag = at >= 0 ? f->sent[at].lag : 0};
            if (!(next[k].topic = strdup(asked[k].topic->name))) {
                for (int j = 0; j < k; j++) free(next[j].topic);
                free(next);
                return -1;
            }
        }
        forget_sent(f);
        f->sent = next;
        f->nsent = nasked;
    }
    for (int k = 0; k < nasked; k++) {
        f->sent[k].asked = topics[k].partitions[0];
        if (lags[k] != INT64_MIN) f->sent[k].lag = lags[k];
    }
    return 0;
}

/* Asks for the partitions still followed from this leader with a log here
 * (a LeaderAndIsr or StopReplica may be moving them right now). Returns
 * how many got a usable answer: none means back off, so a leader that does
 * not know its new term yet is not asked in a tight loop. */
static int fetch_once(kiq_replica_fetcher_t *f, followed_t *ps, int n)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    /* the highest both speak: from v13 topics go by id, from v15 the
     * follower names itself in replica_state */
    int16_t v = kiq_peer_channel_version(f->line, KIQ_API_FETCH);
    if (v < 12) {
        if (v >= 0) kiq_error_set("broker %d does not speak Fetch v12", f->cfg.leader);
        KIQ_DEBUG("replica fetcher: cannot fetch from broker %d: %s", f->cfg.leader, kiq_error_get());
        return 0;
    }
    kiq_fetch_request_t req;
    kiq_fetch_request_init(&req);
    req.replica_id = f->cfg.self;
    req.replica_state.replica_id = f->cfg.self;
    req.max_wait_ms = f->cfg.max_wait_ms;
    req.min_bytes = 1;
    req.max_bytes = INT32_MAX;
    /* one topic entry per partition: simple, and the leader accepts it */
    kiq_fetch_request_topics_t *all = kiq_arena_calloc(&a, (size_t)n, sizeof *all);
    int32_t *epochs = kiq_arena_calloc(&a, (size_t)n, sizeof *epochs);
    kiq_partition_t **parts = kiq_arena_calloc(&a, (size_t)n, sizeof *parts);
    followed_t *asked = kiq_arena_calloc(&a, (size_t)n, sizeof *asked);
    int64_t *lags = kiq_arena_calloc(&a, (size_t)n, sizeof *lags);
    int nasked = 0;
    for (int i = 0; i < n; i++) {
        kiq_partition_t *p = ps[i].topic->partitions[ps[i].partition];
        kiq_partition_log_t *log = p->log;
        int32_t epoch;
        if (!log || !kiq_partition_replica_follows(p->replica, f->cfg.leader, &epoch)) continue;
        kiq_log_positions_t pos;
        kiq_partition_log_positions(log, &pos);
        if (pos.damaged && refetch_damaged(f, ps[i].topic, ps[i].partition, p->replica, log))
            kiq_partition_log_positions(log, &pos);
        int k = nasked++;
        asked[k] = ps[i];
        parts[k] = p;
        epochs[k] = epoch;
        lags[k] = INT64_MIN;
        kiq_fetch_request_topics_t *t = &all[k];
        kiq_fetch_request_topics_init(t);
        t->topic = KIQ_STR(ps[i].topic->name);
        t->topic_id = ps[i].topic->id;
        t->partitions_n = 1;
        t->partitions = kiq_arena_calloc(&a, 1, sizeof *t->partitions);
        kiq_fetch_request_topics_partitions_t *fp = &t->partitions[0];
        kiq_fetch_request_topics_partitions_init(fp);
        fp->partition = ps[i].partition;
        fp->current_leader_epoch = epochs[k];
        fp->fetch_offset = pos.end_offset;
        fp->last_fetched_epoch = pos.last_batch_epoch;
        fp->log_start_offset = pos.start_offset;
        fp->partition_max_bytes = f->cfg.max_bytes;
    }
    if (nasked == 0) {
        kiq_arena_reset(&a);
        return 0;
    }
    /* a topic without an id (as librdkafka does): by name, then */
    for (int k = 0; k < nasked && v > 12; k++)
        if (kiq_uuid_is_zero(&asked[k].topic->id)) v = 12;
    /* The session: a full fetch names every partition; an incremental one
     * those the session has not heard of as they are now, and forgets
     * those no longer asked for. */
    bool incremental = f->session_id != 0 && f->session_epoch > 0;
    req.session_id = f->session_id;
    req.session_epoch = f->session_epoch;
    req.topics = kiq_arena_calloc(&a, (size_t)nasked, sizeof *req.topics);
    for (int k = 0; k < nasked; k++) {
        int at = incremental ? find_sent(f, k, asked[k].topic, asked[k].partition) : -1;
        if (at < 0 || !same_ask(&f->sent[at].asked, &all[k].partitions[0])) req.topics[req.topics_n++] = all[k];
    }
    if (incremental) {
        req.forgotten_topics_data = kiq_arena_calloc(&a, (size_t)(f->nsent ? f->nsent : 1), sizeof *req.forgotten_topics_data);
        for (int i = 0; i < f->nsent; i++) {
            const sent_t *sp = &f->sent[i];
            bool still = i < nasked && is_sent(sp, asked[i].topic, asked[i].partition);
            for (int k = 0; k < nasked && !still; k++) still = is_sent(sp, asked[k].topic, asked[k].partition);
            if (still) continue;
            kiq_fetch_request_forgotten_topics_data_t *fg = &req.forgotten_topics_data[req.forgotten_topics_data_n++];
            kiq_fetch_request_forgotten_topics_data_init(fg);
            fg->topic = KIQ_STR(sp->topic);
            fg->topic_id = sp->topic_id;
            fg->partitions_n = 1;
            fg->partitions = kiq_arena_calloc(&a, 1, sizeof *fg->partitions);
            fg->partitions[0] = sp->partition;
        }
    }
    kiq_fetch_response_t resp;
    kiq_fetch_response_init(&resp);
    int answered = 0;
    if (kiq_peer_channel_request(f->line, KIQ_API_FETCH, v, &req, &a, &resp, f->cfg.max_wait_ms + REQUEST_TIMEOUT_MS) !=
        0) {
        KIQ_DEBUG("replica fetcher for broker %d: %s", f->cfg.leader, kiq_error_get());
        /* the leader may or may not have taken it: close the session, open another */
        session_restart(f, true);
    } else if (resp.error_code) {
        KIQ_DEBUG("replica fetcher for broker %d: fetch session %d epoch %d: error %d", f->cfg.leader, req.session_id,
                  req.session_epoch, resp.error_code);
        bool lost = resp.error_code == KIQ_ERR_FETCH_SESSION_ID_NOT_FOUND ||
                    resp.error_code == KIQ_ERR_INVALID_FETCH_SESSION_EPOCH ||
                    resp.error_code == KIQ_ERR_FETCH_SESSION_TOPIC_ID_ERROR;
        session_restart(f, !lost);
        /* the session is gone, not the leader: a full fetch at once */
        answered = lost;
    } else {
        int failed = 0;
        pthread_mutex_lock(&f->apply_mu);
        for (int32_t i = 0; i < resp.responses_n; i++) {
            const kiq_fetch_response_responses_t *tr = &resp.responses[i];
            for (int32_t j = 0; j < tr->partitions_n; j++) {
                const kiq_fetch_response_responses_partitions_t *pr = &tr->partitions[j];
                for (int k = 0; k < nasked; k++)
                    if (pr->partition_index == asked[k].partition && names_topic(v, tr, asked[k].topic)) {
                        if (listed(f, asked[k].topic, asked[k].partition)) {
                            bool ok = apply(f, parts[k], epochs[k], pr);
                            answered += ok;
                            failed += !ok;
                        }
                        kiq_partition_log_t *log = parts[k]->log;
                        lags[k] = log ? pr->high_watermark - kiq_partition_log_end_offset(log) : 0;
                        break;
                    }
            }
        }
        pthread_mutex_unlock(&f->apply_mu);
        /* what an incremental answer leaves out had nothing new: answered too */
        if (incremental) answered = nasked - failed;
        if (incremental && resp.session_id != f->session_id) {
            session_restart(f, false); /* the leader closed it (answered sessionless) */
        } else if (incremental) {
            f->session_epoch = f->session_epoch == INT32_MAX ? 1 : f->session_epoch + 1;
        } else {
            f->session_id = resp.session_id;
            f->session_epoch = resp.session_id != 0 ? 1 : 0;
        }
        if (f->session_epoch > 0 && remember_sent(f, asked, all, lags, nasked) != 0) session_restart(f, true);
        int64_t max_lag = 0;
        for (int k = 0; k < nasked; k++)
            if (lags[k] > max_lag) max_lag = lags[k];
        for (int i = 0; i < f->nsent; i++)
            if (f->sent[i].lag > max_lag) max_lag = f->sent[i].lag;
        atomic_store_explicit(&f->max_lag, max_lag, memory_order_relaxed);
    }
    kiq_arena_reset(&a);
    return answered;
}

/* The worker's round: one Fetch of what it follows (connecting first when
 * it must); the wait before the next (-1: until a poke). */
static int64_t fetcher_round(void *arg)
{
    kiq_replica_fetcher_t *f = arg;
    pthread_mutex_lock(&f->mu);
    bool idle = !f->running || f->nparts == 0 || f->paused;
    pthread_mutex_unlock(&f->mu);
    if (idle) return -1;
    followed_t *ps;
    int n = snapshot(f, &ps);
    int answered = n > 0 ? fetch_once(f, ps, n) : 0;
    for (int i = 0; i < n; i++) kiq_topic_unref(ps[i].topic);
    free(ps);
    if (answered > 0) return f->backoff_ms = 0;
    f->backoff_ms = f->backoff_ms ? f->backoff_ms * 2 : FIRST_BACKOFF_MS;
    if (f->backoff_ms > MAX_BACKOFF_MS) f->backoff_ms = MAX_BACKOFF_MS;
    return f->backoff_ms;
}

kiq_replica_fetcher_t *kiq_replica_fetcher_new(const kiq_replica_fetcher_config_t *cfg)
{
    kiq_replica_fetcher_t *f = calloc(1, sizeof *f);
    if (!f) return kiq_error_set("out of memory"), NULL;
    f->cfg = *cfg;
    snprintf(f->host, sizeof f->host, "%s", cfg->host);
    f->cfg.host = f->host;
    /* the client id names the follower, so a leader's interceptor can pick its fetches */
    char client_id[48], name[32], peer[16];
    snprintf(client_id, sizeof client_id, "kafkaiq-replica-fetcher-%d", cfg->self);
    snprintf(name, sizeof name, "fetcher-%d-%d", cfg->leader, cfg->index);
    snprintf(peer, sizeof peer, "%d", cfg->leader);
    kiq_peer_channel_config_t lc = {.name = name, .peer = peer, .host = cfg->host, .port = cfg->port,
                                    .client_id = client_id, .metrics = cfg->metrics,
                                    .security = cfg->security};
    if (!(f->line = kiq_peer_channel_open(&lc))) {
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->apply_mu, NULL);
    f->running = true;
    kiq_worker_config_t wc = {.name = name, .round = fetcher_round, .ctx = f};
    if (!(f->worker = kiq_worker_start(&wc))) {
        kiq_peer_channel_free(f->line);
        pthread_mutex_destroy(&f->mu);
        pthread_mutex_destroy(&f->apply_mu);
        free(f);
        return NULL;
    }
    return f;
}

/* Under the mutex: cuts a fetch in flight short. */
static void interrupt_locked(kiq_replica_fetcher_t *f)
{
    kiq_peer_channel_interrupt(f->line);
    kiq_worker_poke(f->worker);
}

void kiq_replica_fetcher_free(kiq_replica_fetcher_t *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->running = false;
    pthread_mutex_unlock(&f->mu);
    kiq_peer_channel_stop(f->line); /* the fetch in flight ends, no new one starts */
    kiq_worker_stop(f->worker);
    kiq_peer_channel_free(f->line);
    forget_sent(f);
    for (int i = 0; i < f->nparts; i++) kiq_topic_unref(f->parts[i].topic);
    free(f->parts);
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->apply_mu);
    free(f);
}

int kiq_replica_fetcher_add(kiq_replica_fetcher_t *f, kiq_topic_t *topic, int32_t partition)
{
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nparts; i++)
        if (f->parts[i].topic == topic && f->parts[i].partition == partition) {
            pthread_mutex_unlock(&f->mu);
            return 0;
        }
    if (f->nparts == f->cap) {
        int cap = f->cap ? f->cap * 2 : 16;
        followed_t *p = realloc(f->parts, (size_t)cap * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&f->mu);
            return kiq_error_set("out of memory");
        }
        f->parts = p;
        f->cap = cap;
    }
    atomic_fetch_add(&topic->refs, 1);
    f->parts[f->nparts++] = (followed_t){topic, partition};
    kiq_worker_poke(f->worker);
    pthread_mutex_unlock(&f->mu);
    return 0;
}

bool kiq_replica_fetcher_remove(kiq_replica_fetcher_t *f, const kiq_topic_t *topic, int32_t partition)
{
    kiq_topic_t *drop = NULL;
    pthread_mutex_lock(&f->apply_mu); /* past an apply in progress */
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->nparts; i++)
        if (f->parts[i].topic == topic && f->parts[i].partition == partition) {
            drop = f->parts[i].topic;
            f->parts[i] = f->parts[--f->nparts];
            break;
        }
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_unlock(&f->apply_mu);
    kiq_topic_unref(drop);
    return drop != NULL;
}

int kiq_replica_fetcher_count(kiq_replica_fetcher_t *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->nparts;
    pthread_mutex_unlock(&f->mu);
    return n;
}

void kiq_replica_fetcher_pause(kiq_replica_fetcher_t *f, bool paused)
{
    pthread_mutex_lock(&f->mu);
    f->paused = paused;
    if (paused) interrupt_locked(f);
    else kiq_worker_poke(f->worker);
    pthread_mutex_unlock(&f->mu);
}

int64_t kiq_replica_fetcher_max_lag(kiq_replica_fetcher_t *f)
{
    return atomic_load_explicit(&f->max_lag, memory_order_relaxed);
}
