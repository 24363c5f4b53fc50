#include "proto/header.h"

#include "proto/messages.h"

static bool is_flexible(int16_t api_key, int16_t api_version)
{
    const kiq_api_codec_t *c = kiq_api_codec(api_key);
    return c && api_version >= c->flexible_min;
}

int kiq_request_header_version(int16_t api_key, int16_t api_version)
{
    return is_flexible(api_key, api_version) ? 2 : 1;
}

int kiq_response_header_version(int16_t api_key, int16_t api_version)
{
    if (api_key == KIQ_API_API_VERSIONS) return 0;
    return is_flexible(api_key, api_version) ? 1 : 0;
}

/* Reads a tagged-field section without interpreting it: headers define no
 * tags this broker uses, but keeping them lets a header re-encode exactly. */
static kiq_tags_t read_raw_tags(kiq_rd_t *r)
{
    kiq_tags_t t = {NULL, 0, 0};
    uint32_t count = kiq_rd_uvarint(r);
    const uint8_t *start = r->p;
    for (uint32_t i = 0; i < count && !r->err; i++) {
        kiq_rd_uvarint(r);
        kiq_rd_raw(r, kiq_rd_uvarint(r));
    }
    if (!r->err) {
        t.raw = start;
        t.len = (int32_t)(r->p - start);
        t.count = (int32_t)count;
    }
    return t;
}

int kiq_request_header_decode(kiq_rd_t *r, kiq_request_header_t *h)
{
    h->api_key = kiq_rd_i16(r);
    h->api_version = kiq_rd_i16(r);
    h->correlation_id = kiq_rd_i32(r);
    h->version = (int8_t)kiq_request_header_version(h->api_key, h->api_version);
    /* client_id keeps its int16 length even in header v2 */
    h->client_id = kiq_rd_string(r, false, true);
    h->tags = (kiq_tags_t){NULL, 0, 0};
    if (h->version >= 2) h->tags = read_raw_tags(r);
    return r->err ? -1 : 0;
}

int kiq_request_header_encode(kiq_wr_t *w, const kiq_request_header_t *h)
{
    kiq_wr_i16(w, h->api_key);
    kiq_wr_i16(w, h->api_version);
    kiq_wr_i32(w, h->correlation_id);
    kiq_wr_string(w, h->client_id, false, true);
    if (h->version >= 2) {
        kiq_wr_uvarint(w, (uint32_t)h->tags.count);
        kiq_wr_raw(w, h->tags.raw, (size_t)h->tags.len);
    }
    return w->err ? -1 : 0;
}

void kiq_response_header_encode(kiq_wr_t *w, int16_t api_key, int16_t api_version,
                                int32_t correlation_id)
{
    kiq_wr_i32(w, correlation_id);
    if (kiq_response_header_version(api_key, api_version) >= 1) kiq_wr_uvarint(w, 0);
}
