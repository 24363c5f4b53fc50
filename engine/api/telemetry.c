/* Client telemetry (KIP-714): every client is offered a subscription, that
 * of the client-metrics resources matching it or else the broker's
 * kafkaiq.telemetry.metrics every kafkaiq.telemetry.push.interval.ms, so
 * the clients that push by default (Java 3.7+, librdkafka 2.5+, franz-go
 * 1.19+) do; their pushes are decoded and kept (server/client_telemetry.h).
 * Sums are asked for cumulative, so the newest push alone says them. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/uuid.h"
#include "record/compression.h"
#include "record/crc32c.h"
#include "server/client_telemetry.h"

/* Kafka's telemetry.max.bytes default; what a push may decompress to is
 * bounded too (a decompression bomb). */
#define TELEMETRY_MAX_BYTES 1048576
#define TELEMETRY_MAX_DECOMPRESSED (8 * TELEMETRY_MAX_BYTES)

static const int8_t codecs[] = {KIQ_CODEC_ZSTD, KIQ_CODEC_LZ4, KIQ_CODEC_GZIP, KIQ_CODEC_SNAPPY}; /* Kafka's order */

/* What client r's instance id is asked for: the client-metrics resources
 * whose match takes it (server/client_telemetry.h), else the broker's
 * kafkaiq.telemetry.metrics every kafkaiq.telemetry.push.interval.ms. */
typedef struct subscription {
    char metrics[1024];
    int32_t interval_ms;
} subscription_t;

static void client_id_of(const kiq_request_t *r, char *out, size_t size)
{
    snprintf(out, size, KIQ_STR_FMT, r->header.client_id.p ? r->header.client_id.len : 0,
             r->header.client_id.p ? r->header.client_id.p : "");
}

static void subscription_for(kiq_broker_t *b, kiq_request_t *r, const kiq_uuid_t *id, subscription_t *s)
{
    char instance[32], client_id[256];
    kiq_uuid_to_base64(id, instance);
    client_id_of(r, client_id, sizeof client_id);
    const char *colon = strrchr(r->peer, ':');
    kiq_client_selector_t who = {instance, client_id, "", "", r->host, colon ? colon + 1 : ""};
    if (kiq_client_telemetry_subscription(b->telemetry, &who, s->metrics, sizeof s->metrics, &s->interval_ms)) return;
    snprintf(s->metrics, sizeof s->metrics, "%s", kiq_config_str(b->config, KIQ_CFG_TELEMETRY_METRICS));
    s->interval_ms = (int32_t)kiq_config_int(b->config, KIQ_CFG_TELEMETRY_PUSH_INTERVAL_MS);
}

/* Stable for a client instance and its subscription, never 0: a client
 * whose subscription changed is told UNKNOWN_SUBSCRIPTION_ID. */
static int32_t subscription_id(const kiq_uuid_t *id, const subscription_t *s)
{
    uint32_t h = kiq_crc32c(0, id->b, sizeof id->b);
    h = kiq_crc32c(h, (const uint8_t *)s->metrics, strlen(s->metrics));
    h = kiq_crc32c(h, (const uint8_t *)&s->interval_ms, sizeof s->interval_ms);
    return (int32_t)(h ? h : 1);
}

/* The subscription's prefixes as the response lists them: "*" is all,
 * which KIP-714 spells as one empty prefix. */
static void requested_metrics(const char *list, kiq_arena_t *arena, kiq_get_telemetry_subscriptions_response_t *out)
{
    int n = *list ? 1 : 0;
    for (const char *c = list; *c; c++) n += *c == ',';
    out->requested_metrics = kiq_arena_calloc(arena, (size_t)(n ? n : 1), sizeof *out->requested_metrics);
    out->requested_metrics_n = 0;
    for (const char *c = list; *c;) {
        const char *end = strchr(c, ',');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        const char *s = c;
        c += len + (end != NULL);
        while (len && *s == ' ') s++, len--;
        while (len && s[len - 1] == ' ') len--;
        if (!len) continue;
        if (len == 1 && *s == '*') len = 0;
        out->requested_metrics[out->requested_metrics_n++] = (kiq_str_t){kiq_arena_strndup(arena, s, len), (int32_t)len};
    }
}

int kiq_api_get_telemetry_subscriptions_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                               void *response)
{
    const kiq_get_telemetry_subscriptions_request_t *req = request;
    kiq_get_telemetry_subscriptions_response_t *out = response;
    out->client_instance_id = req->client_instance_id;
    /* Java refuses a zero id: a fresh client gets a random one */
    if (kiq_uuid_is_zero(&out->client_instance_id) && kiq_uuid_random(&out->client_instance_id) != 0) {
        out->error_code = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        return KIQ_HANDLER_RESPOND;
    }
    subscription_t sub;
    subscription_for(b, r, &out->client_instance_id, &sub);
    char client_id[128];
    client_id_of(r, client_id, sizeof client_id);
    kiq_client_telemetry_asked(b->telemetry, &out->client_instance_id, client_id, r->host, kiq_clock_mono_ms());
    out->subscription_id = subscription_id(&out->client_instance_id, &sub);
    out->accepted_compression_types = (int8_t *)codecs;
    out->accepted_compression_types_n = sizeof codecs;
    out->push_interval_ms = sub.interval_ms;
    out->telemetry_max_bytes = TELEMETRY_MAX_BYTES;
    out->delta_temporality = false;
    requested_metrics(sub.metrics, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}

static bool accepted(int8_t codec)
{
    if (codec == KIQ_CODEC_NONE) return true;
    for (size_t i = 0; i < sizeof codecs; i++)
        if (codecs[i] == codec) return true;
    return false;
}

int kiq_api_push_telemetry_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_push_telemetry_request_t *req = request;
    kiq_push_telemetry_response_t *out = response;
    subscription_t sub;
    if (!kiq_uuid_is_zero(&req->client_instance_id)) subscription_for(b, r, &req->client_instance_id, &sub);
    if (kiq_uuid_is_zero(&req->client_instance_id)) {
        out->error_code = KIQ_ERR_INVALID_REQUEST;
    } else if (req->subscription_id != subscription_id(&req->client_instance_id, &sub)) {
        out->error_code = KIQ_ERR_UNKNOWN_SUBSCRIPTION_ID; /* the client asks for its subscription again */
    } else if (!req->terminating &&
               !kiq_client_telemetry_may_push(b->telemetry, &req->client_instance_id, sub.interval_ms,
                                              kiq_clock_mono_ms())) {
        out->error_code = KIQ_ERR_THROTTLING_QUOTA_EXCEEDED; /* sooner than its interval */
    } else if (!accepted(req->compression_type)) {
        out->error_code = KIQ_ERR_UNSUPPORTED_COMPRESSION_TYPE;
    } else if (req->metrics.len > TELEMETRY_MAX_BYTES) {
        out->error_code = KIQ_ERR_TELEMETRY_TOO_LARGE;
    } else {
        kiq_wr_t plain;
        kiq_wr_init(&plain);
        const uint8_t *p = req->metrics.p;
        size_t len = req->metrics.p ? (size_t)req->metrics.len : 0;
        if (req->compression_type != KIQ_CODEC_NONE) {
            if (kiq_decompress(req->compression_type, p, len, TELEMETRY_MAX_DECOMPRESSED, &plain) != 0) {
                kiq_wr_free(&plain);
                out->error_code = KIQ_ERR_INVALID_RECORD;
                return KIQ_HANDLER_RESPOND;
            }
            p = plain.buf;
            len = plain.len;
        }
        char client_id[128];
        client_id_of(r, client_id, sizeof client_id);
        if (kiq_client_telemetry_push(b->telemetry, &req->client_instance_id, client_id, r->host, req->terminating,
                                      p, len, kiq_clock_wall_ms()) != 0)
            out->error_code = KIQ_ERR_INVALID_RECORD; /* what KIP-714 answers a payload it cannot decode */
        kiq_wr_free(&plain);
    }
    return KIQ_HANDLER_RESPOND;
}
