/* The controller quorum on one node: its peers, raft's callbacks, the
 * ticker, the lifecycle and the controller's calls (the RPCs on the wire
 * are quorum_rpc.c's, snapshots quorum_snapshot.c's); see quorum.h. */
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
#include "net/peer_channel.h"
#include "proto/errors.h"
#include "record/batch.h"
#include "record/compression.h"

#define TICK_MS 5

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
                                     .backoff_max_ms = 1000, .metrics = q->cfg.metrics,
                                     .security = q->cfg.security };
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
    c->call.request = kiq_quorum_request_of(m, wait_ms > 0 ? wait_ms : 0, &c->arena, &c->call.api_key, &resp_size);
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
    if (rc == 0 && kiq_quorum_reply_of(&c->sent, call->response, &c->arena, &m)) {
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
               kiq_cond_wait_until_system(&q->moved, &q->mu, deadline))
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

/* A voter change: the set in force with a voter added, removed, or
 * written again with its new endpoint. */
typedef enum { VOTER_ADD, VOTER_REMOVE, VOTER_UPDATE } voter_op_t;

/* Under mu: an updated voter's peer now at ep; its channels follow it. */
static void move_peer(kiq_quorum_t *q, int32_t id, const kiq_quorum_endpoint_t *ep)
{
    peer_t *p = kiq_quorum_peer_of(q, id);
    if (!p || p->ep.port <= 0) {
        kiq_quorum_learn_peer(q, id, ep->name, ep->host, ep->port);
        return;
    }
    bool moved = strcmp(p->ep.host, ep->host) != 0 || p->ep.port != ep->port;
    p->ep = *ep;
    if (moved && p->rpc) {
        kiq_peer_channel_retarget(p->rpc, ep->host, ep->port);
        kiq_peer_channel_retarget(p->fetch, ep->host, ep->port);
    }
}

/* Proposes the new set; the answer comes from the ticker once it
 * commits. */
static void change_voters(kiq_quorum_t *q, const kiq_raft_replica_key_t *key, const kiq_quorum_endpoint_t *ep,
                          voter_op_t op, int64_t timeout_ms, kiq_quorum_change_fn done, void *ctx)
{
    pthread_mutex_lock(&q->mu);
    int rc = q->change.active      ? (kiq_error_set("a voter change is under way"), KIQ_ERR_REQUEST_TIMED_OUT)
             : op == VOTER_UPDATE ? kiq_raft_voter_update_check(q->raft, key)
                                  : kiq_raft_voters_check(q->raft, key, op == VOTER_ADD);
    if (rc == 0) {
        kiq_raft_voter_set_t set;
        if (op == VOTER_UPDATE)
            kiq_raft_voters_before(q->raft, INT64_MAX, &set); /* the set in force, unchanged */
        else
            kiq_raft_voters_changed(q->raft, key, op == VOTER_ADD, &set);
        kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
        for (int i = 0; i < set.n; i++) {
            const peer_t *p = kiq_quorum_peer_of(q, set.voters[i].id);
            eps[i] = op != VOTER_REMOVE && set.voters[i].id == key->id ? *ep
                     : set.voters[i].id == q->cfg.node_id             ? q->cfg.self
                     : p                                              ? p->ep
                                                                      : (kiq_quorum_endpoint_t){ .port = 0 };
        }
        if (op == VOTER_ADD)
            kiq_quorum_learn_peer(q, key->id, ep->name, ep->host, ep->port);
        else if (op == VOTER_UPDATE && key->id != q->cfg.node_id)
            move_peer(q, key->id, ep);
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
            static const char *const doing[] = { "adding", "removing", "updating" };
            KIQ_INFO("controller quorum: %s voter %d at offset %lld", doing[op], key->id, (long long)at);
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
    change_voters(q, &key, ep, VOTER_ADD, timeout_ms, done, ctx);
}

void kiq_quorum_remove_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, int64_t timeout_ms,
                             kiq_quorum_change_fn done, void *ctx)
{
    kiq_raft_replica_key_t key = { .id = id };
    memcpy(key.dir, dir->b, sizeof key.dir);
    change_voters(q, &key, NULL, VOTER_REMOVE, timeout_ms, done, ctx);
}

void kiq_quorum_update_voter(kiq_quorum_t *q, int32_t id, const kiq_uuid_t *dir, const kiq_quorum_endpoint_t *eps,
                             int n, int16_t min_kraft, int16_t max_kraft, int64_t timeout_ms, kiq_quorum_change_fn done,
                             void *ctx)
{
    kiq_raft_replica_key_t key = { .id = id };
    memcpy(key.dir, dir->b, sizeof key.dir);
    if (n < 1 || min_kraft > 1 || max_kraft < 1) {
        /* the set is kept at kraft.version 1, which the voter must speak */
        if (n < 1)
            kiq_error_set("voter %d names no listener", id);
        else
            kiq_error_set("voter %d supports kraft.version %d-%d, not the quorum's 1", id, min_kraft, max_kraft);
        done(ctx, KIQ_ERR_INVALID_REQUEST);
        return;
    }
    /* the listener of the name the set knows it by; else its first */
    kiq_quorum_endpoint_t known;
    pthread_mutex_lock(&q->mu);
    kiq_quorum_endpoint_of(q, id, &known);
    pthread_mutex_unlock(&q->mu);
    const kiq_quorum_endpoint_t *ep = &eps[0];
    for (int i = 0; i < n; i++)
        if (known.port > 0 && strcmp(eps[i].name, known.name) == 0)
            ep = &eps[i];
    change_voters(q, &key, ep, VOTER_UPDATE, timeout_ms, done, ctx);
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
