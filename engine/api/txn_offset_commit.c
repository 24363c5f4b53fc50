/* TxnOffsetCommit: a transactional producer commits its consumer group's
 * offsets inside its transaction (send_offsets_to_transaction), at the
 * group's coordinator; answered once the records are replicated, applied
 * when the transaction's marker reaches the group's partition.
 *
 * First, as Kafka's coordinators do (KIP-890), the transaction's
 * coordinator is asked whether the producer, at that epoch, has an ongoing
 * transaction holding the group's __consumer_offsets partition
 * (AddOffsetsToTxn put it there): offsets a stale or stray producer wrote
 * would wait for a marker that never comes (OffsetFetch answering
 * UNSTABLE_OFFSET_COMMIT for good). From v5 (transactions v2) the
 * coordinator adds the partition instead: no AddOffsetsToTxn comes first. */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/replication_wait.h"
#include "core/clock.h"
#include "core/coordinator_key.h"
#include "group/group_coordinator.h"
#include "log/log_names.h"
#include "server/purgatory.h"
#include "txn/txn_coordinator.h"

/* The answer takes one round trip to the transaction's coordinator. */
#define VERIFY_TIMEOUT_MS 10000

static void timed_out(void *response)
{
    kiq_txn_offset_commit_response_t *out = response;
    for (int32_t i = 0; i < out->topics_n; i++)
        for (int32_t j = 0; j < out->topics[i].partitions_n; j++)
            if (!out->topics[i].partitions[j].error_code)
                out->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

/* The topics the authorizer refused READ on, answered ahead of the
 * committed ones as Kafka answers them. */
typedef struct denied {
    kiq_txn_offset_commit_response_topics_t *topics;
    int32_t n;
} denied_t;

static int commit(kiq_broker_t *b, kiq_request_t *r, const kiq_txn_offset_commit_request_t *req,
                  kiq_txn_offset_commit_response_t *out, const denied_t *denied)
{
    int32_t partition = -1;
    int64_t need;
    kiq_group_txn_commit_offsets(b->groups, r, req, out, &partition, &need);
    if (denied->n) {
        kiq_txn_offset_commit_response_topics_t *all =
            kiq_arena_calloc(&r->arena, (size_t)(denied->n + out->topics_n) + 1, sizeof *all);
        for (int32_t i = 0; i < denied->n; i++) all[i] = denied->topics[i];
        for (int32_t i = 0; i < out->topics_n; i++) all[denied->n + i] = out->topics[i];
        out->topics = all;
        out->topics_n += denied->n;
    }
    return kiq_api_respond_when_replicated(b, r, out, KIQ_OFFSETS_TOPIC, partition, need,
                                           KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS, timed_out);
}

/* Every partition refused with err, as the coordinator's answer maps for
 * a commit: the producer fenced, the coordinator not reachable
 * (retriable), or no such transaction (TRANSACTION_ABORTABLE from v4, to a
 * client that aborts and goes on); the authorizer's refusals as they are. */
static int refuse(const kiq_txn_offset_commit_request_t *req, kiq_request_t *r,
                  kiq_txn_offset_commit_response_t *out, int16_t err)
{
    switch (err) {
    case KIQ_ERR_PRODUCER_FENCED:
    case KIQ_ERR_INVALID_PRODUCER_EPOCH: err = KIQ_ERR_INVALID_PRODUCER_EPOCH; break;
    case KIQ_ERR_NOT_COORDINATOR:
    case KIQ_ERR_COORDINATOR_NOT_AVAILABLE:
    case KIQ_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KIQ_ERR_CONCURRENT_TRANSACTIONS:
    case KIQ_ERR_REQUEST_TIMED_OUT: err = KIQ_ERR_COORDINATOR_NOT_AVAILABLE; break;
    case KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case KIQ_ERR_GROUP_AUTHORIZATION_FAILED: break; /* the authorizer's, as they are */
    default: err = r->header.api_version >= 4 ? KIQ_ERR_TRANSACTION_ABORTABLE : KIQ_ERR_INVALID_TXN_STATE; break;
    }
    out->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(out->topics_n ? out->topics_n : 1), sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_n; i++) {
        kiq_txn_offset_commit_response_topics_t *t = &out->topics[i];
        kiq_txn_offset_commit_response_topics_init(t);
        t->name = req->topics[i].name;
        t->partitions_n = req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1),
                                         sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            kiq_txn_offset_commit_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = req->topics[i].partitions[j].partition_index;
            t->partitions[j].error_code = err;
        }
    }
    return KIQ_HANDLER_RESPOND;
}

/* The verification of one commit, parked until the coordinator answers. */
typedef struct verify_op {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    const kiq_txn_offset_commit_request_t *req;  /* the authorized topics */
    const kiq_txn_offset_commit_request_t *full; /* as it came: a refusal answers all of it */
    denied_t denied;
    kiq_txn_offset_commit_response_t *out;
    kiq_topic_t *topic; /* a reference: __consumer_offsets, whose log is asked about */
    kiq_partition_log_t *log;
    int32_t partition;
    uint64_t guard;
} verify_op_t;

/* The coordinator's answer, or 0 when it is not in yet. */
static int ask(verify_op_t *v, int16_t *err)
{
    bool add = v->r->header.api_version >= 5; /* transactions v2 */
    return kiq_txn_check_partition(v->b->txns, v->req->transactional_id, v->req->producer_id,
                                   v->req->producer_epoch, KIQ_OFFSETS_TOPIC, v->partition, add, v->guard, err);
}

/* With the coordinator's answer: refused (the guard ended, so the next
 * commit asks again) or committed. */
static int answered(verify_op_t *v, int16_t err)
{
    if (err) kiq_partition_log_txn_guard_end(v->log, v->req->producer_id, v->guard);
    kiq_topic_unref(v->topic);
    return err ? refuse(v->full, v->r, v->out, err) : commit(v->b, v->r, v->req, v->out, &v->denied);
}

static bool verify_try_complete(kiq_delayed_op_t *op, bool expired)
{
    verify_op_t *v = (verify_op_t *)op;
    int16_t err;
    if (ask(v, &err) == 0) {
        if (!expired) return false;
        err = KIQ_ERR_REQUEST_TIMED_OUT;
    }
    kiq_api_finish(v->r, v->out, answered(v, err));
    return true;
}

/* READ on each topic: the refused ones answered TOPIC_AUTHORIZATION_FAILED
 * per partition into *denied, the others copied to *allowed. */
static void split(kiq_broker_t *b, kiq_request_t *r, const kiq_txn_offset_commit_request_t *req,
                  kiq_txn_offset_commit_request_t *allowed, denied_t *denied)
{
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    *allowed = *req;
    allowed->topics = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *allowed->topics);
    allowed->topics_n = 0;
    denied->topics = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *denied->topics);
    denied->n = 0;
    for (int32_t i = 0; i < n; i++) {
        const kiq_txn_offset_commit_request_topics_t *t = &req->topics[i];
        if (kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, t->name)) {
            allowed->topics[allowed->topics_n++] = *t;
            continue;
        }
        kiq_txn_offset_commit_response_topics_t *d = &denied->topics[denied->n++];
        kiq_txn_offset_commit_response_topics_init(d);
        d->name = t->name;
        d->partitions_n = t->partitions_n > 0 ? t->partitions_n : 0;
        d->partitions = kiq_arena_calloc(&r->arena, (size_t)d->partitions_n + 1, sizeof *d->partitions);
        for (int32_t j = 0; j < d->partitions_n; j++) {
            kiq_txn_offset_commit_response_topics_partitions_init(&d->partitions[j]);
            d->partitions[j].partition_index = t->partitions[j].partition_index;
            d->partitions[j].error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
    }
}

int kiq_api_txn_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_txn_offset_commit_request_t *full = request;
    kiq_txn_offset_commit_response_t *out = response;
    /* as Kafka: WRITE on the transactional id, READ on the group, then
     * READ on the topics: the authorized ones are committed, the others
     * refused; with none authorized nothing is asked of anyone */
    if (!kiq_api_allowed(b, r, KIQ_OP_WRITE, KIQ_RES_TRANSACTIONAL_ID, full->transactional_id))
        return refuse(full, r, out, KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    if (!kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_GROUP, full->group_id))
        return refuse(full, r, out, KIQ_ERR_GROUP_AUTHORIZATION_FAILED);
    kiq_txn_offset_commit_request_t *req = kiq_arena_calloc(&r->arena, 1, sizeof *req);
    denied_t denied;
    split(b, r, full, req, &denied);
    if (denied.n && !req->topics_n) {
        out->topics = denied.topics;
        out->topics_n = denied.n;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_topic_t *topic = kiq_topics_get(b->topics, KIQ_STR(KIQ_OFFSETS_TOPIC));
    int32_t partition = topic && req->group_id.p
                            ? kiq_coordinator_partition(req->group_id.p, (size_t)req->group_id.len, topic->npartitions)
                            : -1;
    kiq_partition_log_t *log = partition >= 0 ? topic->partitions[partition]->log : NULL;
    bool ongoing = false;
    verify_op_t *v = kiq_arena_calloc(&r->arena, 1, sizeof *v);
    *v = (verify_op_t){.b = b, .r = r, .req = req, .full = full, .denied = denied, .out = out, .topic = topic,
                       .log = log, .partition = partition};
    if (log && req->producer_id >= 0 && req->transactional_id.p)
        v->guard = kiq_partition_log_txn_guard(log, req->producer_id, req->producer_epoch,
                                               r->header.api_version >= 5, &ongoing);
    /* not the group's coordinator here or no producer (the group says so),
     * or its transaction already wrote here at this epoch (verified then) */
    if (!v->guard || ongoing) {
        kiq_topic_unref(topic);
        return commit(b, r, req, out, &denied);
    }
    int16_t err;
    if (ask(v, &err) == 1) return answered(v, err);
    v->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)VERIFY_TIMEOUT_MS * 1000000;
    v->op.kind = KIQ_DELAYED_COMMIT;
    v->op.try_complete = verify_try_complete;
    uint64_t *keys = kiq_arena_calloc(&r->arena, 2, sizeof *keys);
    keys[0] = kiq_purgatory_key(KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC), partition);
    /* v5: an add by the coordinator here is answered once its state is replicated */
    keys[1] = kiq_purgatory_key(KIQ_TXN_TOPIC, strlen(KIQ_TXN_TOPIC),
                                kiq_txn_coordinator_partition_of(b->txns, req->transactional_id));
    v->op.keys = keys;
    v->op.nkeys = r->header.api_version >= 5 ? 2 : 1;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &v->op);
    return KIQ_HANDLER_PARKED;
}
