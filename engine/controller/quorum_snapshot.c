/* The controller quorum's snapshots (KIP-630): the controller's own
 * written and the log start moved past them, the leader's served to a
 * follower by FetchSnapshot, and a follower's fetched in chunks, checked
 * and loaded in place of its log. See quorum.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/metadata_snapshot.h"
#include "controller/quorum_internal.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "log/log_names.h"
#include "proto/errors.h"

/* ---- the controller's own */

static int64_t snapshot_end(const kiq_quorum_t *q)
{
    kiq_raft_epoch_end_t s = kiq_quorum_log_snapshot(q->log);
    return s.epoch >= 0 ? s.end_offset : 0;
}

int kiq_quorum_snapshot(kiq_quorum_t *q, int64_t end, const kiq_metadata_record_t *records, size_t n,
                        kiq_raft_epoch_end_t *id)
{
    pthread_mutex_lock(&q->mu);
    int rc = 0;
    if (end <= snapshot_end(q)) {
        *id = kiq_quorum_log_snapshot(q->log);
    } else if (end > q->hw) {
        rc = kiq_error_set("a snapshot to offset %" PRId64 " would hold uncommitted entries (high watermark %" PRId64 ")",
                           end, q->hw);
    } else {
        kiq_raft_epoch_end_t s = { kiq_quorum_log_epoch_before(q->log, end), end };
        kiq_snapshot_voters_t v;
        bool dynamic = kiq_raft_voters_before(q->raft, end, &v.set);
        for (int i = 0; dynamic && i < v.set.n; i++)
            kiq_quorum_endpoint_of(q, v.set.voters[i].id, &v.eps[i]);
        rc = kiq_snapshot_write(kiq_quorum_log_dir(q->log), s, kiq_clock_wall_ms(), dynamic ? &v : NULL, records, n);
        if (rc == 0)
            rc = kiq_raft_snapshot_loaded(q->raft, s, NULL);
        if (rc == 0)
            rc = kiq_quorum_log_snapshot_taken(q->log, s);
        if (rc == 0) {
            *id = s;
            q->bytes_since_snapshot = 0;
            q->last_snapshot_ms = kiq_quorum_now_ms();
            KIQ_INFO("controller quorum: node %d wrote the metadata snapshot %020" PRId64 "-%010" PRId32
                     "%s (%zu records); its log starts there", q->cfg.node_id, s.end_offset, s.epoch,
                     KIQ_METADATA_SNAPSHOT_SUFFIX, n);
        }
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

bool kiq_quorum_snapshot_due(kiq_quorum_t *q, int64_t applied)
{
    pthread_mutex_lock(&q->mu);
    bool due = applied > snapshot_end(q) && applied <= q->hw &&
               ((q->cfg.snapshot_max_bytes > 0 && q->bytes_since_snapshot >= (uint64_t)q->cfg.snapshot_max_bytes) ||
                (q->cfg.snapshot_interval_ms > 0 &&
                 kiq_quorum_now_ms() - q->last_snapshot_ms >= q->cfg.snapshot_interval_ms));
    pthread_mutex_unlock(&q->mu);
    return due;
}

int64_t kiq_quorum_log_start(kiq_quorum_t *q)
{
    pthread_mutex_lock(&q->mu);
    int64_t start = snapshot_end(q);
    pthread_mutex_unlock(&q->mu);
    return start;
}

int kiq_quorum_load_snapshot(kiq_quorum_t *q, kiq_metadata_replay_fn cb, void *ctx, int64_t *end)
{
    pthread_mutex_lock(&q->mu);
    kiq_raft_epoch_end_t s = kiq_quorum_log_snapshot(q->log);
    int rc = s.epoch < 0 ? kiq_error_set("no metadata snapshot to load")
                         : kiq_snapshot_load(kiq_quorum_log_dir(q->log), s, cb, ctx);
    *end = s.end_offset;
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* ---- the leader's: FetchSnapshot answered */

void kiq_quorum_fetch_snapshot(kiq_quorum_t *q, const kiq_fetch_snapshot_request_t *req, kiq_arena_t *arena,
                               kiq_fetch_snapshot_response_t *resp)
{
    if (req->topics_n != 1 || req->topics->partitions_n != 1) {
        resp->error_code = KIQ_ERR_INVALID_REQUEST;
        return;
    }
    const kiq_fetch_snapshot_request_topics_partitions_t *p = req->topics->partitions;
    resp->topics_n = 1;
    resp->topics = kiq_quorum_zalloc(arena, sizeof *resp->topics);
    kiq_fetch_snapshot_response_topics_init(resp->topics);
    resp->topics->name = kiq_quorum_astr(arena, KIQ_METADATA_TOPIC);
    resp->topics->partitions_n = 1;
    kiq_fetch_snapshot_response_topics_partitions_t *rp = resp->topics->partitions =
        kiq_quorum_zalloc(arena, sizeof *rp);
    kiq_fetch_snapshot_response_topics_partitions_init(rp);
    rp->index = p->partition;
    rp->snapshot_id.end_offset = p->snapshot_id.end_offset;
    rp->snapshot_id.epoch = p->snapshot_id.epoch;
    if (!kiq_quorum_is_metadata_topic(req->topics->name) || p->partition != 0) {
        rp->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    kiq_raft_view_t v;
    pthread_mutex_lock(&q->mu);
    kiq_raft_view(q->raft, &v);
    const peer_t *from = kiq_quorum_peer_of(q, req->replica_id);
    if (q->paused || (from && from->cut)) {
        /* as a lost request: no epoch, no leader */
        rp->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        rp->current_leader.leader_id = rp->current_leader.leader_epoch = -1;
        pthread_mutex_unlock(&q->mu);
        return;
    }
    rp->current_leader.leader_id = v.leader_id;
    rp->current_leader.leader_epoch = v.epoch;
    if (p->current_leader_epoch < v.epoch) {
        rp->error_code = KIQ_ERR_FENCED_LEADER_EPOCH;
    } else if (p->current_leader_epoch > v.epoch) {
        rp->error_code = KIQ_ERR_UNKNOWN_LEADER_EPOCH;
    } else if (v.role != KIQ_RAFT_LEADER) {
        rp->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    } else {
        kiq_raft_epoch_end_t id = { p->snapshot_id.epoch, p->snapshot_id.end_offset };
        int32_t max = req->max_bytes > 0 && req->max_bytes < SNAPSHOT_CHUNK_BYTES ? req->max_bytes : SNAPSHOT_CHUNK_BYTES;
        const uint8_t *data;
        int32_t len;
        int rc = kiq_snapshot_read_chunk(kiq_quorum_log_dir(q->log), id, p->position, max, arena, &data, &len,
                                         &rp->size);
        if (rc < 0)
            KIQ_WARN_LIMITED("controller quorum: FetchSnapshot not answered: %s", kiq_error_get());
        rp->error_code = rc == 0 ? KIQ_ERR_NONE : rc > 0 ? (int16_t)rc : KIQ_ERR_UNKNOWN_SERVER_ERROR;
        rp->position = p->position;
        if (rc == 0)
            rp->unaligned_records = (kiq_bytes_t){ data, len };
    }
    pthread_mutex_unlock(&q->mu);
}

/* ---- a follower's: the leader's snapshot fetched */

/* One FetchSnapshot to the leader, from submit to its callback. */
typedef struct snap_call {
    kiq_peer_call_t call;
    kiq_arena_t arena;
    kiq_quorum_t *q;
    uint64_t generation;
} snap_call_t;

static void on_snapshot_answer(kiq_peer_call_t *call, int rc);

/* Under mu: the request for the next chunk. */
static void request_chunk(kiq_quorum_t *q)
{
    peer_t *leader = kiq_quorum_peer_of(q, q->snap.leader);
    if (!leader || q->stopping || q->paused || leader->cut || kiq_quorum_peer_channels(q, leader) != 0) {
        q->snap.due_ms = kiq_quorum_now_ms() + FETCH_IDLE_MS;
        return;
    }
    snap_call_t *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    kiq_arena_init(&c->arena);
    c->q = q;
    c->generation = q->snap.generation;
    kiq_fetch_snapshot_request_t *r = kiq_quorum_zalloc(&c->arena, sizeof *r);
    kiq_fetch_snapshot_request_init(r);
    r->replica_id = q->cfg.node_id;
    r->max_bytes = SNAPSHOT_CHUNK_BYTES;
    r->topics_n = 1;
    r->topics = kiq_quorum_zalloc(&c->arena, sizeof *r->topics);
    kiq_fetch_snapshot_request_topics_init(r->topics);
    r->topics->name = kiq_quorum_astr(&c->arena, KIQ_METADATA_TOPIC);
    r->topics->partitions_n = 1;
    kiq_fetch_snapshot_request_topics_partitions_t *p = r->topics->partitions =
        kiq_quorum_zalloc(&c->arena, sizeof *p);
    kiq_fetch_snapshot_request_topics_partitions_init(p);
    p->partition = 0;
    p->current_leader_epoch = q->snap.epoch;
    p->snapshot_id.end_offset = q->snap.id.end_offset;
    p->snapshot_id.epoch = q->snap.id.epoch;
    p->position = q->snap.position;
    c->call.api_key = KIQ_API_FETCH_SNAPSHOT;
    c->call.version = -1;
    c->call.request = r;
    c->call.arena = &c->arena;
    c->call.response = kiq_quorum_zalloc(&c->arena, sizeof(kiq_fetch_snapshot_response_t));
    c->call.deadline_ns = kiq_clock_mono_ns() + q->cfg.request_timeout_ms * 1000000;
    c->call.done = on_snapshot_answer;
    c->call.ctx = c;
    q->snap.in_flight = true;
    kiq_peer_channel_submit(leader->fetch, &c->call);
}

void kiq_quorum_snapshot_fetch_start(void *ctx, int32_t leader_id, kiq_raft_epoch_end_t id)
{
    kiq_quorum_t *q = ctx;
    kiq_quorum_snapshot_fetch_drop(q);
    q->snap.active = true;
    q->snap.leader = leader_id;
    q->snap.epoch = q->epoch;
    q->snap.id = id;
    q->snap.position = 0;
    q->snap.size = -1;
    KIQ_INFO("controller quorum: node %d fetches the snapshot %020" PRId64 "-%010" PRId32 " from leader %d (its log "
             "starts after it)", q->cfg.node_id, id.end_offset, id.epoch, leader_id);
    request_chunk(q);
}

void kiq_quorum_snapshot_fetch_drop(kiq_quorum_t *q)
{
    q->snap.generation++;
    q->snap.active = q->snap.in_flight = false;
    q->snap.due_ms = 0;
}

void kiq_quorum_snapshot_tick(kiq_quorum_t *q, int64_t now)
{
    if (q->snap.active && !q->snap.in_flight && q->snap.due_ms && now >= q->snap.due_ms && !q->paused) {
        q->snap.due_ms = 0;
        request_chunk(q);
    }
}

/* Under mu: the fetch ends without a snapshot; raft fetches again and
 * learns what to fetch now. */
static void fetch_failed(kiq_quorum_t *q, const char *why)
{
    KIQ_WARN_LIMITED("controller quorum: node %d's fetch of snapshot %020" PRId64 "-%010" PRId32 " failed: %s",
                     q->cfg.node_id, q->snap.id.end_offset, q->snap.id.epoch, why);
    kiq_quorum_snapshot_fetch_drop(q);
    kiq_raft_snapshot_failed(q->raft, kiq_quorum_now_ms());
}

/* Under mu: every byte is here: checked, put in place of the log, loaded. */
static void fetch_done(kiq_quorum_t *q)
{
    kiq_raft_epoch_end_t id = q->snap.id;
    const char *dir = kiq_quorum_log_dir(q->log);
    kiq_quorum_snapshot_fetch_drop(q);
    kiq_snapshot_voters_t v;
    int voters = 0;
    if (kiq_snapshot_part_finish(dir, id, q->snap.size) != 0 || (voters = kiq_snapshot_voters(dir, id, &v)) < 0 ||
        kiq_quorum_log_reset_to(q->log, id) != 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        fetch_failed(q, why);
        return;
    }
    q->bytes_since_snapshot = 0;
    q->last_snapshot_ms = kiq_quorum_now_ms();
    KIQ_INFO("controller quorum: node %d loaded the snapshot %020" PRId64 "-%010" PRId32 " (%" PRId64
             " bytes) fetched from leader %d", q->cfg.node_id, id.end_offset, id.epoch, q->snap.size, q->snap.leader);
    for (int i = 0; i < (voters > 0 ? v.set.n : 0); i++)
        kiq_quorum_learn_peer(q, v.set.voters[i].id, v.eps[i].name, v.eps[i].host, v.eps[i].port);
    if (kiq_raft_snapshot_loaded(q->raft, id, voters > 0 ? &v.set : NULL) != 0)
        KIQ_ERROR("controller quorum: node %d: %s", q->cfg.node_id, kiq_error_get());
}

/* Under mu: the leader's answer for the chunk at q->snap.position. */
static void take_chunk(kiq_quorum_t *q, const kiq_fetch_snapshot_response_t *r)
{
    if (r->error_code || r->topics_n != 1 || r->topics->partitions_n != 1) {
        fetch_failed(q, r->error_code ? kiq_error_name(r->error_code) : "a malformed answer");
        return;
    }
    const kiq_fetch_snapshot_response_topics_partitions_t *p = r->topics->partitions;
    if (p->error_code) {
        fetch_failed(q, kiq_error_name(p->error_code));
        return;
    }
    int64_t len = p->unaligned_records.p ? p->unaligned_records.len : 0;
    if (p->snapshot_id.end_offset != q->snap.id.end_offset || p->snapshot_id.epoch != q->snap.id.epoch ||
        p->position != q->snap.position || p->size <= 0 || len <= 0 || len > p->size - p->position ||
        (q->snap.size >= 0 && p->size != q->snap.size)) {
        fetch_failed(q, "an answer for another snapshot, position or size");
        return;
    }
    if (kiq_snapshot_part_write(kiq_quorum_log_dir(q->log), q->snap.id, p->position, p->unaligned_records.p,
                                (size_t)len) != 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        fetch_failed(q, why);
        return;
    }
    q->snap.size = p->size;
    q->snap.position += len;
    kiq_raft_snapshot_progress(q->raft, kiq_quorum_now_ms());
    if (q->snap.position == q->snap.size)
        fetch_done(q);
    else
        request_chunk(q);
}

/* A channel's worker: the leader answered a FetchSnapshot (or did not). */
static void on_snapshot_answer(kiq_peer_call_t *call, int rc)
{
    snap_call_t *c = call->ctx;
    kiq_quorum_t *q = c->q;
    pthread_mutex_lock(&q->mu);
    const peer_t *from = kiq_quorum_peer_of(q, q->snap.leader);
    if (c->generation == q->snap.generation && q->snap.active && !q->stopping) {
        q->snap.in_flight = false;
        if (rc != 0 || q->paused || (from && from->cut))
            q->snap.due_ms = kiq_quorum_now_ms() + FETCH_IDLE_MS; /* lost: asked again */
        else
            take_chunk(q, call->response);
    }
    pthread_mutex_unlock(&q->mu);
    kiq_arena_reset(&c->arena);
    free(c);
}
