/* The controller quorum on one node; see quorum.h. */
#include "controller/quorum_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/metadata_snapshot.h"
#include "controller/quorum_log.h"
#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/log_names.h"
#include "net/peer_channel.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"

#define TICK_MS 5

/* Kafka's Uuid.METADATA_TOPIC_ID. */
static const kiq_uuid_t METADATA_TOPIC_ID = { .b = { [15] = 1 } };

/* One request to another voter, from submit to its callback. */
typedef struct out_call {
    kiq_peer_call_t call;
    kiq_arena_t arena;
    kiq_quorum_t *q;
    kiq_raft_msg_t sent;
} out_call_t;

int64_t kiq_quorum_now_ms(void)
{
    /* Raft keeps real time: a test's manual broker clock must not call elections */
    return kiq_clock_system_mono_ns() / 1000000;
}

peer_t *kiq_quorum_peer_of(kiq_quorum_t *q, int32_t id)
{
    for (int i = 0; i < q->n_peers; i++)
        if (q->peers[i].id == id)
            return &q->peers[i];
    return NULL;
}

void kiq_quorum_learn_peer(kiq_quorum_t *q, int32_t id, const char *name, const char *host, int port)
{
    if (id == q->cfg.node_id || port <= 0)
        return;
    peer_t *p = kiq_quorum_peer_of(q, id);
    if (!p && q->n_peers < MAX_PEERS) {
        p = &q->peers[q->n_peers++];
        memset(p, 0, sizeof *p);
        p->id = id;
    }
    if (!p || p->ep.port > 0)
        return;
    snprintf(p->ep.name, sizeof p->ep.name, "%s", name ? name : "CONTROLLER");
    snprintf(p->ep.host, sizeof p->ep.host, "%s", host);
    p->ep.port = port;
}

int kiq_quorum_peer_channels(kiq_quorum_t *q, peer_t *p)
{
    if (p->rpc)
        return 0;
    if (p->ep.port <= 0)
        return kiq_error_set("node %d's address is not known yet", p->id);
    char name[64], peer[16];
    snprintf(peer, sizeof peer, "%d", p->id);
    kiq_peer_channel_config_t cc = { .name = name, .peer = peer, .host = p->ep.host, .port = p->ep.port,
                                     .client_id = "kafkaiq-raft", .backoff_min_ms = 2,
                                     .backoff_max_ms = 1000, .metrics = q->cfg.metrics };
    snprintf(name, sizeof name, "raft-to-%d", p->id);
    kiq_peer_channel_t *rpc = kiq_peer_channel_new(&cc);
    snprintf(name, sizeof name, "raft-fetch-from-%d", p->id);
    kiq_peer_channel_t *fetch = rpc ? kiq_peer_channel_new(&cc) : NULL;
    if (!fetch) {
        KIQ_ERROR("controller quorum: no channel to node %d: %s", p->id, kiq_error_get());
        kiq_peer_channel_free(rpc);
        return -1;
    }
    p->rpc = rpc;
    p->fetch = fetch;
    return 0;
}

void kiq_quorum_endpoint_of(kiq_quorum_t *q, int32_t id, kiq_quorum_endpoint_t *out)
{
    const peer_t *p = id == q->cfg.node_id ? NULL : kiq_quorum_peer_of(q, id);
    if (id == q->cfg.node_id)
        *out = q->cfg.self;
    else if (p)
        *out = p->ep;
    else
        memset(out, 0, sizeof *out);
}

int kiq_quorum_voters(kiq_quorum_t *q, int32_t *ids, kiq_quorum_endpoint_t *eps)
{
    kiq_raft_view_t *v = malloc(sizeof *v);
    if (!v)
        abort();
    pthread_mutex_lock(&q->mu);
    kiq_raft_view(q->raft, v);
    int n = v->n_voters;
    for (int i = 0; i < n; i++) {
        ids[i] = v->voters[i].id;
        kiq_quorum_endpoint_of(q, ids[i], &eps[i]);
    }
    pthread_mutex_unlock(&q->mu);
    free(v);
    return n;
}

bool kiq_quorum_voter_address(const kiq_quorum_t *q, int32_t id, const char **host, int *port)
{
    for (int i = 0; i < q->n_peers; i++)
        if (q->peers[i].id == id && id >= 0 && q->peers[i].ep.port > 0) {
            *host = q->peers[i].ep.host;
            *port = q->peers[i].ep.port;
            return true;
        }
    return false;
}

/* ---- the wire, both ways */

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

/* The request for m, in arena. */
static void *request_of(const kiq_raft_msg_t *m, int32_t fetch_wait_ms, kiq_arena_t *a, int16_t *api_key,
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

/* The answer to `sent` as a message for raft; false when it is malformed. */
static bool reply_of(const out_call_t *c, const void *resp, kiq_arena_t *a, kiq_raft_msg_t *m)
{
    const kiq_raft_msg_t *s = &c->sent;
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

/* ---- Raft's callbacks, under mu */

static void on_answer(kiq_peer_call_t *call, int rc);

static void submit(kiq_quorum_t *q, const kiq_raft_msg_t *m)
{
    peer_t *to = kiq_quorum_peer_of(q, m->to);
    if (!to || q->stopping || q->paused || to->cut || kiq_quorum_peer_channels(q, to) != 0)
        return;
    out_call_t *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    kiq_arena_init(&c->arena);
    c->q = q;
    c->sent = *m;
    size_t resp_size = 0;
    int32_t wait_ms = (int32_t)(q->cfg.fetch_timeout_ms / 4);
    c->call.request = request_of(m, wait_ms > 0 ? wait_ms : 0, &c->arena, &c->call.api_key, &resp_size);
    c->call.version = -1;
    c->call.arena = &c->arena;
    c->call.response = kiq_quorum_zalloc(&c->arena, resp_size);
    c->call.deadline_ns = kiq_clock_mono_ns() + q->cfg.request_timeout_ms * 1000000;
    c->call.done = on_answer;
    c->call.ctx = c;
    kiq_peer_channel_submit(m->type == KIQ_RAFT_FETCH ? to->fetch : to->rpc, &c->call);
}

static void io_send(void *ctx, const kiq_raft_msg_t *m)
{
    kiq_quorum_t *q = ctx;
    switch (m->type) {
    case KIQ_RAFT_VOTE_REPLY:
    case KIQ_RAFT_BEGIN_EPOCH_REPLY:
    case KIQ_RAFT_END_EPOCH_REPLY:
    case KIQ_RAFT_FETCH_REPLY:
        if (q->reply) {
            *q->reply = *m;
            q->replied = true;
        }
        return;
    case KIQ_RAFT_FETCH:
        if (q->last_fetch_empty) {
            q->held_fetch = *m;
            q->fetch_held = true;
            q->fetch_due_ms = kiq_quorum_now_ms() + FETCH_IDLE_MS;
            return;
        }
        submit(q, m);
        return;
    default:
        submit(q, m);
    }
}

static void tell_news(kiq_quorum_t *q)
{
    if (q->cfg.news)
        q->cfg.news(q->cfg.ctx);
}

/* A commit or a role change reaches the hook (the controller applying,
 * activating) now rather than at the next tick. */
static void wake_ticker(kiq_quorum_t *q)
{
    if (q->ticker)
        kiq_worker_poke(q->ticker);
}

/* A voter set's endpoints become the peers' addresses. */
static void learn_voters(kiq_quorum_t *q, const uint8_t *batch, size_t len)
{
    kiq_raft_voter_set_t set;
    kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
    if (kiq_quorum_voters_decode(batch, len, &set, eps) == 1)
        for (int i = 0; i < set.n; i++)
            kiq_quorum_learn_peer(q, set.voters[i].id, eps[i].name, eps[i].host, eps[i].port);
}

static int io_append(void *ctx, int64_t offset, const kiq_raft_entry_t *e, int n)
{
    kiq_quorum_t *q = ctx;
    for (int i = 0; i < n; i++)
        if (e[i].voters)
            learn_voters(q, e[i].data, e[i].len);
    int rc = kiq_quorum_log_append(q->log, offset, e, n);
    for (int i = 0; rc == 0 && i < n; i++)
        q->bytes_since_snapshot += e[i].len;
    tell_news(q);
    return rc;
}

static int io_truncate(void *ctx, int64_t end)
{
    kiq_quorum_t *q = ctx;
    KIQ_INFO("controller quorum: metadata log cut back to offset %lld (entries the leader never had)",
             (long long)end);
    return kiq_quorum_log_truncate(q->log, end);
}

static int io_read(void *ctx, int64_t offset, const kiq_raft_entry_t **e, int *n)
{
    kiq_quorum_t *q = ctx;
    return kiq_quorum_log_read(q->log, offset, FETCH_MAX_BYTES, e, n);
}

static int io_persist(void *ctx, const kiq_raft_quorum_state_t *s)
{
    kiq_quorum_t *q = ctx;
    if (kiq_quorum_log_persist(q->log, s) != 0) {
        KIQ_ERROR("controller quorum: cannot write the quorum state: %s", kiq_error_get());
        return -1;
    }
    return 0;
}

/* A new leader's first entry: Kafka's LeaderChangeMessage control record. */
static void propose_leader_change(kiq_quorum_t *q, int32_t epoch)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_leader_change_message_t m;
    kiq_leader_change_message_init(&m);
    m.leader_id = q->cfg.node_id;
    kiq_raft_view_t *v = kiq_quorum_zalloc(&a, sizeof *v);
    kiq_raft_view(q->raft, v);
    m.voters_n = v->n_voters;
    m.voters = kiq_quorum_zalloc(&a, (size_t)(v->n_voters ? v->n_voters : 1) * sizeof *m.voters);
    for (int i = 0; i < v->n_voters; i++) {
        kiq_leader_change_message_voters_init(&m.voters[i]);
        m.voters[i].voter_id = v->voters[i].id;
    }
    kiq_wr_t key, value, batch;
    kiq_wr_init(&key);
    kiq_wr_init(&value);
    kiq_wr_init(&batch);
    kiq_wr_i16(&key, 0); /* the control record key: version 0, type 2 (LEADER_CHANGE) */
    kiq_wr_i16(&key, 2);
    kiq_leader_change_message_encode(&value, 0, &m);
    int64_t now = kiq_clock_wall_ms();
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now);
    bb.control = true;
    int64_t at;
    if (key.err || value.err ||
        kiq_batch_builder_add(&bb, key.buf, (int32_t)key.len, value.buf, (int32_t)value.len, NULL, 0, now) != 0 ||
        kiq_batch_builder_finish(&bb, &batch) != 0 || batch.err ||
        kiq_raft_propose(q->raft, 1, batch.buf, batch.len, &at) != 0)
        KIQ_ERROR("controller quorum: epoch %d's leader change not written: %s", epoch, kiq_error_get());
    kiq_batch_builder_free(&bb);
    kiq_wr_free(&key);
    kiq_wr_free(&value);
    kiq_wr_free(&batch);
    kiq_arena_reset(&a);
}

static void io_became(void *ctx, kiq_raft_role_t role, int32_t epoch, int32_t leader)
{
    kiq_quorum_t *q = ctx;
    if (role != q->role || epoch != q->epoch || leader != q->leader)
        KIQ_INFO("controller quorum: node %d is %s in epoch %d (leader %d)", q->cfg.node_id, kiq_raft_role_name(role),
                 epoch, leader);
    q->role = role;
    q->epoch = epoch;
    q->leader = leader;
    if (role == KIQ_RAFT_LEADER)
        propose_leader_change(q, epoch);
    q->last_fetch_empty = false;
    q->fetch_held = false;
    kiq_quorum_snapshot_fetch_drop(q);
    pthread_cond_broadcast(&q->moved);
    tell_news(q);
    wake_ticker(q);
}

static void io_committed(void *ctx, int64_t hw)
{
    kiq_quorum_t *q = ctx;
    q->hw = hw;
    pthread_cond_broadcast(&q->moved);
    tell_news(q);
    wake_ticker(q);
}

static const kiq_raft_io_t IO = {
    .send = io_send, .append = io_append, .truncate = io_truncate, .read = io_read,
    .persist = io_persist, .became = io_became, .committed = io_committed,
    .fetch_snapshot = kiq_quorum_snapshot_fetch_start,
};

/* A channel's worker: another voter answered (or did not). */
static void on_answer(kiq_peer_call_t *call, int rc)
{
    out_call_t *c = call->ctx;
    kiq_quorum_t *q = c->q;
    kiq_raft_msg_t m;
    if (rc == 0 && reply_of(c, call->response, &c->arena, &m)) {
        pthread_mutex_lock(&q->mu);
        peer_t *from = kiq_quorum_peer_of(q, m.from);
        if (m.type == KIQ_RAFT_FETCH_REPLY) {
            /* the leader it names: where to fetch next */
            const kiq_fetch_response_t *r = call->response;
            for (int i = 0; i < r->node_endpoints_n; i++) {
                char host[256];
                snprintf(host, sizeof host, "%.*s", (int)r->node_endpoints[i].host.len, r->node_endpoints[i].host.p);
                kiq_quorum_learn_peer(q, r->node_endpoints[i].node_id, NULL, host, r->node_endpoints[i].port);
            }
        }
        if (!q->stopping && !q->paused && from && !from->cut) {
            if (m.type == KIQ_RAFT_FETCH_REPLY)
                q->last_fetch_empty = m.error != KIQ_ERR_NONE ||
                                      (m.fetch_reply.n_entries == 0 && m.fetch_reply.diverging.epoch < 0 &&
                                       m.fetch_reply.snapshot.epoch < 0 && m.fetch_reply.high_watermark <= q->hw);
            kiq_raft_receive(q->raft, kiq_quorum_now_ms(), &m);
        }
        pthread_mutex_unlock(&q->mu);
    }
    kiq_arena_reset(&c->arena);
    free(c);
}

/* ---- the ticker */

static int64_t tick_round(void *ctx)
{
    kiq_quorum_t *q = ctx;
    pthread_mutex_lock(&q->mu);
    int64_t now = kiq_quorum_now_ms();
    if (!q->paused)
        kiq_raft_tick(q->raft, now);
    if (q->fetch_held && !q->paused && now >= q->fetch_due_ms) {
        q->fetch_held = false;
        submit(q, &q->held_fetch);
    }
    kiq_quorum_change_fn change_done = NULL;
    void *change_ctx = NULL;
    int16_t change_error = 0;
    if (q->change.active) {
        if (q->hw > q->change.offset)
            change_error = KIQ_ERR_NONE;
        else if (q->role != KIQ_RAFT_LEADER || q->epoch != q->change.epoch)
            change_error = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        else if (now >= q->change.deadline_ms)
            change_error = KIQ_ERR_REQUEST_TIMED_OUT;
        else
            change_error = -1;
        if (change_error >= 0) {
            q->change.active = false;
            change_done = q->change.done;
            change_ctx = q->change.ctx;
        }
    }
    kiq_quorum_snapshot_tick(q, now);
    bool moved = q->hw != q->told_hw || q->role != q->told_role || q->epoch != q->told_epoch;
    q->told_hw = q->hw;
    q->told_role = q->role;
    q->told_epoch = q->epoch;
    pthread_mutex_unlock(&q->mu);
    if (change_done) {
        if (change_error)
            kiq_error_set("the voter change at offset %lld did not commit (error %d)", (long long)q->change.offset,
                          change_error);
        change_done(change_ctx, change_error);
    }
    if (moved && q->cfg.changed)
        q->cfg.changed(q->cfg.ctx);
    return TICK_MS;
}

/* ---- lifecycle */

/* The voter sets of the log, as it is opened. */
typedef struct voter_sets {
    kiq_quorum_t *q;
    kiq_raft_voters_at_t *at;
    int n, cap;
} voter_sets_t;

static void add_set(voter_sets_t *v, int64_t offset, const kiq_raft_voter_set_t *set,
                    const kiq_quorum_endpoint_t *eps)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->at = realloc(v->at, (size_t)v->cap * sizeof *v->at);
        if (!v->at)
            abort();
    }
    v->at[v->n++] = (kiq_raft_voters_at_t){ offset, *set };
    for (int i = 0; i < set->n; i++)
        kiq_quorum_learn_peer(v->q, set->voters[i].id, eps[i].name, eps[i].host, eps[i].port);
}

static int collect_voters(void *ctx, int64_t offset, const uint8_t *batch, size_t len)
{
    kiq_raft_voter_set_t set;
    kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
    int got = kiq_quorum_voters_decode(batch, len, &set, eps);
    if (got > 0)
        add_set(ctx, offset, &set, eps);
    return got < 0 ? got : 0;
}

/* The voter set of the snapshot the log starts after comes first: the
 * entries that wrote it are gone (Kafka's voter history starts there too,
 * at the snapshot's last offset). */
static int snapshot_voters(kiq_quorum_t *q, voter_sets_t *sets)
{
    kiq_raft_epoch_end_t s = kiq_quorum_log_snapshot(q->log);
    kiq_snapshot_voters_t v;
    int got = s.epoch >= 0 ? kiq_snapshot_voters(kiq_quorum_log_dir(q->log), s, &v) : 0;
    if (got > 0)
        add_set(sets, s.end_offset - 1, &v.set, v.eps);
    return got < 0 ? got : 0;
}

/* Kafka's `kafka-storage format --standalone`: a new log's first batch
 * makes this node the only voter, under kraft.version 1. */
static int format_standalone(kiq_quorum_t *q)
{
    kiq_raft_voter_set_t set = { .n = 1 };
    set.voters[0].id = q->cfg.node_id;
    memcpy(set.voters[0].dir, q->cfg.dir_id, sizeof set.voters[0].dir);
    kiq_wr_t batch;
    kiq_wr_init(&batch);
    int32_t count;
    int rc = kiq_quorum_voters_batch(&set, &q->cfg.self, true, &batch, &count);
    if (rc == 0) {
        kiq_raft_entry_t e = { 0, count, batch.buf, batch.len, &set };
        rc = kiq_quorum_log_append(q->log, 0, &e, 1);
    }
    kiq_wr_free(&batch);
    if (rc == 0)
        KIQ_INFO("controller quorum: node %d formatted standalone, the only voter (kraft.version 1)", q->cfg.node_id);
    return rc;
}

kiq_quorum_t *kiq_quorum_new(const kiq_quorum_config_t *cfg)
{
    kiq_quorum_t *q = calloc(1, sizeof *q);
    if (!q)
        abort();
    q->cfg = *cfg;
    pthread_mutex_init(&q->mu, NULL);
    kiq_cond_init_monotonic(&q->moved);
    q->role = KIQ_RAFT_UNATTACHED;
    q->leader = -1;
    q->told_hw = -1;
    int32_t ids[KIQ_RAFT_MAX_VOTERS];
    for (int i = 0; i < cfg->n_voters; i++)
        ids[i] = cfg->voters[i].id;
    q->log = kiq_quorum_log_open(cfg->dir, ids, cfg->n_voters);
    if (!q->log || (cfg->segment_bytes > 0 && kiq_quorum_log_set_segment_bytes(q->log, cfg->segment_bytes) != 0)) {
        kiq_quorum_free(q);
        return NULL;
    }
    kiq_raft_config_t rc = {
        .node_id = cfg->node_id, .n_voters = cfg->n_voters, .election_timeout_ms = cfg->election_timeout_ms,
        .fetch_timeout_ms = cfg->fetch_timeout_ms, .election_backoff_max_ms = cfg->election_backoff_max_ms,
        .request_timeout_ms = cfg->request_timeout_ms, .seed = (uint64_t)kiq_clock_system_mono_ns(),
        .now_ms = kiq_quorum_now_ms(), .io = &IO, .ctx = q,
    };
    memcpy(rc.voters, ids, (size_t)cfg->n_voters * sizeof *ids);
    memcpy(rc.dir, cfg->dir_id, sizeof rc.dir);
    for (int i = 0; i < cfg->n_voters; i++)
        kiq_quorum_learn_peer(q, cfg->voters[i].id, NULL, cfg->voters[i].host, cfg->voters[i].port);
    for (int i = 0; i < cfg->n_bootstrap; i++)
        kiq_quorum_learn_peer(q, KIQ_RAFT_BOOTSTRAP_ID(i), NULL, cfg->bootstrap[i].host, cfg->bootstrap[i].port);
    rc.n_bootstrap = cfg->n_bootstrap;
    voter_sets_t sets = { .q = q };
    if ((!cfg->n_voters && cfg->standalone && kiq_quorum_log_end(q->log) == 0 && format_standalone(q) != 0) ||
        snapshot_voters(q, &sets) != 0 || kiq_quorum_log_scan_control(q->log, collect_voters, &sets) != 0) {
        free(sets.at);
        kiq_quorum_free(q);
        return NULL;
    }
    rc.voter_sets = sets.at;
    rc.n_voter_sets = sets.n;
    kiq_quorum_log_fill(q->log, &rc);
    q->epoch = rc.state.epoch;
    q->hw = rc.snapshot.epoch >= 0 ? rc.snapshot.end_offset : 0; /* raft's starts there too */
    q->bytes_since_snapshot = kiq_quorum_log_size(q->log);
    q->last_snapshot_ms = kiq_quorum_now_ms();
    q->snap.id = (kiq_raft_epoch_end_t){ -1, -1 };
    q->raft = kiq_raft_new(&rc);
    free(sets.at);
    if (!q->raft) {
        kiq_quorum_free(q);
        return NULL;
    }
    return q;
}

int kiq_quorum_start(kiq_quorum_t *q)
{
    kiq_worker_config_t wc = { .name = "raft", .round = tick_round, .ctx = q };
    kiq_worker_t *t = kiq_worker_start(&wc);
    pthread_mutex_lock(&q->mu);
    q->ticker = t;
    pthread_mutex_unlock(&q->mu);
    return t ? 0 : -1;
}

void kiq_quorum_stop(kiq_quorum_t *q, bool resign)
{
    if (!q || !q->raft)
        return;
    pthread_mutex_lock(&q->mu);
    bool first = !q->stopping;
    /* a leader that leaves tells the others, so one of them runs at once */
    if (first && resign)
        kiq_raft_resign(q->raft, kiq_quorum_now_ms());
    pthread_mutex_unlock(&q->mu);
    if (!first)
        return;
    pthread_mutex_lock(&q->mu);
    kiq_worker_t *t = q->ticker;
    q->ticker = NULL;
    pthread_mutex_unlock(&q->mu);
    kiq_worker_stop(t);
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    pthread_cond_broadcast(&q->moved);
    bool pending = q->change.active;
    q->change.active = false;
    pthread_mutex_unlock(&q->mu);
    if (pending) {
        kiq_error_set("node %d stopped before the voter change committed", q->cfg.node_id);
        q->change.done(q->change.ctx, KIQ_ERR_NOT_LEADER_OR_FOLLOWER);
    }
    for (int i = 0; i < q->n_peers; i++) {
        kiq_peer_channel_stop(q->peers[i].rpc);
        kiq_peer_channel_stop(q->peers[i].fetch);
    }
}

void kiq_quorum_free(kiq_quorum_t *q)
{
    if (!q)
        return;
    kiq_quorum_stop(q, false);
    for (int i = 0; i < q->n_peers; i++) {
        kiq_peer_channel_free(q->peers[i].rpc);
        kiq_peer_channel_free(q->peers[i].fetch);
    }
    kiq_raft_free(q->raft);
    kiq_quorum_log_free(q->log);
    pthread_cond_destroy(&q->moved);
    pthread_mutex_destroy(&q->mu);
    free(q);
}

/* ---- the other voters' requests */

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

void kiq_quorum_describe(kiq_quorum_t *q, const kiq_describe_quorum_request_t *req, kiq_arena_t *arena,
                         kiq_describe_quorum_response_t *resp)
{
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

/* ---- the controller's side */

int kiq_quorum_write(kiq_quorum_t *q, const kiq_metadata_record_t *records, size_t n, int64_t timeout_ms,
                     int64_t *last_offset)
{
    kiq_wr_t batch;
    kiq_wr_init(&batch);
    if (kiq_quorum_log_batch(records, n, &batch) != 0) {
        kiq_wr_free(&batch);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    int64_t at;
    int32_t epoch = q->epoch;
    if (q->stopping || kiq_raft_propose(q->raft, (int32_t)n, batch.buf, batch.len, &at) != 0) {
        rc = q->role == KIQ_RAFT_LEADER ? KIQ_ERR_UNKNOWN_SERVER_ERROR : KIQ_ERR_NOT_CONTROLLER;
        if (rc == KIQ_ERR_NOT_CONTROLLER)
            kiq_error_set("node %d is not the active controller (leader %d, epoch %d)", q->cfg.node_id, q->leader,
                          q->epoch);
    } else {
        int64_t end = at + (int64_t)n, deadline = kiq_clock_system_mono_ns() + timeout_ms * 1000000;
        while (q->hw < end && !q->stopping && q->role == KIQ_RAFT_LEADER && q->epoch == epoch &&
               kiq_cond_wait_until(&q->moved, &q->mu, deadline))
            ;
        if (q->hw >= end) {
            *last_offset = end - 1;
        } else if (q->role != KIQ_RAFT_LEADER || q->epoch != epoch || q->stopping) {
            rc = KIQ_ERR_NOT_CONTROLLER;
            kiq_error_set("node %d lost the leadership (epoch %d) before a majority had the records", q->cfg.node_id,
                          epoch);
        } else {
            rc = KIQ_ERR_REQUEST_TIMED_OUT;
            kiq_error_set("no majority of the controller quorum took the records within %lld ms",
                          (long long)timeout_ms);
        }
    }
    pthread_mutex_unlock(&q->mu);
    kiq_wr_free(&batch);
    return rc;
}

/* Proposes the set in force with key added or removed; the answer
 * comes from the ticker once it commits. */
static void change_voters(kiq_quorum_t *q, const kiq_raft_replica_key_t *key, const kiq_quorum_endpoint_t *ep,
                          bool add, int64_t timeout_ms, kiq_quorum_change_fn done, void *ctx)
{
    pthread_mutex_lock(&q->mu);
    int rc = q->change.active ? (kiq_error_set("a voter change is under way"), KIQ_ERR_REQUEST_TIMED_OUT)
                              : kiq_raft_voters_check(q->raft, key, add);
    if (rc == 0) {
        kiq_raft_voter_set_t set;
        kiq_raft_voters_changed(q->raft, key, add, &set);
        kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
        for (int i = 0; i < set.n; i++) {
            const peer_t *p = kiq_quorum_peer_of(q, set.voters[i].id);
            eps[i] = set.voters[i].id == q->cfg.node_id ? q->cfg.self
                     : add && set.voters[i].id == key->id ? *ep
                     : p ? p->ep : (kiq_quorum_endpoint_t){ .port = 0 };
        }
        if (add)
            kiq_quorum_learn_peer(q, key->id, ep->name, ep->host, ep->port);
        kiq_wr_t batch;
        kiq_wr_init(&batch);
        int32_t count;
        int64_t at;
        rc = kiq_quorum_voters_batch(&set, eps, false, &batch, &count) != 0 ? KIQ_ERR_UNKNOWN_SERVER_ERROR
                                                                            : kiq_raft_propose_voters(q->raft, &set,
                                                                                                      batch.buf,
                                                                                                      batch.len, &at);
        kiq_wr_free(&batch);
        if (rc == 0) {
            KIQ_INFO("controller quorum: %s voter %d at offset %lld", add ? "adding" : "removing", key->id,
                     (long long)at);
            q->change.active = true;
            q->change.offset = at;
            q->change.epoch = q->epoch;
            q->change.deadline_ms = kiq_quorum_now_ms() + (timeout_ms > 0 ? timeout_ms : q->cfg.request_timeout_ms);
            q->change.done = done;
            q->change.ctx = ctx;
            wake_ticker(q);
        }
    }
    pthread_mutex_unlock(&q->mu);
    if (rc != 0)
        done(ctx, (int16_t)(rc < 0 ? KIQ_ERR_UNKNOWN_SERVER_ERROR : rc));
}

void kiq_quorum_add_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, const kiq_quorum_endpoint_t *ep,
                          int64_t timeout_ms, kiq_quorum_change_fn done, void *ctx)
{
    kiq_raft_replica_key_t key = { .id = id };
    memcpy(key.dir, dir->b, sizeof key.dir);
    change_voters(q, &key, ep, true, timeout_ms, done, ctx);
}

void kiq_quorum_remove_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, int64_t timeout_ms,
                             kiq_quorum_change_fn done, void *ctx)
{
    kiq_raft_replica_key_t key = { .id = id };
    memcpy(key.dir, dir->b, sizeof key.dir);
    change_voters(q, &key, NULL, false, timeout_ms, done, ctx);
}

int kiq_quorum_replay(kiq_quorum_t *q, int64_t from, int64_t to, kiq_metadata_replay_fn cb, void *ctx)
{
    pthread_mutex_lock(&q->mu);
    if (to > q->hw)
        to = q->hw;
    int rc = from < to ? kiq_quorum_log_replay(q->log, from, to, cb, ctx) : 0;
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void kiq_quorum_pause(kiq_quorum_t *q, bool paused)
{
    pthread_mutex_lock(&q->mu);
    q->paused = paused;
    pthread_mutex_unlock(&q->mu);
}

void kiq_quorum_cut(kiq_quorum_t *q, int32_t voter, bool cut)
{
    pthread_mutex_lock(&q->mu);
    peer_t *p = kiq_quorum_peer_of(q, voter);
    if (p)
        p->cut = cut;
    pthread_mutex_unlock(&q->mu);
}

void kiq_quorum_view(kiq_quorum_t *q, kiq_raft_view_t *out)
{
    pthread_mutex_lock(&q->mu);
    kiq_raft_view(q->raft, out);
    pthread_mutex_unlock(&q->mu);
}
