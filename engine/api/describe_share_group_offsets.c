/* DescribeShareGroupOffsets: a share group's start offset (SPSO) on each
 * partition (KIP-932), and from v1 its lag: the records from there to the
 * high watermark not yet acknowledged or archived. The state is the
 * partition leader's (share/), read here where this broker leads the
 * partition; elsewhere, and where the group has no state (or there is no
 * such group), the start offset is -1 (Kafka's answer for a partition not
 * initialized). topics null:
 * every partition the group has state of here. */
#include <stdlib.h>
#include <string.h>

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
    if (kiq_api_share_log(b, &t->id, partition, &led) != 0) return;
    kiq_share_partition_t *sp = kiq_api_share_partition_stored(b, cfg, group, &t->id, partition);
    if (sp && sp->start >= 0) {
        pr->start_offset = sp->start;
        int64_t hw = kiq_partition_log_high_watermark(led->partitions[partition]->log);
        int64_t done = kiq_share_partition_count(sp, KIQ_SHARE_ACKNOWLEDGED) + kiq_share_partition_count(sp, KIQ_SHARE_ARCHIVED);
        pr->lag = hw > sp->start ? hw - sp->start - done : 0;
    }
    kiq_topic_unref(led);
}

int kiq_api_describe_share_group_offsets_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                                void *response)
{
    const kiq_describe_share_group_offsets_request_t *req = request;
    kiq_describe_share_group_offsets_response_t *resp = response;
    int32_t ng = req->groups_n > 0 ? req->groups_n : 0;
    resp->groups_n = ng;
    resp->groups = kiq_arena_calloc(&r->arena, (size_t)(ng ? ng : 1), sizeof *resp->groups);
    for (int32_t i = 0; i < ng; i++) {
        const kiq_describe_share_group_offsets_request_groups_t *g = &req->groups[i];
        kiq_describe_share_group_offsets_response_groups_t *gr = &resp->groups[i];
        kiq_describe_share_group_offsets_response_groups_init(gr);
        gr->group_id = g->group_id;
        /* a group of none is answered as one without state, as Kafka does */
        int16_t err = kiq_group_share_check(b->groups, g->group_id, false, false);
        if (err != KIQ_ERR_GROUP_ID_NOT_FOUND && (gr->error_code = err) != 0) continue;
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
                for (int32_t k = 0; k < tr->partitions_n; k++)
                    describe_partition(b, &cfg, g->group_id, t, tq->partitions[k], &tr->partitions[k]);
                kiq_topic_unref(t);
            }
        } else {
            int n;
            kiq_share_tp_t *tps = kiq_share_partitions_of(b->shares, g->group_id.p, g->group_id.len, &n);
            gr->topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *gr->topics);
            for (int k = 0; k < n; k++) {
                kiq_topic_t *t = kiq_topics_get_by_id(b->topics, &tps[k].topic);
                if (!t) continue;
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
    }
    return KIQ_HANDLER_RESPOND;
}
