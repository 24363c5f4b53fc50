/* Fetch: whole batches from each partition's log up to the high watermark,
 * sized by partition_max_bytes and max_bytes (at least one batch always goes
 * out). With nothing to return and max_wait_ms > 0 the request waits in the
 * purgatory until data is appended or the wait ends. Incremental fetch
 * sessions (KIP-227, server/fetch_sessions.h): an incremental fetch reads
 * every partition of its session, and its answer keeps those with news.
 * Fetch interceptors see each partition's answer once, just before it is
 * sent (on the I/O thread, or on the purgatory thread after a wait).
 *
 * Zero copy: unless kafkaiq.fetch.sendfile is off or a fetch interceptor
 * needs the bytes, a partition's records are not read at all: the response
 * carries the located log slices as file parts, which the processor sends
 * with sendfile() from the page cache, holding the segments until the last
 * byte is out. As in Kafka, a truncation of the log after the slices were
 * located is not detected for these: a shortened file closes the
 * connection mid-response, and the client retries.
 *
 * A partition whose read meets a batch the scrubber found damaged gets
 * the records before it, and a fetch starting at it CORRUPT_MESSAGE: the
 * altered bytes never go out (librdkafka does not check CRCs by default).
 *
 * Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere; a stale or
 * future current_leader_epoch gets FENCED / UNKNOWN_LEADER_EPOCH; a leader
 * new in its term answers consumers OFFSET_NOT_AVAILABLE until its high
 * watermark reaches where the term began, so theirs never goes back).
 * Consumers (replica_id < 0) read up to the high watermark and wait for it
 * to move. Followers (replica_id = their broker id) read up to the log end
 * and wait for appends; their fetch offset is their log end, which moves
 * the high watermark and may bring them into the ISR; from v12, a
 * last_fetched_epoch the leader's log disagrees with is answered with the
 * diverging epoch (where the follower must truncate) and no records.
 *
 * From v13 topics are named by id (an unknown one is UNKNOWN_TOPIC_ID),
 * from v15 a follower names itself in replica_state, and from v16 a
 * partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names
 * its current leader, whose endpoint the answer carries (KIP-951). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "controller/quorum.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "replica/replica_manager.h"
#include "controller/metadata_cache.h"

/* One partition's answer as it lies in its log: the slices (holding their
 * segments) and the ranges the encoder places in the frame. In the
 * request's arena; released when the request is freed or the fetch parks. */
typedef struct fetch_files {
    kiq_log_slices_t sl;
    kiq_file_range_t ranges[KIQ_LOG_MAX_SLICES];
    kiq_file_records_t records;
    struct fetch_files *next;
} fetch_files_t;

/* What one fetch_read produced, kept by the thread holding the request. */
typedef struct fetch_result {
    int64_t bytes;       /* records in the answer */
    bool zero_copy;      /* answered from files: interceptors did not ask */
    bool diverging;      /* a follower must truncate: answer at once */
    fetch_files_t *held; /* slices referenced by the answer */
} fetch_result_t;

typedef struct fetch_op {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    const kiq_fetch_request_t *req;
    kiq_fetch_response_t *resp;
    kiq_fetch_session_ticket_t session;
} fetch_op_t;

static void fetch_files_release(void *arg) { kiq_log_slices_release(&((fetch_files_t *)arg)->sl); }

/* Drops the segments a first read held, so a parked fetch keeps none while
 * it waits (it locates again when it completes). Releasing twice is fine. */
static void fetch_release_held(fetch_result_t *res)
{
    for (fetch_files_t *f = res->held; f; f = f->next) fetch_files_release(f);
    res->held = NULL;
}

/* Locates a partition's answer and puts it in the response as file parts.
 * Returns the bytes, 0, KIQ_LOG_OUT_OF_RANGE, KIQ_LOG_CORRUPT or -1, like
 * the copy path. */
static int64_t fetch_locate(kiq_request_t *r, kiq_partition_log_t *log, int64_t offset, int32_t limit,
                            int64_t hw, bool later, kiq_fetch_response_responses_partitions_t *pr,
                            fetch_result_t *res)
{
    fetch_files_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
    int n = kiq_partition_log_locate(log, offset, limit, hw, &f->sl);
    if (n <= 0) return n;
    if (later && n > limit) {
        kiq_log_slices_release(&f->sl);
        return 0;
    }
    for (int i = 0; i < f->sl.n; i++)
        f->ranges[i] = (kiq_file_range_t){f->sl.s[i].fd, f->sl.s[i].position, f->sl.s[i].length};
    f->records = (kiq_file_records_t){f->ranges, f->sl.n};
    kiq_request_defer(r, fetch_files_release, f);
    f->next = res->held;
    res->held = f;
    pr->records_file = &f->records;
    return n;
}

/* Reads a partition's answer into a heap buffer the response owns.
 * Returns the bytes, 0, KIQ_LOG_OUT_OF_RANGE, KIQ_LOG_CORRUPT or -1. */
static int64_t fetch_copy(kiq_request_t *r, kiq_partition_log_t *log, int64_t offset, int32_t limit,
                          int64_t hw, bool later, kiq_fetch_response_responses_partitions_t *pr)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    int64_t n = kiq_partition_log_read(log, offset, limit, hw, &w);
    if (n < 0 || w.err) {
        kiq_wr_free(&w);
        return n == KIQ_LOG_OUT_OF_RANGE || n == KIQ_LOG_CORRUPT ? n : -1;
    }
    if (later && (int64_t)w.len > limit) w.len = 0;
    if (!w.len) {
        kiq_wr_free(&w);
        return 0;
    }
    /* the read buffer itself goes into the response: no second copy */
    size_t len;
    uint8_t *buf = kiq_wr_steal(&w, &len);
    kiq_request_own(r, buf);
    pr->records = (kiq_bytes_t){buf, (int32_t)len};
    return (int64_t)len;
}

/* The fetching follower's broker id, or -1 for a consumer (v15 moved it
 * into replica_state). */
static int32_t fetch_replica(const kiq_request_t *r, const kiq_fetch_request_t *req)
{
    return r->header.api_version >= 15 ? req->replica_state.replica_id : req->replica_id;
}

/* The topic a request's entry names, by name or (v13+) by id: a reference,
 * or NULL with *err the error its partitions get. A topic this broker
 * hosts no replica of is another broker's to answer. */
static kiq_topic_t *fetch_topic(kiq_broker_t *b, const kiq_request_t *r, const kiq_fetch_request_topics_t *t,
                                kiq_arena_t *names, kiq_str_t *name, int16_t *err)
{
    bool by_id = r->header.api_version >= 13;
    kiq_topic_t *topic = by_id ? kiq_topics_get_by_id(b->topics, &t->topic_id) : kiq_topics_get(b->topics, t->topic);
    if (topic) return topic;
    kiq_cached_topic_t known;
    bool elsewhere = false;
    if (b->cluster && by_id) {
        kiq_arena_t a;
        kiq_arena_init(&a);
        elsewhere = kiq_metadata_cache_topic_by_id(b->metadata, &t->topic_id, names ? names : &a, &known);
        /* named from the metadata, so that the leader hint can be found */
        if (elsewhere && names) *name = (kiq_str_t){known.name, (int32_t)known.len};
        kiq_arena_reset(&a);
    } else if (b->cluster && t->topic.p) {
        elsewhere = kiq_metadata_cache_partition_count(b->metadata, t->topic.p, (size_t)t->topic.len) > 0;
    }
    *err = elsewhere ? KIQ_ERR_NOT_LEADER_OR_FOLLOWER
           : by_id   ? KIQ_ERR_UNKNOWN_TOPIC_ID
                     : KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    return NULL;
}

/* Whether this broker may answer the partition from log (part's, loaded
 * once) to replica (-1: a consumer): a Kafka error code. */
static int16_t fetch_check(int16_t version, int32_t replica, kiq_partition_t *part, kiq_partition_log_t *log,
                           const kiq_fetch_request_topics_partitions_t *p)
{
    if (!log) return KIQ_ERR_NOT_LEADER_OR_FOLLOWER; /* not a replica here */
    if (kiq_partition_log_offline(log)) return KIQ_ERR_KAFKA_STORAGE_ERROR;
    if (replica >= 0)
        return kiq_partition_replica_check_follower_fetch(part->replica, replica, p->current_leader_epoch);
    /* from v11 (KIP-392) a follower serves consumers too, as Kafka's does;
     * a new leader not yet sure what was committed answers "retry soon"
     * rather than let the high watermark go back (clients refresh and back off) */
    return kiq_partition_replica_check_consumer_fetch(part->replica, log, version >= 11, p->current_leader_epoch);
}

/* A follower's last fetched epoch that the leader's log does not have up
 * to its fetch offset: true with where the logs part (Kafka's rule). */
static bool fetch_diverges(kiq_partition_log_t *log, const kiq_fetch_request_topics_partitions_t *p,
                           kiq_fetch_response_responses_partitions_t *pr)
{
    if (p->last_fetched_epoch < 0) return false;
    int32_t epoch;
    int64_t end;
    kiq_partition_log_end_offset_for_epoch(log, p->last_fetched_epoch, &epoch, &end);
    if (epoch < 0) {
        /* an epoch newer than any appended here (or none yet): Kafka's new
         * leader records its term as starting at its log end when it takes
         * over, ours when it first appends in it; answer as Kafka's would */
        int32_t latest = kiq_partition_log_latest_epoch(log);
        epoch = latest >= 0 && latest < p->last_fetched_epoch ? latest : p->last_fetched_epoch;
        end = kiq_partition_log_end_offset(log);
    }
    if (epoch == p->last_fetched_epoch && end >= p->fetch_offset) return false;
    pr->diverging_epoch.epoch = epoch;
    pr->diverging_epoch.end_offset = end;
    return true;
}

/* A fetch at the log end, all it may read: nothing to locate (the usual
 * case of a fetch's other partitions, and of a waiting fetch's). */
static bool caught_up(const kiq_log_positions_t *pos, int64_t fetch_offset, int64_t upto)
{
    return fetch_offset == upto && upto == pos->end_offset && fetch_offset >= pos->start_offset;
}

/* Announces records a fetch returns: FOLLOWER_FETCHED for follower
 * `replica`, RECORDS_FETCHED for a consumer (replica -1); held: it was
 * parked in the purgatory before (a consumer's says what for). */
static void fetched(kiq_broker_t *b, kiq_request_t *r, const kiq_fetch_request_t *req, kiq_topic_t *topic,
                    const kiq_fetch_request_topics_partitions_t *p, int32_t replica, int64_t hw, int64_t bytes,
                    bool zero_copy, bool held)
{
    enum kiq_point point = replica >= 0 ? KIQ_POINT_FOLLOWER_FETCHED : KIQ_POINT_RECORDS_FETCHED;
    if (!kiq_observers_want(&b->observers, point)) return;
    kiq_event_t e = kiq_event(point, b->node_id);
    e.request = r;
    e.topic = topic->name;
    e.partition = p->partition;
    e.peer = replica;
    e.first_offset = p->fetch_offset;
    if (replica < 0) e.last_offset = hw;
    e.bytes = bytes;
    e.flags = !zero_copy ? 0 : r->tls ? KIQ_EVENT_TLS_COPY : KIQ_EVENT_SENDFILE;
    if (held && replica < 0) {
        /* its wait in the purgatory began when the handler parked it */
        e.flags |= KIQ_EVENT_HELD;
        e.before = req->min_bytes;
        e.extra = req->max_wait_ms;
        e.after = r->t.handled > 0 ? (e.t_ns - r->t.handled) / 1000 : -1;
    }
    kiq_observers_emit(&b->observers, &e);
}

/* Fills the response and *res. first: the request's first read, which
 * records a follower's progress (a parked fetch's completion does not). */
/* A consumer asking for committed records only (isolation_level 1, v4+). */
static bool read_committed(const kiq_request_t *r, const kiq_fetch_request_t *req)
{
    return r->header.api_version >= 4 && req->isolation_level == 1;
}

/* The aborted transactions a read_committed consumer needs to drop the
 * records of [from, upto) that they wrote. */
static void fetch_aborted(kiq_request_t *r, kiq_partition_log_t *log, int64_t from, int64_t upto,
                          kiq_fetch_response_responses_partitions_t *pr)
{
    kiq_aborted_t *ab;
    size_t n = kiq_partition_log_aborted(log, from, upto, &r->arena, &ab);
    if (!n) return;
    pr->aborted_transactions = kiq_arena_calloc(&r->arena, n, sizeof *pr->aborted_transactions);
    pr->aborted_transactions_n = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
        kiq_fetch_response_responses_partitions_aborted_transactions_init(&pr->aborted_transactions[i]);
        pr->aborted_transactions[i].producer_id = ab[i].producer_id;
        pr->aborted_transactions[i].first_offset = ab[i].first_offset;
    }
}

/* One fetch's reading across its partitions. */
typedef struct fetch_reading {
    kiq_broker_t *b;
    kiq_request_t *r;
    const kiq_fetch_request_t *req;
    int32_t replica; /* the follower fetching, -1 for a consumer */
    bool follower, committed, first;
    fetch_result_t *res;
    kiq_api_leader_nodes_t leaders; /* named in the answer's node_endpoints */
    int64_t budget, total, copied;  /* the request's max_bytes, what is returned, what of it is copied */
    uint64_t *moved; /* a follower's: the keys of partitions whose high watermark it moved */
    int nmoved;
} fetch_reading_t;

/* Partition p of topic (NULL: missing, why; elsewhere its name for the
 * leader hint), read into pr. */
static void read_partition_here(fetch_reading_t *fr, kiq_topic_t *topic, kiq_str_t name, kiq_str_t elsewhere,
                                int16_t missing, const kiq_fetch_request_topics_partitions_t *p,
                                kiq_fetch_response_responses_partitions_t *pr)
{
    kiq_broker_t *b = fr->b;
    kiq_request_t *r = fr->r;
    int32_t replica = fr->replica;
    bool follower = fr->follower, committed = fr->committed, first = fr->first;
    fetch_result_t *res = fr->res;
    kiq_fetch_response_responses_partitions_init(pr);
    pr->partition_index = p->partition;
    pr->records = (kiq_bytes_t){(const uint8_t *)"", 0};
    /* as Kafka's: a list (maybe empty) for a read_committed read and
     * for a partition the cluster does not know (refused before any
     * read), null for any other read and any read that failed */
    pr->aborted_transactions_n = committed ? 0 : -1;
    if (!topic || p->partition < 0 || p->partition >= topic->npartitions) {
        pr->error_code = topic ? KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION : missing;
        pr->high_watermark = -1;
        pr->aborted_transactions_n = pr->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER ? -1 : 0;
        /* hosted nothing of here, led elsewhere (KIP-951) */
        if (r->header.api_version >= 16 && pr->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER)
            kiq_api_leader_hint(b, r, elsewhere, p->partition, &pr->current_leader.leader_id,
                                &pr->current_leader.leader_epoch, &fr->leaders);
        return;
    }
    kiq_partition_t *part = topic->partitions[p->partition];
    kiq_partition_log_t *log = part->log;
    if ((pr->error_code = fetch_check(r->header.api_version, replica, part, log, p)) != 0) {
        pr->high_watermark = -1;
        pr->aborted_transactions_n = -1;
        if (r->header.api_version >= 16 && (pr->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER ||
                                            pr->error_code == KIQ_ERR_FENCED_LEADER_EPOCH))
            kiq_api_leader_hint(b, r, name, p->partition, &pr->current_leader.leader_id,
                                &pr->current_leader.leader_epoch, &fr->leaders);
        return;
    }
    bool diverged = follower && fetch_diverges(log, p, pr);
    if (diverged) {
        res->diverging = true;
    } else if (follower && first) {
        bool moved, expand;
        kiq_partition_replica_follower_fetched(part->replica, log, replica, p->fetch_offset,
                                               kiq_clock_mono_ns() / 1000000, &moved, &expand);
        if (moved && fr->moved)
            fr->moved[fr->nmoved++] = kiq_purgatory_key(topic->name, strlen(topic->name), p->partition);
        if (expand && b->replicas)
            kiq_replica_manager_queue_isr_expand(b->replicas, topic, p->partition, replica);
    }
    kiq_log_positions_t pos;
    kiq_partition_log_positions(log, &pos);
    int64_t hw = pos.high_watermark;
    int64_t lso = pos.last_stable_offset;
    pr->high_watermark = hw;
    pr->last_stable_offset = lso;
    pr->log_start_offset = pos.start_offset;
    if (diverged) return;
    /* followers copy everything; consumers see what is committed,
     * read_committed ones only what no open transaction holds */
    int64_t upto = follower ? pos.end_offset : committed ? lso : hw;
    /* Past the first batch returned, respect the request's max_bytes. */
    int32_t limit = p->partition_max_bytes;
    if (fr->total > 0 && fr->budget - fr->total < limit) limit = (int32_t)(fr->budget - fr->total);
    if (limit <= 0 && fr->total > 0) return;
    /* Only the first data returned may exceed the limits (so a batch
     * bigger than them is never stuck); later ones must fit. */
    bool later = fr->total > 0;
    int64_t n = caught_up(&pos, p->fetch_offset, upto) ? 0
                : res->zero_copy
                    ? fetch_locate(r, log, p->fetch_offset, limit, upto, later, pr, res)
                    : fetch_copy(r, log, p->fetch_offset, limit, upto, later, pr);
    if (n < 0) {
        /* a failed read tells no offsets, as Kafka's does */
        pr->high_watermark = pr->last_stable_offset = pr->log_start_offset = -1;
        pr->aborted_transactions_n = -1;
    }
    if (n == KIQ_LOG_OUT_OF_RANGE) {
        pr->error_code = KIQ_ERR_OFFSET_OUT_OF_RANGE;
        return;
    }
    if (n == KIQ_LOG_CORRUPT) {
        /* Kafka's answer to a read that meets a corrupt batch: the
         * Java consumer raises it from poll(), librdkafka hands it
         * to the application, and both fetch again from there */
        KIQ_WARN_LIMITED("fetch %s-%d at %lld: %s", topic->name, p->partition, (long long)p->fetch_offset,
                         kiq_error_get());
        pr->error_code = KIQ_ERR_CORRUPT_MESSAGE;
        return;
    }
    if (n < 0) {
        KIQ_ERROR("fetch %s-%d at %lld: %s", topic->name, p->partition,
                  (long long)p->fetch_offset, kiq_error_get());
        pr->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
        return;
    }
    if (committed && n > 0) fetch_aborted(r, log, p->fetch_offset, upto, pr);
    fr->total += n;
    if (!res->zero_copy) fr->copied += n;
    if (n > 0) {
        atomic_fetch_add_explicit(res->zero_copy ? &b->fetch_bytes_sendfile : &b->fetch_bytes_copied, n,
                                  memory_order_relaxed);
        fetched(b, r, fr->req, topic, p, follower ? replica : -1, hw, n, res->zero_copy, !first);
    }
}

/* read_partition_here, each partition of a request counted once, per
 * topic hosted here (Kafka's Total/FailedFetchRequestsPerSec). */
static void read_partition(fetch_reading_t *fr, kiq_topic_t *topic, kiq_str_t name, kiq_str_t elsewhere,
                           int16_t missing, const kiq_fetch_request_topics_partitions_t *p,
                           kiq_fetch_response_responses_partitions_t *pr)
{
    read_partition_here(fr, topic, name, elsewhere, missing, p, pr);
    if (topic && fr->first) kiq_topic_counts_request(fr->b->topic_counts, topic->name, true, pr->error_code != 0);
}

static void fetch_read(kiq_broker_t *b, kiq_request_t *r, const kiq_fetch_request_t *req,
                       kiq_fetch_response_t *out, fetch_result_t *res, bool first)
{
    int32_t replica = fetch_replica(r, req);
    fetch_reading_t fr = {
        .b = b,
        .r = r,
        .req = req,
        .replica = replica,
        .follower = replica >= 0,
        .committed = replica < 0 && read_committed(r, req),
        .first = first,
        .res = res,
        .budget = req->max_bytes > 0 ? req->max_bytes : INT32_MAX,
    };
    if (fr.follower && first) {
        int32_t n = 0;
        for (int32_t i = 0; i < req->topics_n; i++) n += req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
        fr.moved = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *fr.moved);
    }
    *res = (fetch_result_t){
        .zero_copy = kiq_config_bool(b->config, KIQ_CFG_FETCH_SENDFILE) &&
                     !kiq_interceptors_active(&b->interceptors, KIQ_HOOK_FETCH),
    };
    out->error_code = KIQ_ERR_NONE;
    out->session_id = 0;
    out->responses_n = req->topics_n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)(req->topics_n > 0 ? req->topics_n : 0),
                                      sizeof *out->responses);
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_fetch_request_topics_t *t = &req->topics[i];
        kiq_fetch_response_responses_t *tr = &out->responses[i];
        kiq_fetch_response_responses_init(tr);
        tr->topic = t->topic;
        tr->topic_id = t->topic_id;
        tr->partitions_n = t->partitions_n;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n > 0 ? t->partitions_n : 0),
                                          sizeof *tr->partitions);
        int16_t missing = KIQ_ERR_NONE;
        kiq_str_t elsewhere = t->topic;
        kiq_topic_t *topic = fetch_topic(b, r, t, &r->arena, &elsewhere, &missing);
        /* a consumer needs READ on the topic (by name, known or not, as Kafka checks) */
        kiq_str_t named = topic ? KIQ_STR(topic->name) : t->topic;
        if (replica < 0 && (topic || r->header.api_version < 13) &&
            !kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, named)) {
            kiq_topic_unref(topic);
            topic = NULL;
            missing = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
        /* the name for interceptors and logs, whichever way it was named */
        if (topic) tr->topic = kiq_request_str(r, topic->name);
        for (int32_t j = 0; j < t->partitions_n; j++)
            read_partition(&fr, topic, tr->topic, elsewhere, missing, &t->partitions[j], &tr->partitions[j]);
        kiq_topic_unref(topic);
    }
    /* Records the follower's fetch committed: acks=all produces and
     * consumers waiting on those partitions may finish, tried in this
     * thread (no lock held here; within a purgatory round the purgatory
     * thread's next round tries them), once all its partitions are read: a
     * produce waiting on several of them is tried once, not once each. */
    for (int i = 0; i < fr.nmoved; i++) kiq_purgatory_notify_here(b->purgatory, fr.moved[i]);
    kiq_api_leader_nodes_t *leaders = &fr.leaders;
    out->node_endpoints_n = leaders->n;
    out->node_endpoints = kiq_arena_calloc(&r->arena, (size_t)(leaders->n ? leaders->n : 1), sizeof *out->node_endpoints);
    for (int i = 0; i < leaders->n; i++) {
        kiq_fetch_response_node_endpoints_init(&out->node_endpoints[i]);
        out->node_endpoints[i].node_id = leaders->nodes[i].id;
        out->node_endpoints[i].host = KIQ_STR(leaders->nodes[i].host);
        out->node_endpoints[i].port = leaders->nodes[i].port;
    }
    r->response_size_hint = (size_t)fr.copied + 4096;
    res->bytes = fr.total;
}

/* Whether a parked fetch can be answered: some partition went wrong or
 * out of range (the answer says so), or what it could return now adds up
 * to min_bytes (Kafka's DelayedFetch): for a consumer below the high
 * watermark, for a follower below the log end. */
static bool fetch_ready(kiq_broker_t *b, const kiq_request_t *r, const kiq_fetch_request_t *req)
{
    int64_t want = req->min_bytes > 0 ? req->min_bytes : 1, have = 0;
    bool ready = false;
    int32_t replica = fetch_replica(r, req);
    for (int32_t i = 0; i < req->topics_n && !ready; i++) {
        const kiq_fetch_request_topics_t *t = &req->topics[i];
        int16_t missing;
        kiq_topic_t *topic = fetch_topic(b, r, t, NULL, NULL, &missing);
        for (int32_t j = 0; j < t->partitions_n && !ready && topic; j++) {
            const kiq_fetch_request_topics_partitions_t *p = &t->partitions[j];
            if (p->partition < 0 || p->partition >= topic->npartitions) {
                ready = true;
                break;
            }
            kiq_partition_t *part = topic->partitions[p->partition];
            kiq_partition_log_t *log = part->log;
            if (fetch_check(r->header.api_version, replica, part, log, p) != 0) {
                ready = true;
                break;
            }
            kiq_log_positions_t pos;
            kiq_partition_log_positions(log, &pos);
            int64_t upto = replica >= 0 ? pos.end_offset : read_committed(r, req) ? pos.last_stable_offset : pos.high_watermark;
            if (caught_up(&pos, p->fetch_offset, upto)) continue;
            kiq_log_slices_t sl;
            int64_t n = kiq_partition_log_locate(log, p->fetch_offset, p->partition_max_bytes, upto, &sl);
            if (n < 0) { /* out of range, corrupt or failed: the answer says so */
                ready = true;
                break;
            }
            kiq_log_slices_release(&sl);
            have += n;
            ready = have >= want;
        }
        if (!topic) ready = true;
        kiq_topic_unref(topic);
    }
    return ready;
}

/* What a parked fetch waits for: a key per partition it names. */
static void fetch_keys(kiq_broker_t *b, kiq_request_t *r, const kiq_fetch_request_t *req, kiq_delayed_op_t *op)
{
    int n = 0;
    for (int32_t i = 0; i < req->topics_n; i++) n += req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
    uint64_t *keys = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *keys);
    op->keys = keys;
    op->nkeys = 0;
    for (int32_t i = 0; i < req->topics_n; i++) {
        int16_t missing;
        kiq_topic_t *topic = fetch_topic(b, r, &req->topics[i], NULL, NULL, &missing);
        if (!topic) continue;
        for (int32_t j = 0; j < req->topics[i].partitions_n; j++)
            keys[op->nkeys++] = kiq_purgatory_key(topic->name, strlen(topic->name), req->topics[i].partitions[j].partition);
        kiq_topic_unref(topic);
    }
}

/* Lets fetch interceptors turn partitions' answers into errors. A fetch
 * answered from files was read before any interceptor was installed: it
 * goes out as it is. */
static void fetch_intercept(kiq_broker_t *b, kiq_request_t *r, const kiq_fetch_request_t *req,
                            kiq_fetch_response_t *out, const fetch_result_t *res)
{
    if (res->zero_copy || !kiq_interceptors_active(&b->interceptors, KIQ_HOOK_FETCH)) return;
    for (int32_t i = 0; i < out->responses_n && i < req->topics_n; i++) {
        kiq_fetch_response_responses_t *tr = &out->responses[i];
        for (int32_t j = 0; j < tr->partitions_n && j < req->topics[i].partitions_n; j++) {
            kiq_fetch_response_responses_partitions_t *pr = &tr->partitions[j];
            if (pr->error_code) continue;
            kiq_hook_fetch_t f = {
                .topic = tr->topic,
                .partition = pr->partition_index,
                .fetch_offset = req->topics[i].partitions[j].fetch_offset,
                .high_watermark = pr->high_watermark,
                .log_start_offset = pr->log_start_offset,
                .records = pr->records,
            };
            b->interceptors.ops->on_fetch(b->interceptors.ctx, r, &f);
            if (f.error_code) {
                pr->error_code = f.error_code;
                pr->records = (kiq_bytes_t){(const uint8_t *)"", 0};
            }
        }
    }
}

static bool fetch_try_complete(kiq_delayed_op_t *op, bool expired)
{
    fetch_op_t *f = (fetch_op_t *)op;
    if (!expired && !fetch_ready(f->b, f->r, f->req)) return false;
    kiq_fetch_response_init(f->resp);
    fetch_result_t res;
    fetch_read(f->b, f->r, f->req, f->resp, &res, false);
    fetch_intercept(f->b, f->r, f->req, f->resp, &res);
    kiq_fetch_sessions_answer(f->b->fetch_sessions, &f->session, f->resp);
    f->r->t.completed = kiq_clock_mono_ns();
    kiq_request_respond(f->r, f->resp); /* frees f with the request's arena */
    return true;
}

/* A voter's Fetch of the quorum's log, held at the leader while there is
 * nothing new: answered again when the log grows, the high watermark or
 * the leadership moves, or at max_wait_ms. */
typedef struct quorum_fetch_op {
    fetch_op_t f; /* first: the purgatory hands this pointer back */
    int64_t offset, hw; /* what the held answer said */
    uint64_t key;
} quorum_fetch_op_t;

static bool quorum_fetch_try_complete(kiq_delayed_op_t *op, bool expired)
{
    quorum_fetch_op_t *q = (quorum_fetch_op_t *)op;
    fetch_op_t *f = &q->f;
    if (!expired && !kiq_quorum_fetch_news(f->b->quorum, q->offset, q->hw)) return false;
    kiq_fetch_response_init(f->resp);
    kiq_quorum_fetch(f->b->quorum, f->r->header.api_version, f->req, &f->r->arena, f->resp);
    f->r->t.completed = kiq_clock_mono_ns();
    kiq_request_respond(f->r, f->resp); /* frees q with the request's arena */
    return true;
}

static int quorum_fetch(kiq_broker_t *b, kiq_request_t *r, const kiq_fetch_request_t *req, kiq_fetch_response_t *out)
{
    /* the control plane serves only the quorum's own log */
    if (!b->quorum || !kiq_quorum_is_metadata_fetch(r->header.api_version, req)) return KIQ_HANDLER_CLOSE;
    if (!kiq_quorum_fetch(b->quorum, r->header.api_version, req, &r->arena, out) || req->max_wait_ms <= 0)
        return KIQ_HANDLER_RESPOND;
    quorum_fetch_op_t *q = kiq_arena_alloc(&r->arena, sizeof *q);
    *q = (quorum_fetch_op_t){.f = {.b = b, .r = r, .req = req, .resp = out},
                             .offset = req->topics->partitions->fetch_offset,
                             .hw = out->responses->partitions->high_watermark,
                             .key = kiq_purgatory_quorum_key()};
    q->f.op = (kiq_delayed_op_t){.kind = KIQ_DELAYED_FETCH, .try_complete = quorum_fetch_try_complete,
                                 .deadline_ns = kiq_clock_mono_ns() + (int64_t)req->max_wait_ms * 1000000,
                                 .keys = &q->key, .nkeys = 1};
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &q->f.op);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_fetch_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_fetch_request_t *asked = request;
    kiq_fetch_response_t *out = response;
    if (r->listener == KIQ_LISTENER_CONTROL) return quorum_fetch(b, r, asked, out);
    /* a follower's fetch needs ClusterAction on the cluster */
    if (fetch_replica(r, asked) >= 0 && !kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION)) {
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return KIQ_HANDLER_RESPOND;
    }
    /* from here on req is what is read: for an incremental fetch, its session's partitions */
    const kiq_fetch_request_t *req;
    kiq_fetch_session_ticket_t session;
    kiq_fetch_session_limits_t limits = {
        .slots = (int)kiq_config_int(b->config, KIQ_CFG_MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS),
        .eviction_ms = kiq_config_int(b->config, KIQ_CFG_MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS),
        .now_ms = kiq_clock_mono_ms(),
    };
    int16_t session_err = kiq_fetch_sessions_begin(b->fetch_sessions, r->header.api_version, fetch_replica(r, asked) >= 0,
                                                   &limits, asked, &r->arena, &req, &session);
    if (session_err) {
        out->error_code = session_err;
        return KIQ_HANDLER_RESPOND;
    }
    fetch_result_t res;
    fetch_read(b, r, req, out, &res, true);
    int64_t bytes = res.bytes;
    int64_t nparts = 0;
    for (int32_t i = 0; i < req->topics_n; i++) nparts += req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
    /* asking for no partitions, nothing can arrive to wait for: Kafka answers at once */
    bool respond = req->max_wait_ms <= 0 || nparts == 0 || res.diverging ||
                   bytes >= (req->min_bytes > 0 ? req->min_bytes : 1);
    for (int32_t i = 0; i < out->responses_n && !respond; i++)
        for (int32_t j = 0; j < out->responses[i].partitions_n && !respond; j++)
            respond = out->responses[i].partitions[j].error_code != 0;
    if (respond) {
        fetch_intercept(b, r, req, out, &res);
        kiq_fetch_sessions_answer(b->fetch_sessions, &session, out);
        return KIQ_HANDLER_RESPOND;
    }
    fetch_release_held(&res);
    fetch_op_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
    f->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)req->max_wait_ms * 1000000;
    f->op.kind = KIQ_DELAYED_FETCH;
    f->op.try_complete = fetch_try_complete;
    fetch_keys(b, r, req, &f->op);
    f->b = b;
    f->r = r;
    f->req = req;
    f->resp = out;
    f->session = session;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    /* no lock held here: parked without waking the purgatory thread */
    kiq_purgatory_park_here(b->purgatory, &f->op);
    return KIQ_HANDLER_PARKED;
}
