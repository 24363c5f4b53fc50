/* DescribeShareGroupOffsets: a share group's start offset (SPSO) on each
 * partition (KIP-932), and from v1 its lag: the records from there to the
 * high watermark not yet acknowledged or archived. The state is the
 * partition leader's (share/), read here where this broker leads the
 * partition, and in a cluster asked of the other leaders (share_fanout.h);
 * where the group has no state (or there is no such group), the start
 * offset is -1 (Kafka's answer for a partition not initialized). topics
 * null: every partition the group has state of. */
#include <stdlib.h>
#include <string.h>

#include "api/share_fanout.h"
#include "api/authorize.h"
#include "api/share_partitions.h"
#include "group/group_coordinator.h"

typedef kiq_describe_share_group_offsets_response_groups_topics_partitions_t part_resp_t;

static void describe_partition(kiq_broker_t *b, const kiq_api_share_cfg_t *cfg, kiq_str_t group, kiq_topic_t *t,
                               int32_t partition, part_resp_t *pr)
{
    kiq_describe_share_group_offsets_response_groups_topics_partitions_init(pr);
    pr->partition_index = partition;
    pr->start_offset = -1;
    pr->leader_epoch = 0; /* as Kafka answers a partition without state */
    if (!t || partition < 0 || partition >= t->npartitions) {
        pr->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        return;
    }
    kiq_topic_t *led;
    if (kiq_api_share_log(b, &t->id, partition, &led) != 0) {
        /* the leader's answer replaces it (merge), or it is cleared */
        pr->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return;
    }
    kiq_share_partition_t *sp = kiq_api_share_partition_stored(b, cfg, group, &t->id, partition);
    if (sp && sp->start >= 0) {
        pr->start_offset = sp->start;
        int64_t hw = kiq_partition_log_high_watermark(led->partitions[partition]->log);
        int64_t done = kiq_share_partition_count(sp, KIQ_SHARE_ACKNOWLEDGED) + kiq_share_partition_count(sp, KIQ_SHARE_ARCHIVED);
        pr->lag = hw > sp->start ? hw - sp->start - done : 0;
    }
    kiq_topic_unref(led);
}

typedef kiq_describe_share_group_offsets_response_t resp_t;
typedef kiq_describe_share_group_offsets_response_groups_topics_t topic_resp_t;

/* The topic of id in gr, added when missing (its partitions room for n
 * more). */
static topic_resp_t *topic_of(kiq_describe_share_group_offsets_response_groups_t *gr, const topic_resp_t *like,
                              int32_t n, kiq_arena_t *arena)
{
    for (int32_t j = 0; j < gr->topics_n; j++) {
        topic_resp_t *tr = &gr->topics[j];
        if (memcmp(tr->topic_id.b, like->topic_id.b, 16) != 0) continue;
        part_resp_t *grown = kiq_arena_calloc(arena, (size_t)(tr->partitions_n + n), sizeof *grown);
        if (tr->partitions_n) memcpy(grown, tr->partitions, (size_t)tr->partitions_n * sizeof *grown);
        tr->partitions = grown;
        return tr;
    }
    topic_resp_t *grown = kiq_arena_calloc(arena, (size_t)gr->topics_n + 1, sizeof *grown);
    if (gr->topics_n) memcpy(grown, gr->topics, (size_t)gr->topics_n * sizeof *grown);
    gr->topics = grown;
    topic_resp_t *tr = &gr->topics[gr->topics_n++];
    kiq_describe_share_group_offsets_response_groups_topics_init(tr);
    tr->topic_name.p = kiq_arena_strndup(arena, like->topic_name.p ? like->topic_name.p : "", (size_t)like->topic_name.len);
    tr->topic_name.len = like->topic_name.len;
    tr->topic_id = like->topic_id;
    tr->partitions = kiq_arena_calloc(arena, (size_t)n, sizeof *tr->partitions);
    return tr;
}

/* A leader's answers in place of the coordinator's marks, by topic id and
 * partition (added where the group's every partition was asked). */
static void merge(void *response, const void *remote, kiq_arena_t *arena)
{
    resp_t *resp = response;
    const resp_t *rem = remote;
    for (int32_t i = 0; i < resp->groups_n; i++) {
        kiq_describe_share_group_offsets_response_groups_t *gr = &resp->groups[i];
        if (!rem) {
            for (int32_t j = 0; j < gr->topics_n; j++)
                for (int32_t k = 0; k < gr->topics[j].partitions_n; k++)
                    if (gr->topics[j].partitions[k].error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER)
                        gr->topics[j].partitions[k].error_code = 0;
            continue;
        }
        if (i >= rem->groups_n || gr->error_code) continue;
        const kiq_describe_share_group_offsets_response_groups_t *rg = &rem->groups[i];
        for (int32_t j = 0; j < rg->topics_n; j++) {
            const topic_resp_t *rt = &rg->topics[j];
            int32_t fresh = 0;
            for (int32_t k = 0; k < rt->partitions_n; k++) {
                const part_resp_t *rp = &rt->partitions[k];
                if (rp->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER) continue;
                part_resp_t *mine = NULL;
                for (int32_t jj = 0; jj < gr->topics_n && !mine; jj++) {
                    topic_resp_t *tr = &gr->topics[jj];
                    if (memcmp(tr->topic_id.b, rt->topic_id.b, 16) != 0) continue;
                    for (int32_t kk = 0; kk < tr->partitions_n && !mine; kk++)
                        if (tr->partitions[kk].partition_index == rp->partition_index) mine = &tr->partitions[kk];
                }
                if (mine) {
                    if (mine->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER) *mine = *rp;
                } else {
                    fresh++;
                }
            }
            if (!fresh) continue;
            topic_resp_t *tr = topic_of(gr, rt, fresh, arena);
            for (int32_t k = 0; k < rt->partitions_n; k++) {
                const part_resp_t *rp = &rt->partitions[k];
                if (rp->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER) continue;
                bool have = false;
                for (int32_t kk = 0; kk < tr->partitions_n && !have; kk++)
                    have = tr->partitions[kk].partition_index == rp->partition_index;
                if (!have) tr->partitions[tr->partitions_n++] = *rp;
            }
        }
    }
}

int kiq_api_describe_share_group_offsets_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                                void *response)
{
    const kiq_describe_share_group_offsets_request_t *req = request;
    kiq_describe_share_group_offsets_response_t *resp = response;
    bool from_broker = kiq_api_share_from_broker(b, r);
    int32_t ng = req->groups_n > 0 ? req->groups_n : 0;
    resp->groups_n = ng;
    resp->groups = kiq_arena_calloc(&r->arena, (size_t)(ng ? ng : 1), sizeof *resp->groups);
    for (int32_t i = 0; i < ng; i++) {
        const kiq_describe_share_group_offsets_request_groups_t *g = &req->groups[i];
        kiq_describe_share_group_offsets_response_groups_t *gr = &resp->groups[i];
        kiq_describe_share_group_offsets_response_groups_init(gr);
        gr->group_id = g->group_id;
        /* a group of none is answered as one without state, as Kafka does;
         * a coordinator's ask answered as the leader */
        /* as Kafka: DESCRIBE on the group */
        if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_GROUP, g->group_id)) {
            gr->error_code = KIQ_ERR_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        int16_t err = from_broker ? 0 : kiq_group_share_check(b->groups, g->group_id, false, false);
        if (err != KIQ_ERR_GROUP_ID_NOT_FOUND && (gr->error_code = err) != 0) continue;
        /* then DESCRIBE on each topic named, asked outside the share lock:
         * a refused one's partitions answered TOPIC_AUTHORIZATION_FAILED */
        bool *denied = kiq_arena_calloc(&r->arena, (size_t)(g->topics_n > 0 ? g->topics_n : 0) + 1, sizeof *denied);
        for (int32_t j = 0; j < g->topics_n; j++)
            denied[j] = !kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, g->topics[j].topic_name);
        kiq_share_lock(b->shares);
        kiq_api_share_cfg_t cfg;
        kiq_api_share_cfg(b, g->group_id, &cfg);
        if (g->topics_n >= 0) {
            gr->topics_n = g->topics_n;
            gr->topics = kiq_arena_calloc(&r->arena, (size_t)(g->topics_n ? g->topics_n : 1), sizeof *gr->topics);
            for (int32_t j = 0; j < g->topics_n; j++) {
                const kiq_describe_share_group_offsets_request_groups_topics_t *tq = &g->topics[j];
                kiq_describe_share_group_offsets_response_groups_topics_t *tr = &gr->topics[j];
                kiq_describe_share_group_offsets_response_groups_topics_init(tr);
                tr->topic_name = tq->topic_name;
                kiq_topic_t *t = kiq_topics_get(b->topics, tq->topic_name);
                if (t) tr->topic_id = t->id;
                tr->partitions_n = tq->partitions_n > 0 ? tq->partitions_n : 0;
                tr->partitions = kiq_arena_calloc(&r->arena, (size_t)(tr->partitions_n ? tr->partitions_n : 1),
                                                  sizeof *tr->partitions);
                for (int32_t k = 0; k < tr->partitions_n; k++) {
                    if (!denied[j]) {
                        describe_partition(b, &cfg, g->group_id, t, tq->partitions[k], &tr->partitions[k]);
                        continue;
                    }
                    /* as Kafka: no id told, no offset */
                    kiq_describe_share_group_offsets_response_groups_topics_partitions_init(&tr->partitions[k]);
                    tr->partitions[k].partition_index = tq->partitions[k];
                    tr->partitions[k].start_offset = -1;
                    tr->partitions[k].error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
                    tr->topic_id = (kiq_uuid_t){{0}};
                }
                kiq_topic_unref(t);
            }
        } else {
            int n;
            kiq_share_tp_t *tps = kiq_share_partitions_of(b->shares, g->group_id.p, g->group_id.len, &n);
            gr->topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *gr->topics);
            for (int k = 0; k < n; k++) {
                kiq_topic_t *t = kiq_topics_get_by_id(b->topics, &tps[k].topic);
                if (!t) continue;
                /* deleted, or state no more */
                if (!kiq_api_share_partition_stored(b, &cfg, g->group_id, &t->id, tps[k].partition)) {
                    kiq_topic_unref(t);
                    continue;
                }
                kiq_describe_share_group_offsets_response_groups_topics_t *tr = NULL;
                for (int32_t j = 0; j < gr->topics_n && !tr; j++)
                    if (memcmp(gr->topics[j].topic_id.b, t->id.b, 16) == 0) tr = &gr->topics[j];
                if (!tr) {
                    tr = &gr->topics[gr->topics_n++];
                    kiq_describe_share_group_offsets_response_groups_topics_init(tr);
                    tr->topic_name = kiq_request_str(r, t->name);
                    tr->topic_id = t->id;
                    tr->partitions = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *tr->partitions);
                }
                describe_partition(b, &cfg, g->group_id, t, tps[k].partition, &tr->partitions[tr->partitions_n++]);
                kiq_topic_unref(t);
            }
            free(tps);
        }
        kiq_share_unlock(b->shares);
        if (g->topics_n < 0) { /* all of them: those without DESCRIBE left out */
            int32_t kept = 0;
            for (int32_t j = 0; j < gr->topics_n; j++)
                if (kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, gr->topics[j].topic_name))
                    gr->topics[kept++] = gr->topics[j];
            gr->topics_n = kept;
        }
    }
    if (from_broker) return KIQ_HANDLER_RESPOND; /* the marks are the coordinator's to read */
    bool ask = false; /* only for a group coordinated here */
    for (int32_t i = 0; i < ng && !ask; i++) ask = resp->groups[i].error_code == 0;
    if (!ask) {
        merge(response, NULL, &r->arena);
        return KIQ_HANDLER_RESPOND;
    }
    return kiq_api_share_fanout(b, r, request, response, sizeof *resp, merge);
}
