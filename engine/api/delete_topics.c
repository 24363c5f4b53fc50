/* DeleteTopics: by name (v0-5) or by name or id (v6). */
#include "api/api.h"

static void delete_one(kiq_broker_t *b, kiq_request_t *r, kiq_str_t name, const kiq_uuid_t *id,
                       kiq_delete_topics_response_responses_t *out)
{
    kiq_delete_topics_response_responses_init(out);
    out->name = name;
    if (id) out->topic_id = *id;
    if (!kiq_config_bool(b->config, KIQ_CFG_DELETE_TOPIC_ENABLE)) {
        out->error_code = KIQ_ERR_TOPIC_DELETION_DISABLED;
        return;
    }
    kiq_topic_t *topic = name.p ? kiq_topics_get(b->topics, name)
                                : kiq_topics_get_by_id(b->topics, id);
    if (!topic) {
        out->error_code = name.p ? KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION : KIQ_ERR_UNKNOWN_TOPIC_ID;
        return;
    }
    out->name = kiq_api_str(r, topic->name);
    out->topic_id = topic->id;
    out->error_code = (int16_t)kiq_topics_delete(b->topics, topic);
    kiq_topic_unref(topic);
}

int kiq_api_delete_topics_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                 void *response)
{
    const kiq_delete_topics_request_t *req = request;
    kiq_delete_topics_response_t *out = response;
    bool by_struct = r->header.api_version >= 6;
    int32_t n = by_struct ? req->topics_n : req->topic_names_n;
    if (n < 0) n = 0;
    out->responses_n = n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->responses);
    for (int32_t i = 0; i < n; i++) {
        if (by_struct)
            delete_one(b, r, req->topics[i].name, &req->topics[i].topic_id, &out->responses[i]);
        else
            delete_one(b, r, req->topic_names[i], NULL, &out->responses[i]);
    }
    /* Fetches parked on a deleted topic answer UNKNOWN_TOPIC_OR_PARTITION
     * now instead of at the end of their max_wait. */
    if (n > 0) kiq_purgatory_poke(b->purgatory);
    return KIQ_HANDLER_RESPOND;
}
