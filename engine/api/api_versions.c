/* ApiVersions: the APIs this broker serves and their version ranges. */
#include "api/api.h"

int kiq_api_api_versions_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_api_versions_response_t *out = resp;
    const kiq_api_codec_t *self = r->codec;
    int16_t v = r->header.api_version;
    if (v < self->min_version || v > self->max_version) out->error_code = KIQ_ERR_UNSUPPORTED_VERSION;
    out->api_keys = kiq_arena_calloc(&r->arena, kiq_api_codec_count, sizeof *out->api_keys);
    out->api_keys_n = 0;
    /* in key order, as Kafka lists them */
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        const kiq_api_codec_t *c = &kiq_api_codecs[i];
        const kiq_api_row_t *row = kiq_api_row(c->key, r->listener);
        if (!row) continue;
        kiq_api_versions_response_api_keys_t *k = &out->api_keys[out->api_keys_n++];
        kiq_api_versions_response_api_keys_init(k);
        k->api_key = c->key;
        k->min_version = kiq_api_row_advertised_min(row, c);
        k->max_version = c->max_version;
    }
    return KIQ_HANDLER_RESPOND;
}
