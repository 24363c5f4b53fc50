/* Request and response headers (PROTOCOL.md, "Framing and headers"). */
#ifndef KIQ_PROTO_HEADER_H
#define KIQ_PROTO_HEADER_H

#include "proto/reader.h"
#include "proto/writer.h"

typedef struct kiq_request_header {
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    kiq_str_t client_id;
    kiq_tags_t tags;
    int8_t version; /* 1, or 2 for flexible API versions */
} kiq_request_header_t;

/* Request header version for an API version: 2 when the version is flexible,
 * else 1 (also for api keys this build does not know). */
int kiq_request_header_version(int16_t api_key, int16_t api_version);
/* Response header version: 1 when flexible, except ApiVersions (always 0). */
int kiq_response_header_version(int16_t api_key, int16_t api_version);

int kiq_request_header_decode(kiq_rd_t *r, kiq_request_header_t *h);
int kiq_request_header_encode(kiq_wr_t *w, const kiq_request_header_t *h);
void kiq_response_header_encode(kiq_wr_t *w, int16_t api_key, int16_t api_version,
                                int32_t correlation_id);

#endif
