/* OffsetFetch: a group's committed offsets (-1 where nothing was
 * committed). v10 names topics by id; the group's offsets stay keyed by
 * name, so the ids are resolved here both ways. */
#include "api/api.h"
#include "api/authorize.h"
#include "group/group_coordinator.h"

/* v10: each id asked is given its name (an unknown one none, so nothing
 * is found for it). */
static kiq_offset_fetch_request_t *named_request(kiq_broker_t *b, kiq_request_t *r, const kiq_offset_fetch_request_t *req)
{
    kiq_offset_fetch_request_t *named = kiq_arena_alloc(&r->arena, sizeof *named);
    *named = *req;
    int32_t ng = req->groups_n > 0 ? req->groups_n : 0;
    named->groups = kiq_arena_calloc(&r->arena, (size_t)(ng ? ng : 1), sizeof *named->groups);
    for (int32_t i = 0; i < ng; i++) {
        kiq_offset_fetch_request_groups_t *g = &named->groups[i];
        *g = req->groups[i];
        if (g->topics_n <= 0) continue;
        g->topics = kiq_arena_calloc(&r->arena, (size_t)g->topics_n, sizeof *g->topics);
        for (int32_t j = 0; j < g->topics_n; j++) {
            kiq_cached_topic_t t;
            g->topics[j] = req->groups[i].topics[j];
            g->topics[j].name = kiq_api_topic_view(b, r, (kiq_str_t){NULL, 0}, &g->topics[j].topic_id, &t)
                                    ? (kiq_str_t){t.name, (int32_t)t.len}
                                    : (kiq_str_t){NULL, 0};
        }
    }
    return named;
}

/* v10's answer by id: an id asked is answered back, UNKNOWN_TOPIC_ID where
 * it named no topic; of all the group's offsets, a topic that has no id
 * any more (deleted) is left out, as Kafka leaves it. */
static void answer_ids(kiq_broker_t *b, kiq_request_t *r, const kiq_offset_fetch_request_t *named,
                       kiq_offset_fetch_response_t *resp)
{
    for (int32_t i = 0; i < resp->groups_n; i++) {
        kiq_offset_fetch_response_groups_t *g = &resp->groups[i];
        const kiq_offset_fetch_request_groups_t *asked = &named->groups[i];
        int32_t kept = 0;
        for (int32_t j = 0; j < g->topics_n; j++) {
            kiq_offset_fetch_response_groups_topics_t *t = &g->topics[j];
            if (asked->topics_n >= 0) {
                t->topic_id = asked->topics[j].topic_id;
                if (!asked->topics[j].name.p)
                    for (int32_t p = 0; p < t->partitions_n; p++) t->partitions[p].error_code = KIQ_ERR_UNKNOWN_TOPIC_ID;
            } else {
                kiq_cached_topic_t c;
                if (!kiq_api_topic_view(b, r, t->name, NULL, &c)) continue;
                t->topic_id = c.id;
            }
            g->topics[kept++] = *t;
        }
        g->topics_n = kept;
    }
}

/* One group's topics as Kafka authorizes them: a topic the principal may
 * not DESCRIBE is TOPIC_AUTHORIZATION_FAILED where it was asked for by
 * name, and left out of all the group's offsets; the count kept. */
#define AUTHORIZE_TOPICS(T, topics, n, asked_all)                                                       \
    do {                                                                                              \
        int32_t kept_ = 0;                                                                            \
        for (int32_t j_ = 0; j_ < (n); j_++) {                                                        \
            T *t_ = &(topics)[j_];                                                                    \
            if (t_->name.p && !kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, t_->name)) {     \
                if (asked_all) continue;                                                              \
                for (int32_t p_ = 0; p_ < t_->partitions_n; p_++) {                                   \
                    t_->partitions[p_].committed_offset = -1;                                         \
                    t_->partitions[p_].metadata = KIQ_STR("");                                        \
                    t_->partitions[p_].error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;               \
                }                                                                                     \
            }                                                                                         \
            (topics)[kept_++] = *t_;                                                                  \
        }                                                                                             \
        (n) = kept_;                                                                                  \
    } while (0)

/* As Kafka: DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED and no
 * offsets), then on each topic. */
static void authorize(kiq_broker_t *b, kiq_request_t *r, const kiq_offset_fetch_request_t *req,
                      kiq_offset_fetch_response_t *out)
{
    if (r->header.api_version < 8) {
        if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_GROUP, req->group_id)) {
            out->error_code = KIQ_ERR_GROUP_AUTHORIZATION_FAILED;
            out->topics_n = 0;
            return;
        }
        AUTHORIZE_TOPICS(kiq_offset_fetch_response_topics_t, out->topics, out->topics_n, req->topics_n < 0);
        return;
    }
    for (int32_t i = 0; i < out->groups_n; i++) {
        kiq_offset_fetch_response_groups_t *g = &out->groups[i];
        if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_GROUP, g->group_id)) {
            g->error_code = KIQ_ERR_GROUP_AUTHORIZATION_FAILED;
            g->topics_n = 0;
            continue;
        }
        bool asked_all = i < req->groups_n && req->groups[i].topics_n < 0;
        AUTHORIZE_TOPICS(kiq_offset_fetch_response_groups_topics_t, g->topics, g->topics_n, asked_all);
    }
}

int kiq_api_offset_fetch_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (r->header.api_version < 10) {
        kiq_group_fetch_offsets(b->groups, r, req, resp);
        authorize(b, r, req, resp);
        return KIQ_HANDLER_RESPOND;
    }
    kiq_offset_fetch_request_t *named = named_request(b, r, req);
    kiq_group_fetch_offsets(b->groups, r, named, resp);
    answer_ids(b, r, named, resp);
    authorize(b, r, named, resp);
    return KIQ_HANDLER_RESPOND;
}
