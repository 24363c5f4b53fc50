/* DescribeTopicPartitions (KIP-966): topics and their partitions as
 * Metadata describes them, in name order and paged: at most
 * response_partition_limit partitions per answer (capped at Kafka's
 * max.request.partition.size.limit default, 2000), the next page starting
 * at next_cursor. An empty topic list means every topic; a cursor naming a
 * topic the list lacks, or a negative partition, is INVALID_REQUEST for
 * every topic named. With
 * no authorizer every operation is authorized. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "group/offsets_topic.h"
#include "controller/metadata_cache.h"

#define PARTITION_LIMIT_MAX 2000

static int cmp_names(const void *a, const void *b)
{
    const kiq_str_t *x = a, *y = b;
    int32_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, (size_t)n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Partitions from..; returns how many went in (at most room). */
static int32_t describe(kiq_broker_t *b, kiq_request_t *r, const kiq_cached_topic_t *topic, int32_t from,
                        int32_t room, kiq_describe_topic_partitions_response_topics_t *t)
{
    t->name = (kiq_str_t){topic->name, (int32_t)topic->len};
    t->topic_id = topic->id;
    t->is_internal = strcmp(topic->name, KIQ_OFFSETS_TOPIC) == 0;
    t->topic_authorized_operations = kiq_api_operations(b, r, KIQ_RES_TOPIC, t->name);
    int32_t n = topic->npartitions - from;
    if (n > room) n = room;
    if (n < 0) n = 0;
    t->partitions_n = n;
    t->partitions = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *t->partitions);
    for (int32_t i = 0; i < n; i++) {
        const kiq_cached_partition_t *c = &topic->partitions[from + i];
        kiq_describe_topic_partitions_response_topics_partitions_t *p = &t->partitions[i];
        kiq_describe_topic_partitions_response_topics_partitions_init(p);
        KIQ_API_FILL_PARTITION(p, r, c, from + i);
        /* no eligible leader replicas (KIP-966) kept: empty, as Kafka
         * answers without ELR, not null */
        p->eligible_leader_replicas_n = p->last_known_elr_n = 0;
    }
    return n;
}

int kiq_api_describe_topic_partitions_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_topic_partitions_request_t *req = request;
    kiq_describe_topic_partitions_response_t *out = response;
    int32_t limit = req->response_partition_limit < PARTITION_LIMIT_MAX ? req->response_partition_limit
                                                                        : PARTITION_LIMIT_MAX;
    if (limit < 1) limit = 1;
    /* the names asked for, sorted and without repeats; none: all topics */
    int32_t nnames = 0;
    kiq_str_t *names = kiq_arena_calloc(&r->arena, (size_t)(req->topics_n > 0 ? req->topics_n : 1), sizeof *names);
    for (int32_t i = 0; i < req->topics_n; i++)
        if (req->topics[i].name.p) names[nnames++] = req->topics[i].name;
    qsort(names, (size_t)nnames, sizeof *names, cmp_names);
    int32_t k = 0;
    for (int32_t i = 0; i < nnames; i++)
        if (k == 0 || cmp_names(&names[k - 1], &names[i]) != 0) names[k++] = names[i];
    nnames = k;
    bool cursor = !req->cursor_null;
    bool bad_cursor = cursor && req->cursor.partition_index < 0;
    if (cursor && nnames > 0 && !bad_cursor) {
        bad_cursor = true;
        for (int32_t i = 0; i < nnames && bad_cursor; i++) bad_cursor = cmp_names(&names[i], &req->cursor.topic_name) != 0;
    }
    if (bad_cursor || (cursor && !req->cursor.topic_name.p)) {
        /* as Kafka answers the request it refuses: each topic named gets the error */
        out->topics_n = nnames;
        out->topics = kiq_arena_calloc(&r->arena, (size_t)(nnames ? nnames : 1), sizeof *out->topics);
        for (int32_t i = 0; i < nnames; i++) {
            kiq_describe_topic_partitions_response_topics_init(&out->topics[i]);
            out->topics[i].name = names[i];
            out->topics[i].error_code = KIQ_ERR_INVALID_REQUEST;
        }
        return KIQ_HANDLER_RESPOND;
    }
    kiq_cached_topic_t *all = NULL;
    int nall = nnames == 0 ? kiq_api_topic_views(b, r, &all) : 0;
    int32_t ntopics = nnames ? nnames : nall;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(ntopics ? ntopics : 1), sizeof *out->topics);
    int32_t left = limit;
    for (int32_t i = 0; i < ntopics; i++) {
        kiq_cached_topic_t one;
        const kiq_cached_topic_t *topic = NULL;
        kiq_str_t name = nnames ? names[i] : (kiq_str_t){all[i].name, (int32_t)all[i].len};
        if (cursor && cmp_names(&name, &req->cursor.topic_name) < 0) continue;
        int32_t from = cursor && cmp_names(&name, &req->cursor.topic_name) == 0 ? req->cursor.partition_index : 0;
        /* as Kafka: DESCRIBE on the topic; of all topics the others are left out */
        bool allowed = kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, name);
        if (!allowed && !nnames) continue;
        if (!nnames) topic = &all[i];
        else if (kiq_api_topic_view(b, r, name, NULL, &one)) topic = &one;
        if (left == 0) {
            /* the page is full: the next one starts here */
            out->next_cursor_null = false;
            out->next_cursor.topic_name = name;
            out->next_cursor.partition_index = from;
            break;
        }
        kiq_describe_topic_partitions_response_topics_t *t = &out->topics[out->topics_n++];
        kiq_describe_topic_partitions_response_topics_init(t);
        if (!allowed) {
            t->name = name;
            t->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        if (!topic) {
            t->name = name;
            t->error_code = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        int32_t put = describe(b, r, topic, from, left, t);
        left -= put;
        if (from + put < topic->npartitions) {
            out->next_cursor_null = false;
            out->next_cursor.topic_name = name;
            out->next_cursor.partition_index = from + put;
            break;
        }
    }
    return KIQ_HANDLER_RESPOND;
}
