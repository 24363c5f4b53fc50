/* Offsets committed in transactions (group_coordinator.h): TxnOffsetCommit
 * writes them to __consumer_offsets as a transactional batch of the
 * producer (no sequence numbers: only its epoch is checked there), keeps
 * them pending, and the transaction's marker commits or drops them. */
#include "group/coordinator_internal.h"

/* Kafka's checks of the member a transactional commit names (KIP-447,
 * v3+): none for a group without members or a commit without a
 * generation. */
static int16_t member_allowed(kiq_group_t *g, const kiq_txn_offset_commit_request_t *req, int16_t version)
{
    if (!g) return KIQ_ERR_NONE;
    if (g->state == KIQ_GROUP_DEAD) return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    if (version < 3 || req->generation_id < 0) return KIQ_ERR_NONE;
    /* a consumer protocol group's member at its current epoch; a stale
     * one is told ILLEGAL_GENERATION, as Kafka answers a transactional
     * commit (its clients know no STALE_MEMBER_EPOCH there) */
    if (g->consumer) {
        int16_t err = kiq_gc_consumer_check_member(g, req->member_id, req->generation_id);
        return err == KIQ_ERR_STALE_MEMBER_EPOCH ? KIQ_ERR_ILLEGAL_GENERATION : err;
    }
    if (g->state == KIQ_GROUP_EMPTY) return KIQ_ERR_NONE;
    kiq_group_member_t *m;
    return kiq_gc_check_member(g, req->member_id, req->group_instance_id, req->generation_id, &m);
}

static void set_all(kiq_txn_offset_commit_response_t *resp, int16_t err)
{
    for (int32_t i = 0; i < resp->topics_n; i++)
        for (int32_t j = 0; j < resp->topics[i].partitions_n; j++)
            if (!resp->topics[i].partitions[j].error_code) resp->topics[i].partitions[j].error_code = err;
}

void kiq_group_txn_commit_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                                  const kiq_txn_offset_commit_request_t *req, kiq_txn_offset_commit_response_t *resp,
                                  int32_t *partition, int64_t *replicated_at)
{
    *replicated_at = -1;
    int16_t v = r->header.api_version;
    int64_t now = kiq_clock_wall_ms();
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(&r->arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    int total = 0;
    for (int32_t i = 0; i < resp->topics_n; i++) {
        kiq_txn_offset_commit_response_topics_t *t = &resp->topics[i];
        kiq_txn_offset_commit_response_topics_init(t);
        t->name = req->topics[i].name;
        t->partitions_n = req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            kiq_txn_offset_commit_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = req->topics[i].partitions[j].partition_index;
        }
        total += t->partitions_n;
    }
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    int16_t err = kiq_gc_refused(gc, req->group_id)          ? KIQ_ERR_NOT_COORDINATOR
                  : !req->group_id.p || !req->group_id.len   ? KIQ_ERR_INVALID_GROUP_ID
                  : req->producer_id < 0 || req->producer_epoch < 0 ? KIQ_ERR_INVALID_PRODUCER_EPOCH
                                                             : member_allowed(g, req, v);
    if (!err && !g && !(g = kiq_gc_create_group(gc, req->group_id))) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (err) {
        KIQ_DEBUG("TxnOffsetCommit to group " KIQ_STR_FMT " by producer %" PRId64 " refused: error %d",
                  KIQ_STR_ARG(req->group_id), req->producer_id, err);
        set_all(resp, err);
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, now);
    kiq_batch_builder_set_producer(&rs.k.bb, req->producer_id, req->producer_epoch, -1);
    rs.k.bb.transactional = true;
    kiq_group_offset_t **fresh = kiq_arena_calloc(&r->arena, (size_t)(total ? total : 1), sizeof *fresh);
    int k = 0;
    for (int32_t i = 0; i < resp->topics_n; i++) {
        const kiq_txn_offset_commit_request_topics_t *tin = &req->topics[i];
        int32_t npartitions = kiq_gc_partition_count(gc, tin->name);
        for (int32_t j = 0; j < resp->topics[i].partitions_n; j++, k++) {
            const kiq_txn_offset_commit_request_topics_partitions_t *p = &tin->partitions[j];
            int16_t *perr = &resp->topics[i].partitions[j].error_code;
            kiq_group_offset_t *o;
            if ((*perr = kiq_gc_offset_new(gc, tin->name, npartitions, p->partition_index, p->committed_offset,
                                           p->committed_leader_epoch, p->committed_metadata, &o)))
                continue;
            o->commit_ts_ms = now;
            o->expire_ts_ms = -1;
            if (kiq_offsets_records_add_commit(&rs, g->id, o) != 0) {
                kiq_group_offset_free(o);
                *perr = KIQ_ERR_UNKNOWN_SERVER_ERROR;
                continue;
            }
            fresh[k] = o;
        }
    }
    int rc = kiq_gc_append_records(gc, g, &rs);
    if (rc == 0 && rs.last_offset >= 0) {
        *partition = g->offsets_partition;
        *replicated_at = rs.last_offset + 1;
    }
    kiq_offsets_records_free(&rs);
    /* a stale epoch: a newer producer of the transactional id fenced it */
    int16_t failed = rc == KIQ_ERR_INVALID_PRODUCER_EPOCH ? (v >= 2 ? KIQ_ERR_PRODUCER_FENCED : KIQ_ERR_INVALID_PRODUCER_EPOCH)
                                                          : KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    if (rc != 0)
        KIQ_WARN_LIMITED("group %s: cannot store the offsets of producer %" PRId64 "'s transaction: %s", g->id,
                 req->producer_id, kiq_error_get());
    k = 0;
    for (int32_t i = 0; i < resp->topics_n; i++) {
        for (int32_t j = 0; j < resp->topics[i].partitions_n; j++, k++) {
            if (!fresh[k]) continue;
            if (rc != 0) {
                resp->topics[i].partitions[j].error_code = failed;
                kiq_group_offset_free(fresh[k]);
            } else if (kiq_group_add_txn_offset(g, req->producer_id, fresh[k]) != 0) {
                kiq_group_offset_free(fresh[k]);
                resp->topics[i].partitions[j].error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            }
        }
    }
    pthread_mutex_unlock(&gc->mu);
}

void kiq_group_coordinator_txn_marker(kiq_group_coordinator_t *gc, int32_t partition, int64_t producer_id,
                                      bool commit)
{
    pthread_mutex_lock(&gc->mu);
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) {
        kiq_group_t *g = val;
        if (g->offsets_partition != partition) continue;
        int n = kiq_group_end_txn(g, producer_id, commit);
        if (n)
            KIQ_DEBUG("group %s: %d offset(s) of producer %" PRId64 "'s transaction %s", g->id, n, producer_id,
                      commit ? "committed" : "dropped");
    }
    pthread_mutex_unlock(&gc->mu);
}
