/* From a framed request to its response: decode, run the handler, encode.
 * Runs on I/O threads; kiq_api_respond also on the purgatory thread. */
#include <stdio.h>
#include <stdlib.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/log.h"

kiq_api_handler_fn kiq_api_handler(int16_t api_key)
{
    switch (api_key) {
    case KIQ_API_PRODUCE: return kiq_api_produce_handle;
    case KIQ_API_FETCH: return kiq_api_fetch_handle;
    case KIQ_API_LIST_OFFSETS: return kiq_api_list_offsets_handle;
    case KIQ_API_METADATA: return kiq_api_metadata_handle;
    case KIQ_API_API_VERSIONS: return kiq_api_versions_handle;
    case KIQ_API_CREATE_TOPICS: return kiq_api_create_topics_handle;
    case KIQ_API_DELETE_TOPICS: return kiq_api_delete_topics_handle;
    case KIQ_API_DESCRIBE_CONFIGS: return kiq_api_describe_configs_handle;
    default: return NULL;
    }
}

kiq_str_t kiq_api_str(kiq_request_t *r, const char *s)
{
    size_t n = strlen(s);
    return (kiq_str_t){kiq_arena_strndup(&r->arena, s, n), (int32_t)n};
}

kiq_str_t kiq_api_error_message(kiq_request_t *r) { return kiq_api_str(r, kiq_error_get()); }

void kiq_api_finish(kiq_request_t *r, bool close_connection)
{
    r->t.completed = kiq_clock_mono_ns();
    r->close_after = close_connection;
    kiq_processor_complete(r);
}

void kiq_api_respond(kiq_request_t *r, const void *response)
{
    int16_t v = r->header.api_version;
    /* ApiVersions answers an unsupported version as v0 (PROTOCOL.md) */
    if (r->header.api_key == KIQ_API_API_VERSIONS &&
        (v < r->codec->min_version || v > r->codec->max_version))
        v = 0;
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i32(&w, 0);
    kiq_response_header_encode(&w, r->header.api_key, v, r->header.correlation_id);
    r->codec->response_encode(&w, v, response);
    if (w.err) {
        KIQ_ERROR("%s v%d: cannot encode the response (out of memory); closing", r->codec->name, v);
        kiq_wr_free(&w);
        kiq_api_finish(r, true);
        return;
    }
    kiq_wr_patch_i32(&w, 0, (int32_t)(w.len - 4));
    r->response = kiq_wr_steal(&w, &r->response_len);
    kiq_api_finish(r, false);
}

void kiq_broker_handle(kiq_broker_t *b, kiq_request_t *r)
{
    const kiq_api_codec_t *c = r->codec;
    int16_t v = r->header.api_version;
    void *req = kiq_arena_alloc(&r->arena, c->request_size);
    void *resp = kiq_arena_alloc(&r->arena, c->response_size);
    c->response_init(resp);
    bool unsupported = v < c->min_version || v > c->max_version;
    if (unsupported) {
        /* only ApiVersions gets here (admission refused the rest) */
        c->request_init(req);
    } else {
        kiq_rd_t rd;
        kiq_rd_init(&rd, r->frame + r->body_offset, r->frame_len - r->body_offset);
        if (c->request_decode(&rd, v, &r->arena, req) != 0 || kiq_rd_left(&rd) != 0) {
            KIQ_WARN("malformed %s request (api key %d, version %d) from %s at offset %zu: %s; closing",
                     c->name, c->key, v, r->peer, r->body_offset + kiq_rd_offset(&rd),
                     rd.err ? rd.err : "trailing bytes");
            r->t.handled = kiq_clock_mono_ns();
            kiq_api_finish(r, true);
            return;
        }
    }
    r->body = req;
    kiq_error_clear();
    int rc = kiq_api_handler(c->key)(b, r, req, resp);
    /* A parked request belongs to the purgatory, which may already have
     * answered and freed it: the handler stamped it before parking. */
    if (rc == KIQ_HANDLER_PARKED) return;
    r->t.handled = kiq_clock_mono_ns();
    switch (rc) {
    case KIQ_HANDLER_RESPOND: kiq_api_respond(r, resp); break;
    case KIQ_HANDLER_NO_RESPONSE: kiq_api_finish(r, false); break;
    default: kiq_api_finish(r, true); break;
    }
}
