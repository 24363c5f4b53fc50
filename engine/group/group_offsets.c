/* Committed offsets (group_coordinator.h): OffsetCommit, OffsetFetch,
 * OffsetDelete, and their expiry after offsets.retention.minutes. */
#include "group/coordinator_internal.h"

#include "group/consumer_group.h"

/* ---- offsets ---- */

/* Kafka's rules for who may commit: a plain commit (generation < 0) only
 * to a group without members; otherwise the member of the current
 * generation (a commit during a rebalance's join phase still counts: the
 * member is giving up its partitions). */
static int16_t commit_allowed(kiq_group_t *g, const kiq_offset_commit_request_t *req, int16_t version,
                              bool *by_partition)
{
    int32_t gen = version >= 1 ? req->generation_id_or_member_epoch : -1;
    /* a commit naming a generation of a group that does not exist */
    if (!g) return gen < 0 ? KIQ_ERR_NONE : version >= 9 ? KIQ_ERR_GROUP_ID_NOT_FOUND : KIQ_ERR_ILLEGAL_GENERATION;
    if (g->state == KIQ_GROUP_DEAD) return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    /* the new consumer protocol's: the member at its current epoch, or
     * at an older one for the partitions it had then (each checked) */
    if (g->consumer) {
        int16_t err = kiq_gc_consumer_check_member(g, req->member_id, gen);
        *by_partition = err == KIQ_ERR_STALE_MEMBER_EPOCH;
        return *by_partition ? KIQ_ERR_NONE : err;
    }
    if (gen < 0 && g->state == KIQ_GROUP_EMPTY) return KIQ_ERR_NONE;
    if (g->state == KIQ_GROUP_COMPLETING_REBALANCE) return KIQ_ERR_REBALANCE_IN_PROGRESS;
    kiq_group_member_t *m;
    return kiq_gc_check_member(g, req->member_id, req->group_instance_id, gen, &m);
}

int32_t kiq_gc_partition_count(kiq_group_coordinator_t *gc, kiq_str_t name)
{
    if (!name.p) return -1;
    if (gc->b.cluster) return kiq_metadata_cache_partition_count(gc->b.metadata, name.p, (size_t)name.len);
    kiq_topic_t *topic = kiq_topics_get(gc->b.topics, name);
    int32_t n = topic ? topic->npartitions : -1;
    kiq_topic_unref(topic);
    return n;
}

void kiq_group_commit_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_offset_commit_request_t *req, kiq_offset_commit_response_t *resp,
                              int32_t *partition, int64_t *replicated_at)
{
    *replicated_at = -1;
    int16_t v = r->header.api_version;
    int64_t now = kiq_clock_wall_ms();
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(&r->arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    for (int32_t i = 0; i < resp->topics_n; i++) {
        kiq_offset_commit_response_topics_t *t = &resp->topics[i];
        kiq_offset_commit_response_topics_init(t);
        t->name = req->topics[i].name;
        t->partitions_n = req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            kiq_offset_commit_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = req->topics[i].partitions[j].partition_index;
        }
    }
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    bool by_partition = false;
    int16_t err = kiq_gc_refused(gc, req->group_id) ? KIQ_ERR_NOT_COORDINATOR
                  : !req->group_id.p ? KIQ_ERR_INVALID_GROUP_ID
                                     : commit_allowed(g, req, v, &by_partition);
    int total = 0;
    for (int32_t i = 0; i < req->topics_n; i++) total += req->topics[i].partitions_n > 0 ? req->topics[i].partitions_n : 0;
    /* a commit of nothing to a group nobody made makes none, as in Kafka */
    if (!err && !g && total == 0) {
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    if (!err && !g && !(g = kiq_gc_create_group(gc, req->group_id))) err = KIQ_ERR_UNKNOWN_SERVER_ERROR;
    if (err) {
        KIQ_DEBUG("OffsetCommit to group " KIQ_STR_FMT " by member " KIQ_STR_FMT " generation %d refused: error %d",
                  KIQ_STR_ARG(req->group_id), KIQ_STR_ARG(req->member_id), req->generation_id_or_member_epoch, err);
        for (int32_t i = 0; i < resp->topics_n; i++)
            for (int32_t j = 0; j < resp->topics[i].partitions_n; j++) resp->topics[i].partitions[j].error_code = err;
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    /* the new offsets, then one append, then the cache */
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, now);
    kiq_group_offset_t **fresh = kiq_arena_calloc(&r->arena, (size_t)(total ? total : 1), sizeof *fresh);
    int k = 0;
    for (int32_t i = 0; i < req->topics_n; i++) {
        const kiq_offset_commit_request_topics_t *tin = &req->topics[i];
        int32_t npartitions = kiq_gc_partition_count(gc, tin->name);
        for (int32_t j = 0; j < tin->partitions_n; j++, k++) {
            const kiq_offset_commit_request_topics_partitions_t *p = &tin->partitions[j];
            int16_t *perr = &resp->topics[i].partitions[j].error_code;
            kiq_group_offset_t *o;
            if (by_partition && (*perr = kiq_gc_consumer_check_commit(gc, g, req->member_id,
                                                                      req->generation_id_or_member_epoch, tin->name,
                                                                      p->partition_index)))
                continue;
            if ((*perr = kiq_gc_offset_new(gc, tin->name, npartitions, p->partition_index, p->committed_offset,
                                           p->committed_leader_epoch, p->committed_metadata, &o)))
                continue;
            o->commit_ts_ms = v == 1 && p->commit_timestamp >= 0 ? p->commit_timestamp : now;
            o->expire_ts_ms = v >= 2 && v <= 4 && req->retention_time_ms >= 0 ? o->commit_ts_ms + req->retention_time_ms : -1;
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
    if (rc != 0)
        KIQ_ERROR_LIMITED("group %s: cannot store committed offsets: %s", g->id, kiq_error_get());
    k = 0;
    for (int32_t i = 0; i < req->topics_n; i++) {
        for (int32_t j = 0; j < req->topics[i].partitions_n; j++, k++) {
            if (!fresh[k]) continue;
            if (rc != 0) {
                resp->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
                kiq_group_offset_free(fresh[k]);
            } else if (kiq_group_put_offset(g, fresh[k]) != 0) {
                kiq_group_offset_free(fresh[k]);
                resp->topics[i].partitions[j].error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            }
        }
    }
    pthread_mutex_unlock(&gc->mu);
}

int16_t kiq_gc_offset_new(kiq_group_coordinator_t *gc, kiq_str_t topic, int32_t npartitions, int32_t partition,
                          int64_t offset, int32_t leader_epoch, kiq_str_t metadata, kiq_group_offset_t **out)
{
    *out = NULL;
    if (partition < 0 || partition >= npartitions) return KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (metadata.p && metadata.len > gc->metadata_max) return KIQ_ERR_OFFSET_METADATA_TOO_LARGE;
    kiq_group_offset_t *o = calloc(1, sizeof *o);
    if (!o || !(o->topic = kiq_gc_dup_str(topic))) {
        free(o);
        return KIQ_ERR_UNKNOWN_SERVER_ERROR;
    }
    o->partition = partition;
    o->offset = offset;
    o->leader_epoch = leader_epoch;
    o->metadata = kiq_gc_copy_str(metadata);
    *out = o;
    return KIQ_ERR_NONE;
}

static void fill_fetched(kiq_request_t *r, const kiq_group_offset_t *o, int32_t partition,
                         kiq_offset_fetch_response_topics_partitions_t *out)
{
    kiq_offset_fetch_response_topics_partitions_init(out);
    out->partition_index = partition;
    out->committed_offset = o ? o->offset : -1;
    out->committed_leader_epoch = o ? o->leader_epoch : -1;
    out->metadata = KIQ_STR("");
    if (o && o->metadata.p)
        out->metadata = (kiq_str_t){kiq_arena_strndup(&r->arena, o->metadata.p, (size_t)o->metadata.len),
                                    o->metadata.len};
}

static int cmp_offsets(const void *a, const void *b)
{
    const kiq_group_offset_t *x = *(kiq_group_offset_t *const *)a, *y = *(kiq_group_offset_t *const *)b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* One group's committed offsets for the topics asked (NULL: all of them),
 * in the v0-7 layout (the v8 one has the same fields). */
static void fetch_group(kiq_group_coordinator_t *gc, kiq_request_t *r, kiq_str_t group_id,
                        const kiq_offset_fetch_request_topics_t *topics, int32_t ntopics, bool stable,
                        kiq_offset_fetch_response_topics_t **out, int32_t *nout)
{
    kiq_group_t *g = kiq_gc_find_group(gc, group_id);
    if (ntopics >= 0) {
        *nout = ntopics;
        *out = kiq_arena_calloc(&r->arena, (size_t)(ntopics ? ntopics : 1), sizeof **out);
        for (int32_t i = 0; i < ntopics; i++) {
            kiq_offset_fetch_response_topics_t *t = &(*out)[i];
            kiq_offset_fetch_response_topics_init(t);
            t->name = topics[i].name;
            t->partitions_n = topics[i].partition_indexes_n > 0 ? topics[i].partition_indexes_n : 0;
            t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
            for (int32_t j = 0; j < t->partitions_n; j++) {
                int32_t p = topics[i].partition_indexes[j];
                const kiq_group_offset_t *o =
                    g && topics[i].name.p ? kiq_group_get_offset(g, topics[i].name.p, (size_t)topics[i].name.len, p) : NULL;
                fill_fetched(r, o, p, &t->partitions[j]);
                /* require_stable (KIP-447): an offset a transaction has yet to
                 * commit or abort is not answered; the consumer retries */
                if (stable && g && topics[i].name.p &&
                    kiq_group_txn_pending(g, topics[i].name.p, (size_t)topics[i].name.len, p))
                    t->partitions[j].error_code = KIQ_ERR_UNSTABLE_OFFSET_COMMIT;
            }
        }
        return;
    }
    /* every committed offset, by topic */
    size_t n = g ? kiq_str_map_count(g->offsets) : 0;
    kiq_group_offset_t **all = kiq_arena_calloc(&r->arena, n ? n : 1, sizeof *all);
    kiq_str_map_iter_t it;
    void *val;
    size_t k = 0;
    if (g) {
        kiq_str_map_iter_init(&it, g->offsets);
        while (kiq_str_map_next(&it, NULL, NULL, &val)) all[k++] = val;
    }
    qsort(all, n, sizeof *all, cmp_offsets);
    int32_t nt = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(all[i]->topic, all[i - 1]->topic) != 0) nt++;
    *nout = nt;
    *out = kiq_arena_calloc(&r->arena, (size_t)(nt ? nt : 1), sizeof **out);
    int32_t t = -1;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(all[i]->topic, all[i - 1]->topic) != 0) {
            t++;
            kiq_offset_fetch_response_topics_init(&(*out)[t]);
            (*out)[t].name = kiq_request_str(r, all[i]->topic);
            size_t cnt = 0;
            while (i + cnt < n && strcmp(all[i + cnt]->topic, all[i]->topic) == 0) cnt++;
            (*out)[t].partitions = kiq_arena_calloc(&r->arena, cnt, sizeof *(*out)[t].partitions);
        }
        fill_fetched(r, all[i], all[i]->partition, &(*out)[t].partitions[(*out)[t].partitions_n++]);
    }
}

/* One group of a v8+ fetch: its topics in the v0-7 layout, fetched, and
 * back (v10's topic ids stay with the API layer, which named them). */
static void fetch_group_v8(kiq_group_coordinator_t *gc, kiq_request_t *r, const kiq_offset_fetch_request_groups_t *in,
                           bool stable, kiq_offset_fetch_response_groups_t *out)
{
    int32_t n = in->topics_n;
    kiq_offset_fetch_request_topics_t *topics = kiq_arena_calloc(&r->arena, (size_t)(n > 0 ? n : 1), sizeof *topics);
    for (int32_t i = 0; i < n; i++) {
        kiq_offset_fetch_request_topics_init(&topics[i]);
        topics[i].name = in->topics[i].name;
        topics[i].partition_indexes_n = in->topics[i].partition_indexes_n;
        topics[i].partition_indexes = in->topics[i].partition_indexes;
    }
    kiq_offset_fetch_response_topics_t *got;
    fetch_group(gc, r, in->group_id, topics, n, stable, &got, &out->topics_n);
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(out->topics_n ? out->topics_n : 1), sizeof *out->topics);
    for (int32_t i = 0; i < out->topics_n; i++) {
        kiq_offset_fetch_response_groups_topics_init(&out->topics[i]);
        out->topics[i].name = got[i].name;
        out->topics[i].partitions_n = got[i].partitions_n;
        /* the partitions have the same fields in both layouts */
        out->topics[i].partitions = (kiq_offset_fetch_response_groups_topics_partitions_t *)got[i].partitions;
    }
}

void kiq_group_fetch_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                             const kiq_offset_fetch_request_t *req, kiq_offset_fetch_response_t *resp)
{
    int16_t v = r->header.api_version;
    pthread_mutex_lock(&gc->mu);
    int16_t err = gc->closed ? KIQ_ERR_NOT_COORDINATOR : KIQ_ERR_NONE;
    if (v >= 8) {
        resp->groups_n = req->groups_n > 0 ? req->groups_n : 0;
        resp->groups = kiq_arena_calloc(&r->arena, (size_t)(resp->groups_n ? resp->groups_n : 1), sizeof *resp->groups);
        for (int32_t i = 0; i < resp->groups_n; i++) {
            kiq_offset_fetch_response_groups_t *og = &resp->groups[i];
            kiq_offset_fetch_response_groups_init(og);
            og->group_id = req->groups[i].group_id;
            og->error_code = err ? err : kiq_gc_refused(gc, og->group_id) ? KIQ_ERR_NOT_COORDINATOR : KIQ_ERR_NONE;
            /* v9: a member of a consumer protocol group asks at its epoch */
            kiq_group_t *g = og->error_code ? NULL : kiq_gc_find_group(gc, og->group_id);
            if (g && g->consumer && req->groups[i].member_id.p)
                og->error_code = kiq_gc_consumer_check_member(g, req->groups[i].member_id, req->groups[i].member_epoch);
            if (og->error_code) continue;
            fetch_group_v8(gc, r, &req->groups[i], req->require_stable, og);
        }
    } else {
        if (!err && kiq_gc_refused(gc, req->group_id)) err = KIQ_ERR_NOT_COORDINATOR;
        resp->error_code = err;
        if (!err)
            fetch_group(gc, r, req->group_id, req->topics, v >= 2 ? req->topics_n : (req->topics_n < 0 ? 0 : req->topics_n),
                        v >= 7 && req->require_stable, &resp->topics, &resp->topics_n);
        else
            resp->topics_n = 0;
    }
    pthread_mutex_unlock(&gc->mu);
}

_Static_assert(sizeof(kiq_offset_fetch_response_groups_topics_partitions_t) ==
                   sizeof(kiq_offset_fetch_response_topics_partitions_t),
               "OffsetFetch v8 partitions must keep the v0-7 layout");

/* Topics the members of a consumer group subscribe to: by name or regex
 * in a consumer protocol group (KIP-848), else from their
 * ConsumerProtocolSubscription for the chosen protocol. */
static bool subscribed(kiq_group_t *g, kiq_str_t topic)
{
    if (g->consumer) {
        if (!topic.p || topic.len <= 0) return false;
        char *name = kiq_gc_dup_str(topic);
        bool found = false;
        for (const kiq_cg_member_t *m = g->consumer->members; m && name && !found; m = m->next)
            found = kiq_cg_member_subscribes(m, name);
        free(name);
        return found;
    }
    if (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0) return false;
    for (kiq_group_member_t *m = g->members; m; m = m->next) {
        const kiq_group_protocol_t *p = kiq_group_member_protocol(m, g->protocol);
        if (!p || p->metadata_len < 2) continue;
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_rd_t rd;
        kiq_rd_init(&rd, p->metadata + 2, (size_t)p->metadata_len - 2);
        int16_t version = (int16_t)kiq_be16(p->metadata);
        kiq_consumer_protocol_subscription_t s;
        kiq_consumer_protocol_subscription_init(&s);
        /* newer versions only add fields at the end */
        bool found = false;
        if (version >= 0 && kiq_consumer_protocol_subscription_decode(&rd, version > 1 ? 1 : version, &a, &s) == 0)
            for (int32_t i = 0; i < s.topics_n && !found; i++)
                found = s.topics[i].len == topic.len && memcmp(s.topics[i].p, topic.p, (size_t)topic.len) == 0;
        kiq_arena_reset(&a);
        if (found) return true;
    }
    return false;
}

void kiq_group_delete_offsets(kiq_group_coordinator_t *gc, kiq_request_t *r,
                              const kiq_offset_delete_request_t *req, kiq_offset_delete_response_t *resp)
{
    pthread_mutex_lock(&gc->mu);
    kiq_group_t *g = kiq_gc_find_group(gc, req->group_id);
    if (kiq_gc_refused(gc, req->group_id)) resp->error_code = KIQ_ERR_NOT_COORDINATOR;
    else if (!g || g->state == KIQ_GROUP_DEAD) resp->error_code = KIQ_ERR_GROUP_ID_NOT_FOUND;
    else if (g->state != KIQ_GROUP_EMPTY && (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0))
        resp->error_code = KIQ_ERR_NON_EMPTY_GROUP;
    if (resp->error_code) {
        pthread_mutex_unlock(&gc->mu);
        return;
    }
    kiq_offsets_records_t rs;
    kiq_offsets_records_init(&rs, kiq_clock_wall_ms());
    resp->topics_n = req->topics_n > 0 ? req->topics_n : 0;
    resp->topics = kiq_arena_calloc(&r->arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    for (int32_t i = 0; i < resp->topics_n; i++) {
        const kiq_offset_delete_request_topics_t *tin = &req->topics[i];
        kiq_offset_delete_response_topics_t *t = &resp->topics[i];
        kiq_offset_delete_response_topics_init(t);
        t->name = tin->name;
        t->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
        bool busy = g->state != KIQ_GROUP_EMPTY && subscribed(g, tin->name);
        int32_t npartitions = kiq_gc_partition_count(gc, tin->name);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            int32_t p = tin->partitions[j].partition_index;
            kiq_offset_delete_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = p;
            if (p < 0 || p >= npartitions) {
                t->partitions[j].error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
                continue;
            }
            if (busy) {
                t->partitions[j].error_code = KIQ_ERR_GROUP_SUBSCRIBED_TO_TOPIC;
                continue;
            }
            if (!tin->name.p || !kiq_group_get_offset(g, tin->name.p, (size_t)tin->name.len, p)) continue;
            char *name = kiq_gc_dup_str(tin->name);
            if (!name || kiq_offsets_records_add_commit_tombstone(&rs, g->id, name, p) != 0)
                t->partitions[j].error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
            free(name);
        }
    }
    if (kiq_gc_append_records(gc, g, &rs) != 0) {
        KIQ_ERROR("group %s: cannot delete offsets: %s", g->id, kiq_error_get());
        resp->error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    } else {
        for (int32_t i = 0; i < resp->topics_n; i++)
            for (int32_t j = 0; j < resp->topics[i].partitions_n; j++)
                if (!resp->topics[i].partitions[j].error_code && req->topics[i].name.p)
                    kiq_group_remove_offset(g, req->topics[i].name.p, (size_t)req->topics[i].name.len,
                                            resp->topics[i].partitions[j].partition_index);
    }
    kiq_offsets_records_free(&rs);
    pthread_mutex_unlock(&gc->mu);
}

/* Offsets past offsets.retention.minutes: Kafka counts from when the group
 * became empty, or from each commit for a group that never had members. */
void kiq_gc_expire_offsets(kiq_group_coordinator_t *gc, int64_t now_ms)
{
    size_t n = kiq_str_map_count(gc->groups);
    if (!n) return;
    kiq_group_t **gs = calloc(n, sizeof *gs);
    if (!gs) return;
    size_t k = 0;
    kiq_str_map_iter_t it;
    void *val;
    kiq_str_map_iter_init(&it, gc->groups);
    while (kiq_str_map_next(&it, NULL, NULL, &val)) gs[k++] = val;
    for (size_t i = 0; i < k; i++) {
        kiq_group_t *g = gs[i];
        bool empty = g->state == KIQ_GROUP_EMPTY;
        size_t no = kiq_str_map_count(g->offsets);
        kiq_group_offset_t **expired = calloc(no + 1, sizeof *expired);
        if (!expired) continue;
        size_t ne = 0;
        kiq_str_map_iter_init(&it, g->offsets);
        while (kiq_str_map_next(&it, NULL, NULL, &val)) {
            kiq_group_offset_t *o = val;
            int64_t since = g->protocol_type ? g->state_ts_ms : o->commit_ts_ms;
            if ((o->expire_ts_ms >= 0 && now_ms >= o->expire_ts_ms) ||
                (o->expire_ts_ms < 0 && empty && now_ms - since >= gc->retention_ms))
                expired[ne++] = o;
        }
        if (ne) {
            kiq_offsets_records_t rs;
            kiq_offsets_records_init(&rs, now_ms);
            int rc = 0;
            for (size_t j = 0; j < ne && rc == 0; j++)
                rc = kiq_offsets_records_add_commit_tombstone(&rs, g->id, expired[j]->topic, expired[j]->partition);
            if (rc == 0) rc = kiq_gc_append_records(gc, g, &rs);
            kiq_offsets_records_free(&rs);
            if (rc == 0) {
                KIQ_INFO("group %s: %zu committed offsets expired", g->id, ne);
                for (size_t j = 0; j < ne; j++)
                    kiq_group_remove_offset(g, expired[j]->topic, strlen(expired[j]->topic), expired[j]->partition);
            } else {
                KIQ_ERROR("group %s: cannot expire offsets: %s", g->id, kiq_error_get());
            }
        }
        free(expired);
        if (empty && kiq_str_map_count(g->offsets) == 0 && now_ms - g->state_ts_ms >= gc->retention_ms)
            kiq_gc_delete_group(gc, g);
    }
    free(gs);
}
