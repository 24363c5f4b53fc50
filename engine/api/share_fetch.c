/* ShareFetch (KIP-932): a share group member's fetch from the partitions'
 * leader. In order: the share session step (0 opens, -1 closes, otherwise
 * the next epoch; the request's partitions join the session, forgotten
 * ones leave), the acknowledgements riding along, then records acquired
 * for the member from each partition of its session: the log is read from
 * the first available record, every available record of the batches read
 * is acquired (up to max_records, whole batches) under a lock of
 * group.share.record.lock.duration.ms, and the answer carries the batches
 * with the acquired ranges and their delivery counts; the consumer hands
 * out only those. Control batches are archived, never handed out. With
 * nothing acquired and max_wait_ms > 0 the request waits in the purgatory
 * for appends to the session's partitions, or the wait's end.
 *
 * Expired locks are given back when a fetch or acknowledgement next
 * touches the share-partition. A partition led elsewhere is answered
 * NOT_LEADER_OR_FOLLOWER with its current leader and that leader's
 * endpoint (KIP-951), as Fetch answers. */
#include <string.h>

#include "api/authorize.h"
#include "api/share_partitions.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"

typedef struct share_fetch_op {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    const kiq_share_fetch_request_t *req;
    kiq_share_fetch_response_t *resp;
    int32_t cap; /* partitions the response has room for, per topic and topics */
    int64_t copied;
    const bool *denied; /* per request topic: READ refused, kept out of the session */
    kiq_uuid_t *refused; /* topics of the session READ is refused on now (a binding removed since) */
    int nrefused;
    kiq_api_leader_nodes_t leaders; /* named in current_leader hints */
} share_fetch_op_t;

typedef kiq_share_fetch_response_responses_partitions_t part_resp_t;

/* The response's entry for the partition, added when missing. */
static part_resp_t *resp_partition(share_fetch_op_t *f, const kiq_uuid_t *topic, int32_t partition)
{
    kiq_share_fetch_response_t *resp = f->resp;
    kiq_share_fetch_response_responses_t *t = NULL;
    for (int32_t i = 0; i < resp->responses_n && !t; i++)
        if (memcmp(resp->responses[i].topic_id.b, topic->b, 16) == 0) t = &resp->responses[i];
    if (!t) {
        t = &resp->responses[resp->responses_n++];
        kiq_share_fetch_response_responses_init(t);
        t->topic_id = *topic;
        t->partitions = kiq_arena_calloc(&f->r->arena, (size_t)f->cap, sizeof *t->partitions);
    }
    for (int32_t j = 0; j < t->partitions_n; j++)
        if (t->partitions[j].partition_index == partition) return &t->partitions[j];
    part_resp_t *p = &t->partitions[t->partitions_n++];
    kiq_share_fetch_response_responses_partitions_init(p);
    p->partition_index = partition;
    p->records = (kiq_bytes_t){(const uint8_t *)"", 0};
    /* 0 and 0 but where a partition is led elsewhere: Kafka leaves the
     * struct at its defaults on success */
    return p;
}

static int64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return (int64_t)v;
}

static int32_t be32(const uint8_t *p) { return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]); }

/* RecordBatch v2: base offset (8), length (4), leader epoch (4), magic
 * (1), crc (4), attributes (2), last offset delta (4), ... */
enum { BATCH_HEADER = 61, ATTRS_AT = 21, LAST_DELTA_AT = 23, PRODUCER_ID_AT = 43, TXN_BIT = 0x10, CONTROL_BIT = 0x20 };

/* A transactional batch at base of producer pid that one of the aborted
 * transactions covers. */
static bool batch_aborted(const kiq_aborted_t *ab, size_t n, int64_t pid, int64_t base)
{
    for (size_t i = 0; i < n; i++)
        if (ab[i].producer_id == pid && ab[i].first_offset <= base && base <= ab[i].last_offset) return true;
    return false;
}

/* v2's ShareAcquireMode: 0 batch-optimized (whole batches), 1 record-limit. */
enum { ACQUIRE_RECORD_LIMIT = 1 };

/* Reads and acquires one partition of the session: how many records. */
static int acquire_partition(share_fetch_op_t *f, const kiq_api_share_cfg_t *cfg, uint64_t owner,
                             const kiq_share_tp_t *tp, int32_t *records_left, int64_t *bytes_left, int64_t now_ms)
{
    part_resp_t *pr = resp_partition(f, &tp->topic, tp->partition);
    if (pr->error_code || pr->acquired_records_n > 0) return 0;
    for (int i = 0; i < f->nrefused; i++)
        if (memcmp(f->refused[i].b, tp->topic.b, 16) == 0) {
            pr->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            return 0;
        }
    kiq_topic_t *topic;
    if ((pr->error_code = kiq_api_share_log(f->b, &tp->topic, tp->partition, &topic)) != 0) {
        if (pr->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER)
            kiq_api_share_leader(f->b, f->r, &tp->topic, tp->partition, &pr->current_leader.leader_id,
                                 &pr->current_leader.leader_epoch, &f->leaders);
        return 0;
    }
    kiq_partition_log_t *log = topic->partitions[tp->partition]->log;
    kiq_share_partition_t *sp = kiq_api_share_partition(f->b, cfg, f->req->group_id, topic, tp->partition, now_ms);
    int got = 0;
    /* read_committed: what is decided, aborted transactions' records archived as Kafka's share-partition does */
    int64_t hw = cfg->read_committed ? kiq_partition_log_last_stable_offset(log) : kiq_partition_log_high_watermark(log);
    int64_t from = sp ? kiq_share_partition_next(sp) : hw;
    if (!sp) pr->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    /* max_bytes 0 hands out nothing; past it, the next partitions wait for the next fetch */
    if (from >= hw || *records_left <= 0 || *bytes_left <= 0) goto out;
    kiq_wr_t w;
    kiq_wr_init(&w);
    int32_t limit = *bytes_left > INT32_MAX ? INT32_MAX : (int32_t)*bytes_left;
    int n = kiq_partition_log_read(log, from, limit, hw, &w);
    if (n < 0 || w.err) {
        kiq_wr_free(&w);
        pr->error_code = n == KIQ_LOG_CORRUPT ? KIQ_ERR_CORRUPT_MESSAGE : KIQ_ERR_KAFKA_STORAGE_ERROR;
        KIQ_WARN_LIMITED("share fetch %s-%d at %lld: %s", topic->name, tp->partition, (long long)from, kiq_error_get());
        goto out;
    }
    kiq_aborted_t *ab = NULL;
    size_t nab = cfg->read_committed ? kiq_partition_log_aborted(log, from, hw, &f->r->arena, &ab) : 0;
    kiq_share_ranges_t ranges = {0};
    size_t pos = 0, keep = 0;
    int64_t deadline = now_ms + cfg->lock_ms;
    while (w.len - pos >= BATCH_HEADER && *records_left > 0) {
        const uint8_t *bp = w.buf + pos;
        int64_t base = be64(bp);
        int32_t blen = be32(bp + 8);
        if (blen < BATCH_HEADER - 12 || (size_t)blen + 12 > w.len - pos) break;
        int16_t attrs = (int16_t)(bp[ATTRS_AT] << 8 | bp[ATTRS_AT + 1]);
        int64_t last = base + be32(bp + LAST_DELTA_AT);
        if (last >= hw) last = hw - 1;
        int64_t first = base > from ? base : from;
        pos += (size_t)blen + 12;
        if ((attrs & CONTROL_BIT) || ((attrs & TXN_BIT) && batch_aborted(ab, nab, be64(bp + PRODUCER_ID_AT), base))) {
            if (kiq_share_partition_archive(sp, first, last) != 0) break;
            continue;
        }
        /* whole batches, or (v2's record-limit mode) exactly max_records */
        int max = f->req->share_acquire_mode == ACQUIRE_RECORD_LIMIT ? *records_left : INT32_MAX;
        int k = kiq_share_partition_acquire(sp, first, last, max, owner, deadline, &ranges);
        if (k < 0) break;
        if (k > 0) {
            got += k;
            *records_left -= k;
            keep = pos;
        }
    }
    if (pos > 0) kiq_api_share_store(f->b, f->req->group_id, &tp->topic, tp->partition, sp);
    if (got > 0) {
        size_t len;
        uint8_t *buf = kiq_wr_steal(&w, &len);
        kiq_request_own(f->r, buf);
        pr->records = (kiq_bytes_t){buf, (int32_t)keep};
        *bytes_left -= (int64_t)keep;
        f->copied += (int64_t)keep;
        pr->acquired_records = kiq_arena_calloc(&f->r->arena, (size_t)ranges.n, sizeof *pr->acquired_records);
        pr->acquired_records_n = ranges.n;
        for (int i = 0; i < ranges.n; i++) {
            kiq_share_fetch_response_responses_partitions_acquired_records_init(&pr->acquired_records[i]);
            pr->acquired_records[i].first_offset = ranges.v[i].first;
            pr->acquired_records[i].last_offset = ranges.v[i].last;
            pr->acquired_records[i].delivery_count = ranges.v[i].deliveries;
            kiq_api_share_event(f->b, f->r, KIQ_POINT_SHARE_ACQUIRED, f->req->group_id, topic->name, tp->partition,
                                ranges.v[i].first, ranges.v[i].last, cfg->lock_ms, ranges.v[i].deliveries, 0, 0);
        }
        KIQ_DEBUG("share group " KIQ_STR_FMT ": %d records of %s-%d acquired from %lld", KIQ_STR_ARG(f->req->group_id),
                  got, topic->name, tp->partition, (long long)ranges.v[0].first);
    }
    kiq_share_ranges_free(&ranges);
    kiq_wr_free(&w);
out:
    kiq_topic_unref(topic);
    return got;
}

/* Acquires across the member's session (under the share lock); how many
 * records, or -1 when the session is gone or a partition failed (answer
 * now). */
/* As Kafka asks at each fetch: READ on each topic already in the member's
 * session, the session's topics copied under the share lock and asked
 * outside it; only where someone decides (an authorizer or a hook). */
static void check_session(share_fetch_op_t *f)
{
    kiq_broker_t *b = f->b;
    const kiq_share_fetch_request_t *req = f->req;
    if (!kiq_api_authorizing(b, f->r)) return;
    kiq_share_lock(b->shares);
    kiq_share_session_t *s = kiq_share_session_find(b->shares, req->group_id.p, req->group_id.len, req->member_id.p,
                                                    req->member_id.len);
    int n = s ? s->n : 0;
    kiq_uuid_t *ids = kiq_arena_calloc(&f->r->arena, (size_t)n + 1, sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = s->tps[i].topic;
    kiq_share_unlock(b->shares);
    f->refused = kiq_arena_calloc(&f->r->arena, (size_t)n + 1, sizeof *f->refused);
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = memcmp(ids[j].b, ids[i].b, 16) == 0;
        if (!seen && !kiq_api_share_topic_allowed(b, f->r, &ids[i])) f->refused[f->nrefused++] = ids[i];
    }
}

static int acquire_all(share_fetch_op_t *f)
{
    kiq_broker_t *b = f->b;
    const kiq_share_fetch_request_t *req = f->req;
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(b, req->group_id, &cfg);
    kiq_share_session_t *s = kiq_share_session_find(b->shares, req->group_id.p, req->group_id.len, req->member_id.p,
                                                    req->member_id.len);
    if (!s) return -1;
    int32_t records_left = req->max_records > 0 ? req->max_records : 500;
    int64_t bytes_left = req->max_bytes;
    int64_t now_ms = kiq_clock_mono_ns() / 1000000;
    int got = 0;
    bool failed = false;
    for (int i = 0; i < s->n && i < f->cap; i++) {
        got += acquire_partition(f, &cfg, s->owner, &s->tps[i], &records_left, &bytes_left, now_ms);
        failed |= resp_partition(f, &s->tps[i].topic, s->tps[i].partition)->error_code != 0;
    }
    return got > 0 ? got : failed ? -1 : 0;
}

static void share_fetch_keys(share_fetch_op_t *f)
{
    kiq_broker_t *b = f->b;
    uint64_t *keys = kiq_arena_calloc(&f->r->arena, (size_t)f->cap, sizeof *keys);
    f->op.keys = keys;
    f->op.nkeys = 0;
    kiq_share_lock(b->shares);
    kiq_share_session_t *s = kiq_share_session_find(b->shares, f->req->group_id.p, f->req->group_id.len,
                                                    f->req->member_id.p, f->req->member_id.len);
    for (int i = 0; s && i < s->n && f->op.nkeys < f->cap; i++) {
        kiq_topic_t *t = kiq_topics_get_by_id(b->topics, &s->tps[i].topic);
        if (!t) continue;
        keys[f->op.nkeys++] = kiq_purgatory_key(t->name, strlen(t->name), s->tps[i].partition);
        kiq_topic_unref(t);
    }
    kiq_share_unlock(b->shares);
}

/* The endpoints of the leaders the answer names (KIP-951). */
static void fill_endpoints(share_fetch_op_t *f)
{
    kiq_share_fetch_response_t *resp = f->resp;
    resp->node_endpoints_n = f->leaders.n;
    resp->node_endpoints = kiq_arena_calloc(&f->r->arena, (size_t)(f->leaders.n ? f->leaders.n : 1),
                                            sizeof *resp->node_endpoints);
    for (int i = 0; i < f->leaders.n; i++) {
        kiq_share_fetch_response_node_endpoints_init(&resp->node_endpoints[i]);
        resp->node_endpoints[i].node_id = f->leaders.nodes[i].id;
        resp->node_endpoints[i].host = KIQ_STR(f->leaders.nodes[i].host);
        resp->node_endpoints[i].port = f->leaders.nodes[i].port;
    }
}

static bool share_fetch_try_complete(kiq_delayed_op_t *op, bool expired)
{
    share_fetch_op_t *f = (share_fetch_op_t *)op;
    kiq_share_lock(f->b->shares);
    int got = acquire_all(f);
    kiq_share_unlock(f->b->shares);
    if (got == 0 && !expired) return false;
    fill_endpoints(f);
    f->r->response_size_hint = (size_t)f->copied + 4096;
    f->r->t.completed = kiq_clock_mono_ns();
    kiq_request_respond(f->r, f->resp); /* frees f with the request's arena */
    return true;
}

/* The acknowledgements of the request's partitions. */
static void acknowledge(share_fetch_op_t *f, uint64_t owner)
{
    const kiq_share_fetch_request_t *req = f->req;
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(f->b, req->group_id, &cfg);
    int64_t now_ms = kiq_clock_mono_ns() / 1000000;
    for (int32_t i = 0; i < req->topics_n; i++)
        for (int32_t j = 0; j < req->topics[i].partitions_n; j++) {
            const kiq_share_fetch_request_topics_partitions_t *p = &req->topics[i].partitions[j];
            if (p->acknowledgement_batches_n <= 0 || f->denied[i]) continue;
            part_resp_t *pr = resp_partition(f, &req->topics[i].topic_id, p->partition_index);
            kiq_topic_t *topic;
            if ((pr->acknowledge_error_code = kiq_api_share_log(f->b, &req->topics[i].topic_id, p->partition_index,
                                                                &topic)) != 0) {
                if (pr->acknowledge_error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER)
                    kiq_api_share_leader(f->b, f->r, &req->topics[i].topic_id, p->partition_index,
                                         &pr->current_leader.leader_id, &pr->current_leader.leader_epoch, &f->leaders);
                continue;
            }
            kiq_share_partition_t *sp = kiq_api_share_partition(f->b, &cfg, req->group_id, topic, p->partition_index,
                                                                now_ms);
            for (int32_t k = 0; k < p->acknowledgement_batches_n && !pr->acknowledge_error_code; k++) {
                const kiq_share_fetch_request_topics_partitions_acknowledgement_batches_t *ab =
                    &p->acknowledgement_batches[k];
                pr->acknowledge_error_code = sp ? kiq_api_share_ack_batch(sp, ab->first_offset, ab->last_offset,
                                                                          ab->acknowledge_types,
                                                                          ab->acknowledge_types_n, owner,
                                                                          now_ms + cfg.lock_ms)
                                                : KIQ_ERR_UNKNOWN_SERVER_ERROR;
                kiq_api_share_acknowledged(f->b, f->r, req->group_id, topic, p->partition_index, ab->first_offset, ab->last_offset,
                             ab->acknowledge_types, ab->acknowledge_types_n, pr->acknowledge_error_code, sp);
            }
            if (sp) kiq_api_share_store(f->b, req->group_id, &req->topics[i].topic_id, p->partition_index, sp);
            kiq_topic_unref(topic);
        }
}

int kiq_api_share_fetch_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_share_fetch_request_t *req = request;
    kiq_share_fetch_response_t *resp = response;
    share_fetch_op_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
    *f = (share_fetch_op_t){.b = b, .r = r, .req = req, .resp = resp};
    /* as Kafka: READ on the group (surface.lua), then on each topic; a
     * refused topic's partitions are answered TOPIC_AUTHORIZATION_FAILED,
     * neither acknowledged nor added to the session (a later fetch would
     * read them unasked) */
    bool *denied = kiq_arena_calloc(&r->arena, (size_t)(req->topics_n > 0 ? req->topics_n : 0) + 1, sizeof *denied);
    bool any_denied = false;
    for (int32_t i = 0; i < req->topics_n; i++)
        any_denied |= denied[i] = !kiq_api_share_topic_allowed(b, r, &req->topics[i].topic_id);
    f->denied = denied;
    check_session(f);
    kiq_share_lock(b->shares);
    kiq_api_share_cfg_t cfg;
    kiq_api_share_cfg(b, req->group_id, &cfg);
    resp->acquisition_lock_timeout_ms = cfg.lock_ms;
    kiq_share_session_t *s;
    int16_t err = kiq_api_share_session(b, req->group_id, req->member_id, req->share_session_epoch, true, &s);
    if (err) {
        kiq_share_unlock(b->shares);
        resp->error_code = err;
        resp->acquisition_lock_timeout_ms = 0; /* as Kafka's error answers */
        return KIQ_HANDLER_RESPOND;
    }
    bool closing = req->share_session_epoch == -1;
    int32_t cap = s->n;
    for (int32_t i = 0; i < req->topics_n; i++) {
        for (int32_t j = 0; j < req->topics[i].partitions_n && !closing && !denied[i]; j++)
            if (kiq_share_session_add(s, &req->topics[i].topic_id, req->topics[i].partitions[j].partition_index) != 0)
                err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        cap += req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
    }
    for (int32_t i = 0; i < req->forgotten_topics_data_n && !closing; i++)
        for (int32_t j = 0; j < req->forgotten_topics_data[i].partitions_n; j++)
            kiq_share_session_remove(s, &req->forgotten_topics_data[i].topic_id, req->forgotten_topics_data[i].partitions[j]);
    f->cap = cap > 0 ? cap : 1;
    resp->responses = kiq_arena_calloc(&r->arena, (size_t)f->cap, sizeof *resp->responses);
    for (int32_t i = 0; i < req->topics_n; i++)
        for (int32_t j = 0; j < req->topics[i].partitions_n && denied[i]; j++) {
            part_resp_t *pr = resp_partition(f, &req->topics[i].topic_id, req->topics[i].partitions[j].partition_index);
            pr->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            if (req->topics[i].partitions[j].acknowledgement_batches_n > 0)
                pr->acknowledge_error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    uint64_t owner = s->owner;
    acknowledge(f, owner);
    int got = 0;
    /* v2: a request that only renews locks fetches nothing */
    bool renewing = r->header.api_version >= 2 && req->is_renew_ack;
    if (closing)
        kiq_share_session_close(b->shares, req->group_id.p, req->group_id.len, req->member_id.p, req->member_id.len);
    else if (!err && !renewing)
        got = acquire_all(f);
    kiq_share_unlock(b->shares);
    resp->error_code = err;
    r->response_size_hint = (size_t)f->copied + 4096;
    if (closing || renewing || err || got != 0 || any_denied || req->max_wait_ms <= 0) {
        fill_endpoints(f);
        return KIQ_HANDLER_RESPOND;
    }
    f->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)req->max_wait_ms * 1000000;
    f->op.kind = KIQ_DELAYED_FETCH;
    f->op.try_complete = share_fetch_try_complete;
    share_fetch_keys(f);
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &f->op);
    return KIQ_HANDLER_PARKED;
}
