/* The controller quorum's Raft RPCs on the wire (KIP-595, KIP-853):
 * raft's messages to other nodes as Kafka's requests, their answers read
 * back, and the other nodes' Vote, BeginQuorumEpoch, EndQuorumEpoch,
 * Fetch and DescribeQuorum requests served. See quorum.h. */
#include <stdlib.h>
#include <string.h>

#include "controller/quorum_internal.h"
#include "controller/quorum_log.h"
#include "core/clock.h"
#include "log/log_names.h"
#include "proto/errors.h"
#include "record/batch.h"

/* Kafka's Uuid.METADATA_TOPIC_ID. */
static const kiq_uuid_t METADATA_TOPIC_ID = { .b = { [15] = 1 } };

/* ---- the requests this node sends, their answers */

kiq_str_t kiq_quorum_astr(kiq_arena_t *a, const char *s)
{
    size_t n = strlen(s);
    char *p = kiq_arena_alloc(a, n + 1);
    memcpy(p, s, n + 1);
    return (kiq_str_t){ p, (int32_t)n };
}

void *kiq_quorum_zalloc(kiq_arena_t *a, size_t n)
{
    void *p = kiq_arena_alloc(a, n);
    memset(p, 0, n);
    return p;
}

/* The batches in records as entries (in arena); false if they are not whole. */
static bool entries_of(kiq_bytes_t records, kiq_arena_t *a, const kiq_raft_entry_t **out, int *n)
{
    *n = 0;
    if (!records.p || records.len <= 0)
        return true;
    int cap = 16;
    kiq_raft_entry_t *e = kiq_arena_alloc(a, (size_t)cap * sizeof *e);
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, records.p, (size_t)records.len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int rc;
    while ((rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
        if (*n == cap) {
            kiq_raft_entry_t *more = kiq_arena_alloc(a, (size_t)cap * 2 * sizeof *e);
            memcpy(more, e, (size_t)cap * sizeof *e);
            e = more;
            cap *= 2;
        }
        kiq_raft_voter_set_t *set = NULL;
        if (kiq_batch_is_control(&h)) {
            kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
            set = kiq_arena_alloc(a, sizeof *set);
            int got = kiq_quorum_voters_decode(batch, blen, set, eps);
            if (got < 0)
                return false;
            if (got == 0)
                set = NULL;
        }
        e[(*n)++] = (kiq_raft_entry_t){ h.partition_leader_epoch, (int32_t)(kiq_batch_last_offset(&h) - h.base_offset + 1),
                                        batch, blen, set };
    }
    *out = e;
    return rc == 0;
}

/* msg (a generated request or response, type prefix T such as
 * vote_request) gets one topic, the metadata topic, of one partition, to
 * which p then points. */
#define ONE_PARTITION(T, a, msg, p)                                    \
    do {                                                               \
        (msg)->topics_n = 1;                                           \
        (msg)->topics = kiq_quorum_zalloc((a), sizeof *(msg)->topics);            \
        kiq_##T##_topics_init((msg)->topics);                          \
        (msg)->topics->topic_name = kiq_quorum_astr((a), KIQ_METADATA_TOPIC);     \
        (msg)->topics->partitions_n = 1;                               \
        (p) = (msg)->topics->partitions = kiq_quorum_zalloc((a), sizeof *(p));    \
        kiq_##T##_topics_partitions_init(p);                           \
    } while (0)

void *kiq_quorum_request_of(const kiq_raft_msg_t *m, int32_t fetch_wait_ms, kiq_arena_t *a, int16_t *api_key,
                            size_t *resp_size)
{
    static const char *const topic = KIQ_METADATA_TOPIC;
    switch (m->type) {
    case KIQ_RAFT_VOTE: {
        kiq_vote_request_t *r = kiq_quorum_zalloc(a, sizeof *r);
        kiq_vote_request_init(r);
        r->voter_id = m->to;
        kiq_vote_request_topics_partitions_t *p;
        ONE_PARTITION(vote_request, a, r, p);
        p->replica_epoch = m->epoch;
        p->replica_id = m->from;
        p->last_offset_epoch = m->vote.last.epoch;
        p->last_offset = m->vote.last.end_offset;
        p->pre_vote = m->vote.pre_vote;
        *api_key = KIQ_API_VOTE;
        *resp_size = sizeof(kiq_vote_response_t);
        return r;
    }
    case KIQ_RAFT_BEGIN_EPOCH: {
        kiq_begin_quorum_epoch_request_t *r = kiq_quorum_zalloc(a, sizeof *r);
        kiq_begin_quorum_epoch_request_init(r);
        r->voter_id = m->to;
        kiq_begin_quorum_epoch_request_topics_partitions_t *p;
        ONE_PARTITION(begin_quorum_epoch_request, a, r, p);
        p->leader_id = m->from;
        p->leader_epoch = m->epoch;
        *api_key = KIQ_API_BEGIN_QUORUM_EPOCH;
        *resp_size = sizeof(kiq_begin_quorum_epoch_response_t);
        return r;
    }
    case KIQ_RAFT_END_EPOCH: {
        kiq_end_quorum_epoch_request_t *r = kiq_quorum_zalloc(a, sizeof *r);
        kiq_end_quorum_epoch_request_init(r);
        kiq_end_quorum_epoch_request_topics_partitions_t *p;
        ONE_PARTITION(end_quorum_epoch_request, a, r, p);
        p->leader_id = m->from;
        p->leader_epoch = m->epoch;
        int n = m->end_epoch.n_successors;
        p->preferred_successors_n = n;
        p->preferred_successors = kiq_arena_alloc(a, (size_t)(n ? n : 1) * sizeof(int32_t));
        memcpy(p->preferred_successors, m->end_epoch.successors, (size_t)n * sizeof(int32_t));
        p->preferred_candidates_n = n;
        p->preferred_candidates = kiq_quorum_zalloc(a, (size_t)(n ? n : 1) * sizeof *p->preferred_candidates);
        for (int i = 0; i < n; i++) {
            kiq_end_quorum_epoch_request_topics_partitions_preferred_candidates_init(&p->preferred_candidates[i]);
            p->preferred_candidates[i].candidate_id = m->end_epoch.successors[i];
        }
        *api_key = KIQ_API_END_QUORUM_EPOCH;
        *resp_size = sizeof(kiq_end_quorum_epoch_response_t);
        return r;
    }
    case KIQ_RAFT_FETCH: {
        kiq_fetch_request_t *r = kiq_quorum_zalloc(a, sizeof *r);
        kiq_fetch_request_init(r);
        r->replica_id = m->from;
        r->replica_state.replica_id = m->from;
        r->max_wait_ms = fetch_wait_ms;
        r->min_bytes = 0;
        r->max_bytes = FETCH_MAX_BYTES;
        r->topics_n = 1;
        r->topics = kiq_quorum_zalloc(a, sizeof *r->topics);
        kiq_fetch_request_topics_init(r->topics);
        r->topics->topic = kiq_quorum_astr(a, topic);
        r->topics->topic_id = METADATA_TOPIC_ID;
        r->topics->partitions_n = 1;
        kiq_fetch_request_topics_partitions_t *p = r->topics->partitions = kiq_quorum_zalloc(a, sizeof *p);
        kiq_fetch_request_topics_partitions_init(p);
        p->current_leader_epoch = m->epoch;
        p->fetch_offset = m->fetch.offset;
        p->last_fetched_epoch = m->fetch.last_epoch;
        p->partition_max_bytes = FETCH_MAX_BYTES;
        memcpy(p->replica_directory_id.b, m->fetch.dir, sizeof p->replica_directory_id.b);
        *api_key = KIQ_API_FETCH;
        *resp_size = sizeof(kiq_fetch_response_t);
        return r;
    }
    default:
        return NULL;
    }
}

/* A BeginQuorumEpoch or EndQuorumEpoch answer (generated type prefix T)
 * into m: read_<T>, false when it is not one partition's. */
#define DEFINE_READ_EPOCH_ANSWER(T)                                                            \
    static bool read_##T(const void *resp, kiq_raft_msg_t *m)                                  \
    {                                                                                          \
        const kiq_##T##_response_t *r = resp;                                                  \
        if (r->topics_n != 1 || r->topics->partitions_n != 1)                                  \
            return false;                                                                      \
        m->error = r->error_code ? r->error_code : r->topics->partitions->error_code;          \
        m->epoch = r->topics->partitions->leader_epoch;                                        \
        m->leader_id = r->topics->partitions->leader_id;                                       \
        return true;                                                                           \
    }
DEFINE_READ_EPOCH_ANSWER(begin_quorum_epoch)
DEFINE_READ_EPOCH_ANSWER(end_quorum_epoch)

bool kiq_quorum_reply_of(const kiq_raft_msg_t *s, const void *resp, kiq_arena_t *a, kiq_raft_msg_t *m)
{
    memset(m, 0, sizeof *m);
    m->from = s->to;
    m->to = s->from;
    m->leader_id = -1;
    switch (s->type) {
    case KIQ_RAFT_VOTE: {
        const kiq_vote_response_t *r = resp;
        if (r->topics_n != 1 || r->topics->partitions_n != 1)
            return false;
        const kiq_vote_response_topics_partitions_t *p = r->topics->partitions;
        m->type = KIQ_RAFT_VOTE_REPLY;
        m->error = r->error_code ? r->error_code : p->error_code;
        m->epoch = p->leader_epoch;
        m->leader_id = p->leader_id;
        m->vote_reply.granted = p->vote_granted && !m->error;
        m->vote_reply.pre_vote = s->vote.pre_vote;
        return true;
    }
    case KIQ_RAFT_BEGIN_EPOCH:
        m->type = KIQ_RAFT_BEGIN_EPOCH_REPLY;
        return read_begin_quorum_epoch(resp, m);
    case KIQ_RAFT_END_EPOCH:
        m->type = KIQ_RAFT_END_EPOCH_REPLY;
        return read_end_quorum_epoch(resp, m);
    case KIQ_RAFT_FETCH: {
        const kiq_fetch_response_t *r = resp;
        if (r->responses_n != 1 || r->responses->partitions_n != 1)
            return false;
        const kiq_fetch_response_responses_partitions_t *p = r->responses->partitions;
        m->type = KIQ_RAFT_FETCH_REPLY;
        m->error = r->error_code ? r->error_code : p->error_code;
        m->epoch = p->current_leader.leader_epoch;
        m->leader_id = p->current_leader.leader_id;
        m->fetch_reply.high_watermark = p->high_watermark;
        m->fetch_reply.offset = s->fetch.offset;
        m->fetch_reply.diverging = (kiq_raft_epoch_end_t){ p->diverging_epoch.epoch, p->diverging_epoch.end_offset };
        m->fetch_reply.snapshot = (kiq_raft_epoch_end_t){ p->snapshot_id.epoch, p->snapshot_id.end_offset };
        return entries_of(p->records, a, &m->fetch_reply.entries, &m->fetch_reply.n_entries);
    }
    default:
        return false;
    }
}

/* ---- the other nodes' requests */

/* m handed to raft as from a request handler; its answer in *re. A
 * request that does not reach raft (paused, cut) gets an answer of no
 * epoch and no leader, which the sender drops as stale. */
static bool ask_raft(kiq_quorum_t *q, const kiq_raft_msg_t *m, kiq_raft_msg_t *re)
{
    const peer_t *from = kiq_quorum_peer_of(q, m->from);
    if (q->paused || (from && from->cut)) {
        re->epoch = re->leader_id = -1;
        return false;
    }
    q->reply = re;
    q->replied = false;
    kiq_raft_receive(q->raft, kiq_quorum_now_ms(), m);
    q->reply = NULL;
    return q->replied;
}

bool kiq_quorum_is_metadata_topic(kiq_str_t name)
{
    return name.len == (int32_t)strlen(KIQ_METADATA_TOPIC) && memcmp(name.p, KIQ_METADATA_TOPIC, (size_t)name.len) == 0;
}

bool kiq_quorum_is_metadata_fetch(int16_t version, const kiq_fetch_request_t *req)
{
    if (req->topics_n != 1)
        return false;
    return version >= 13 ? memcmp(&req->topics->topic_id, &METADATA_TOPIC_ID, sizeof METADATA_TOPIC_ID) == 0
                         : kiq_quorum_is_metadata_topic(req->topics->topic);
}

void kiq_quorum_vote(kiq_quorum_t *q, const kiq_vote_request_t *req, kiq_arena_t *arena, kiq_vote_response_t *resp)
{
    if (req->topics_n != 1 || req->topics->partitions_n != 1 || !kiq_quorum_is_metadata_topic(req->topics->topic_name)) {
        resp->error_code = KIQ_ERR_INVALID_REQUEST;
        return;
    }
    const kiq_vote_request_topics_partitions_t *p = req->topics->partitions;
    kiq_raft_msg_t m = { .type = KIQ_RAFT_VOTE, .from = p->replica_id, .to = q->cfg.node_id, .epoch = p->replica_epoch,
                         .leader_id = -1 };
    m.vote.last = (kiq_raft_epoch_end_t){ p->last_offset_epoch, p->last_offset };
    m.vote.pre_vote = p->pre_vote;
    kiq_raft_msg_t re = { 0 };
    pthread_mutex_lock(&q->mu);
    bool ok = ask_raft(q, &m, &re);
    pthread_mutex_unlock(&q->mu);
    kiq_vote_response_topics_partitions_t *rp;
    ONE_PARTITION(vote_response, arena, resp, rp);
    rp->error_code = ok ? re.error : KIQ_ERR_UNKNOWN_SERVER_ERROR;
    rp->leader_id = re.leader_id;
    rp->leader_epoch = re.epoch;
    rp->vote_granted = ok && re.vote_reply.granted;
}

/* BeginQuorumEpoch and EndQuorumEpoch answer in the same shape: resp of
 * generated type prefix T (kiq_<T>_response_t). */
#define EPOCH_ANSWER(T, arena, re, ok, resp)                                              \
    do {                                                                                 \
        kiq_##T##_response_topics_partitions_t *rp_;                                     \
        ONE_PARTITION(T##_response, arena, resp, rp_);                                   \
        rp_->error_code = (ok) ? (re)->error : KIQ_ERR_UNKNOWN_SERVER_ERROR;             \
        rp_->leader_id = (re)->leader_id;                                                \
        rp_->leader_epoch = (re)->epoch;                                                 \
    } while (0)

void kiq_quorum_begin_epoch(kiq_quorum_t *q, const kiq_begin_quorum_epoch_request_t *req, kiq_arena_t *arena,
                            kiq_begin_quorum_epoch_response_t *resp)
{
    if (req->topics_n != 1 || req->topics->partitions_n != 1 || !kiq_quorum_is_metadata_topic(req->topics->topic_name)) {
        resp->error_code = KIQ_ERR_INVALID_REQUEST;
        return;
    }
    const kiq_begin_quorum_epoch_request_topics_partitions_t *p = req->topics->partitions;
    kiq_raft_msg_t m = { .type = KIQ_RAFT_BEGIN_EPOCH, .from = p->leader_id, .to = q->cfg.node_id,
                         .epoch = p->leader_epoch, .leader_id = p->leader_id };
    kiq_raft_msg_t re = { 0 };
    pthread_mutex_lock(&q->mu);
    bool ok = ask_raft(q, &m, &re);
    pthread_mutex_unlock(&q->mu);
    EPOCH_ANSWER(begin_quorum_epoch, arena, &re, ok, resp);
}

void kiq_quorum_end_epoch(kiq_quorum_t *q, const kiq_end_quorum_epoch_request_t *req, kiq_arena_t *arena,
                          kiq_end_quorum_epoch_response_t *resp)
{
    if (req->topics_n != 1 || req->topics->partitions_n != 1 || !kiq_quorum_is_metadata_topic(req->topics->topic_name)) {
        resp->error_code = KIQ_ERR_INVALID_REQUEST;
        return;
    }
    const kiq_end_quorum_epoch_request_topics_partitions_t *p = req->topics->partitions;
    kiq_raft_msg_t m = { .type = KIQ_RAFT_END_EPOCH, .from = p->leader_id, .to = q->cfg.node_id,
                         .epoch = p->leader_epoch, .leader_id = p->leader_id };
    /* v0 names the successors, v1 the candidates */
    for (int i = 0; i < p->preferred_successors_n && m.end_epoch.n_successors < KIQ_RAFT_MAX_VOTERS; i++)
        m.end_epoch.successors[m.end_epoch.n_successors++] = p->preferred_successors[i];
    for (int i = 0; i < p->preferred_candidates_n && m.end_epoch.n_successors < KIQ_RAFT_MAX_VOTERS; i++)
        m.end_epoch.successors[m.end_epoch.n_successors++] = p->preferred_candidates[i].candidate_id;
    kiq_raft_msg_t re = { 0 };
    pthread_mutex_lock(&q->mu);
    bool ok = ask_raft(q, &m, &re);
    pthread_mutex_unlock(&q->mu);
    EPOCH_ANSWER(end_quorum_epoch, arena, &re, ok, resp);
}

bool kiq_quorum_fetch(kiq_quorum_t *q, int16_t version, const kiq_fetch_request_t *req, kiq_arena_t *arena,
                      kiq_fetch_response_t *resp)
{
    resp->responses_n = 1;
    resp->responses = kiq_quorum_zalloc(arena, sizeof *resp->responses);
    kiq_fetch_response_responses_init(resp->responses);
    resp->responses->topic = kiq_quorum_astr(arena, KIQ_METADATA_TOPIC);
    resp->responses->topic_id = METADATA_TOPIC_ID;
    resp->responses->partitions_n = 1;
    kiq_fetch_response_responses_partitions_t *rp = resp->responses->partitions = kiq_quorum_zalloc(arena, sizeof *rp);
    kiq_fetch_response_responses_partitions_init(rp);
    if (req->topics->partitions_n != 1 || req->topics->partitions->partition != 0) {
        rp->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return false;
    }
    const kiq_fetch_request_topics_partitions_t *p = req->topics->partitions;
    kiq_raft_msg_t m = { .type = KIQ_RAFT_FETCH, .from = version >= 15 ? req->replica_state.replica_id : req->replica_id,
                         .to = q->cfg.node_id, .epoch = p->current_leader_epoch, .leader_id = -1 };
    m.fetch.offset = p->fetch_offset;
    m.fetch.last_epoch = p->last_fetched_epoch;
    memcpy(m.fetch.dir, p->replica_directory_id.b, sizeof m.fetch.dir);
    kiq_raft_msg_t re = { 0 };
    pthread_mutex_lock(&q->mu);
    bool ok = ask_raft(q, &m, &re);
    if (ok) {
        size_t len = 0;
        for (int i = 0; i < re.fetch_reply.n_entries; i++)
            len += re.fetch_reply.entries[i].len;
        if (len) {
            /* the entries live in the log's read buffer: copied before the lock goes */
            uint8_t *bytes = kiq_arena_alloc(arena, len);
            size_t at = 0;
            for (int i = 0; i < re.fetch_reply.n_entries; i++) {
                memcpy(bytes + at, re.fetch_reply.entries[i].data, re.fetch_reply.entries[i].len);
                at += re.fetch_reply.entries[i].len;
            }
            rp->records = (kiq_bytes_t){ bytes, (int32_t)len };
        }
        kiq_raft_epoch_end_t snap = kiq_quorum_log_snapshot(q->log);
        rp->log_start_offset = snap.epoch >= 0 ? snap.end_offset : 0;
    }
    pthread_mutex_unlock(&q->mu);
    rp->error_code = ok ? re.error : KIQ_ERR_UNKNOWN_SERVER_ERROR;
    rp->high_watermark = re.fetch_reply.high_watermark;
    rp->current_leader.leader_id = re.leader_id;
    rp->current_leader.leader_epoch = re.epoch;
    rp->diverging_epoch.epoch = re.fetch_reply.diverging.epoch;
    rp->diverging_epoch.end_offset = re.fetch_reply.diverging.end_offset;
    rp->snapshot_id.epoch = re.fetch_reply.snapshot.epoch;
    rp->snapshot_id.end_offset = re.fetch_reply.snapshot.end_offset;
    if (re.leader_id == q->cfg.node_id && q->cfg.self.port > 0) {
        /* an observer that found this leader through a bootstrap server learns where to fetch */
        resp->node_endpoints_n = 1;
        resp->node_endpoints = kiq_quorum_zalloc(arena, sizeof *resp->node_endpoints);
        kiq_fetch_response_node_endpoints_init(resp->node_endpoints);
        resp->node_endpoints->node_id = q->cfg.node_id;
        resp->node_endpoints->host = kiq_quorum_astr(arena, q->cfg.self.host);
        resp->node_endpoints->port = q->cfg.self.port;
    }
    return rp->error_code == KIQ_ERR_NONE && !rp->records.len && rp->diverging_epoch.epoch < 0 &&
           rp->snapshot_id.epoch < 0;
}

bool kiq_quorum_fetch_news(kiq_quorum_t *q, int64_t offset, int64_t hw)
{
    kiq_raft_view_t v;
    kiq_quorum_view(q, &v);
    return v.role != KIQ_RAFT_LEADER || v.log_end > offset || v.high_watermark != hw;
}

/* One ReplicaState of DescribeQuorum (a voter's and an observer's are
 * two generated types of the same fields); times on the wall clock. */
#define REPLICA_STATE(dst, src, wall, mono)                                                                        \
    do {                                                                                                           \
        (dst)->replica_id = (src)->id;                                                                             \
        memcpy((dst)->replica_directory_id.b, (src)->dir, sizeof (dst)->replica_directory_id.b);                  \
        (dst)->log_end_offset = (src)->log_end;                                                                    \
        (dst)->last_fetch_timestamp = (src)->last_fetch_ms < 0 ? -1 : (wall) - ((mono) - (src)->last_fetch_ms);    \
        (dst)->last_caught_up_timestamp =                                                                          \
            (src)->last_caught_up_ms < 0 ? -1 : (wall) - ((mono) - (src)->last_caught_up_ms);                      \
    } while (0)

/* Whether the request names __cluster_metadata's one partition, alone. */
static bool names_the_log(const kiq_describe_quorum_request_t *req)
{
    if (req->topics_n != 1 || req->topics[0].partitions_n != 1 || req->topics[0].partitions[0].partition_index != 0)
        return false;
    kiq_str_t t = req->topics[0].topic_name;
    return t.p && (size_t)t.len == strlen(KIQ_METADATA_TOPIC) && memcmp(t.p, KIQ_METADATA_TOPIC, (size_t)t.len) == 0;
}

/* Kafka's answer to any other: each partition asked for with
 * UNKNOWN_TOPIC_OR_PARTITION, nothing else. */
static void describe_unknown(const kiq_describe_quorum_request_t *req, kiq_arena_t *arena,
                             kiq_describe_quorum_response_t *resp)
{
    int32_t nt = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics_n = nt;
    resp->topics = kiq_quorum_zalloc(arena, (size_t)(nt ? nt : 1) * sizeof *resp->topics);
    for (int32_t i = 0; i < nt; i++) {
        kiq_describe_quorum_response_topics_t *t = &resp->topics[i];
        kiq_describe_quorum_response_topics_init(t);
        t->topic_name = req->topics[i].topic_name;
        int32_t np = req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
        t->partitions_n = np;
        t->partitions = kiq_quorum_zalloc(arena, (size_t)(np ? np : 1) * sizeof *t->partitions);
        for (int32_t j = 0; j < np; j++) {
            kiq_describe_quorum_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = req->topics[i].partitions[j].partition_index;
            t->partitions[j].leader_id = 0;
            t->partitions[j].error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        }
    }
}

void kiq_quorum_describe(kiq_quorum_t *q, const kiq_describe_quorum_request_t *req, kiq_arena_t *arena,
                         kiq_describe_quorum_response_t *resp)
{
    if (!names_the_log(req)) {
        describe_unknown(req, arena, resp);
        return;
    }
    kiq_raft_view_t v;
    kiq_quorum_view(q, &v);
    int64_t wall = kiq_clock_wall_ms(), mono = kiq_quorum_now_ms();
    resp->topics_n = 1;
    resp->topics = kiq_quorum_zalloc(arena, sizeof *resp->topics);
    kiq_describe_quorum_response_topics_init(resp->topics);
    resp->topics->topic_name = kiq_quorum_astr(arena, KIQ_METADATA_TOPIC);
    resp->topics->partitions_n = 1;
    kiq_describe_quorum_response_topics_partitions_t *rp = resp->topics->partitions = kiq_quorum_zalloc(arena, sizeof *rp);
    kiq_describe_quorum_response_topics_partitions_init(rp);
    if (v.role != KIQ_RAFT_LEADER) {
        /* only the leader knows every voter's place */
        rp->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        rp->leader_id = v.leader_id;
        rp->leader_epoch = v.epoch;
        return;
    }
    rp->leader_id = v.leader_id;
    rp->leader_epoch = v.epoch;
    rp->high_watermark = v.high_watermark;
    rp->current_voters_n = v.n_voters;
    rp->current_voters = kiq_quorum_zalloc(arena, (size_t)(v.n_voters ? v.n_voters : 1) * sizeof *rp->current_voters);
    for (int i = 0; i < v.n_voters; i++) {
        kiq_describe_quorum_response_topics_partitions_current_voters_init(&rp->current_voters[i]);
        REPLICA_STATE(&rp->current_voters[i], &v.voters[i], wall, mono);
    }
    rp->observers_n = v.n_observers;
    rp->observers = kiq_quorum_zalloc(arena, (size_t)(v.n_observers ? v.n_observers : 1) * sizeof *rp->observers);
    for (int i = 0; i < v.n_observers; i++) {
        kiq_describe_quorum_response_topics_partitions_observers_init(&rp->observers[i]);
        REPLICA_STATE(&rp->observers[i], &v.observers[i], wall, mono);
    }
    /* v2's nodes: where each voter listens (kafka-metadata-quorum prints them) */
    resp->nodes = kiq_quorum_zalloc(arena, (size_t)(v.n_voters ? v.n_voters : 1) * sizeof *resp->nodes);
    pthread_mutex_lock(&q->mu);
    for (int i = 0; i < v.n_voters; i++) {
        kiq_quorum_endpoint_t ep;
        kiq_quorum_endpoint_of(q, v.voters[i].id, &ep);
        if (ep.port <= 0)
            continue;
        kiq_describe_quorum_response_nodes_t *n = &resp->nodes[resp->nodes_n++];
        kiq_describe_quorum_response_nodes_init(n);
        n->node_id = v.voters[i].id;
        n->listeners_n = 1;
        n->listeners = kiq_quorum_zalloc(arena, sizeof *n->listeners);
        kiq_describe_quorum_response_nodes_listeners_init(n->listeners);
        n->listeners->name = kiq_quorum_astr(arena, ep.name[0] ? ep.name : "CONTROLLER");
        n->listeners->host = kiq_quorum_astr(arena, ep.host);
        n->listeners->port = (uint16_t)ep.port;
    }
    pthread_mutex_unlock(&q->mu);
}
