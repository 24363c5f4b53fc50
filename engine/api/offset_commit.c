/* OffsetCommit: committed offsets go to __consumer_offsets, then to the
 * coordinator's cache; the answer waits until the partition's high
 * watermark passes them (at once when the coordinator is alone in the
 * ISR), so an acknowledged commit survives a coordinator failover. A
 * commit not replicated within offsets.commit.timeout.ms is answered
 * COORDINATOR_NOT_AVAILABLE, as Kafka does, and the client retries.
 * v10 names topics by id; the group's offsets stay keyed by name. */
#include <stdbool.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/replication_wait.h"
#include "group/group_coordinator.h"

static void timed_out(void *response)
{
    kiq_offset_commit_response_t *resp = response;
    for (int32_t i = 0; i < resp->topics_n; i++)
        for (int32_t j = 0; j < resp->topics[i].partitions_n; j++)
            if (!resp->topics[i].partitions[j].error_code)
                resp->topics[i].partitions[j].error_code = KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
}

/* v10: the topics whose id is known and READ allowed go to the group by
 * name; an unknown id (UNKNOWN_TOPIC_ID) or a refused topic
 * (TOPIC_AUTHORIZATION_FAILED) never reaches it and is answered ahead of
 * the others, in request order, as Kafka answers. */
static void commit_by_id(kiq_broker_t *b, kiq_request_t *r, const kiq_offset_commit_request_t *req,
                         kiq_offset_commit_response_t *resp, int32_t *partition, int64_t *need)
{
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    kiq_offset_commit_request_t named = *req;
    named.topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *named.topics);
    named.topics_n = 0;
    int16_t *err = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *err);
    for (int32_t i = 0; i < n; i++) {
        kiq_cached_topic_t t;
        if (!kiq_api_topic_view(b, r, (kiq_str_t){NULL, 0}, &req->topics[i].topic_id, &t)) {
            err[i] = KIQ_ERR_UNKNOWN_TOPIC_ID;
            continue;
        }
        kiq_str_t name = {t.name, (int32_t)t.len};
        if (!kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, name)) {
            err[i] = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        named.topics[named.topics_n] = req->topics[i];
        named.topics[named.topics_n++].name = name;
    }
    kiq_offset_commit_response_t got;
    kiq_offset_commit_response_init(&got);
    kiq_group_commit_offsets(b->groups, r, &named, &got, partition, need);
    int32_t nrefused = n - named.topics_n;
    resp->topics_n = nrefused + got.topics_n;
    resp->topics = kiq_arena_calloc(&r->arena, (size_t)(resp->topics_n ? resp->topics_n : 1), sizeof *resp->topics);
    for (int32_t i = 0, u = 0, k = nrefused; i < n; i++) {
        const kiq_offset_commit_request_topics_t *tin = &req->topics[i];
        kiq_offset_commit_response_topics_t *t = &resp->topics[err[i] ? u++ : k++];
        if (!err[i]) {
            *t = got.topics[k - 1 - nrefused];
            t->topic_id = tin->topic_id;
            continue;
        }
        kiq_offset_commit_response_topics_init(t);
        t->topic_id = tin->topic_id;
        t->partitions_n = tin->partitions_n > 0 ? tin->partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)(t->partitions_n ? t->partitions_n : 1), sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            kiq_offset_commit_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = tin->partitions[j].partition_index;
            t->partitions[j].error_code = err[i];
        }
    }
}

/* Each partition of the request answered code; nothing committed. */
static void refuse_topics(kiq_request_t *r, const kiq_offset_commit_request_topics_t *in, int32_t n,
                          kiq_offset_commit_response_topics_t *out, int16_t code)
{
    for (int32_t i = 0; i < n; i++) {
        kiq_offset_commit_response_topics_t *t = &out[i];
        kiq_offset_commit_response_topics_init(t);
        t->name = in[i].name;
        t->topic_id = in[i].topic_id;
        t->partitions_n = in[i].partitions_n > 0 ? in[i].partitions_n : 0;
        t->partitions = kiq_arena_calloc(&r->arena, (size_t)t->partitions_n + 1, sizeof *t->partitions);
        for (int32_t j = 0; j < t->partitions_n; j++) {
            kiq_offset_commit_response_topics_partitions_init(&t->partitions[j]);
            t->partitions[j].partition_index = in[i].partitions[j].partition_index;
            t->partitions[j].error_code = code;
        }
    }
}

/* As Kafka: READ on the group, else every partition is refused; then READ
 * on each topic (by name; v10's by id once resolved, commit_by_id), the
 * refused ones answered first and left out of the commit. True when the commit goes ahead with *allowed and
 * *denied topics to put in front of its answer. */
static bool authorize(kiq_broker_t *b, kiq_request_t *r, const kiq_offset_commit_request_t *req,
                      kiq_offset_commit_response_t *resp, kiq_offset_commit_request_t *allowed,
                      kiq_offset_commit_request_topics_t **denied, int32_t *ndenied)
{
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    *allowed = *req;
    *ndenied = 0;
    if (!kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_GROUP, req->group_id)) {
        resp->topics_n = n;
        resp->topics = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *resp->topics);
        refuse_topics(r, req->topics, n, resp->topics, KIQ_ERR_GROUP_AUTHORIZATION_FAILED);
        return false;
    }
    if (r->header.api_version >= 10) return true; /* by id: resolved later */
    allowed->topics = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof *allowed->topics);
    allowed->topics_n = 0;
    *denied = kiq_arena_calloc(&r->arena, (size_t)n + 1, sizeof **denied);
    for (int32_t i = 0; i < n; i++) {
        if (kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, req->topics[i].name))
            allowed->topics[allowed->topics_n++] = req->topics[i];
        else
            (*denied)[(*ndenied)++] = req->topics[i];
    }
    return true;
}

int kiq_api_offset_commit_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    int32_t partition = -1;
    int64_t need = -1;
    kiq_offset_commit_request_t allowed;
    kiq_offset_commit_request_topics_t *denied = NULL;
    int32_t ndenied = 0;
    if (!authorize(b, r, req, resp, &allowed, &denied, &ndenied)) return KIQ_HANDLER_RESPOND;
    if (r->header.api_version >= 10)
        commit_by_id(b, r, req, resp, &partition, &need);
    else
        kiq_group_commit_offsets(b->groups, r, &allowed, resp, &partition, &need);
    if (ndenied) {
        kiq_offset_commit_response_t *out = resp;
        kiq_offset_commit_response_topics_t *all =
            kiq_arena_calloc(&r->arena, (size_t)(ndenied + out->topics_n) + 1, sizeof *all);
        refuse_topics(r, denied, ndenied, all, KIQ_ERR_TOPIC_AUTHORIZATION_FAILED);
        for (int32_t i = 0; i < out->topics_n; i++) all[ndenied + i] = out->topics[i];
        out->topics = all;
        out->topics_n += ndenied;
    }
    return kiq_api_respond_when_replicated(b, r, resp, KIQ_OFFSETS_TOPIC, partition, need,
                                           kiq_config_int(b->config, KIQ_CFG_OFFSETS_COMMIT_TIMEOUT_MS), timed_out);
}
