/* Client telemetry (KIP-714), answered as a broker with no client metrics
 * subscription answers: the client gets an instance id and an empty list
 * of requested metrics, so it never pushes, and asks again every
 * push_interval_ms; Java 3.7+ clients stay quiet, librdkafka 2.5+ too. */
#include "api/api.h"
#include "core/uuid.h"
#include "record/crc32c.h"

/* Kafka's defaults for an empty subscription. */
#define PUSH_INTERVAL_MS 300000
#define TELEMETRY_MAX_BYTES 1048576

/* Stable for a client instance, never 0: the subscription it "has". */
static int32_t subscription_of(const kiq_uuid_t *id)
{
    uint32_t h = kiq_crc32c(0, id->b, sizeof id->b);
    return (int32_t)(h ? h : 1);
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
    out->subscription_id = subscription_of(&out->client_instance_id);
    static const int8_t codecs[] = {4, 3, 1, 2}; /* zstd, lz4, gzip, snappy: Kafka's order */
    out->accepted_compression_types = (int8_t *)codecs;
    out->accepted_compression_types_n = sizeof codecs;
    out->push_interval_ms = PUSH_INTERVAL_MS;
    out->telemetry_max_bytes = TELEMETRY_MAX_BYTES;
    out->delta_temporality = true;
    out->requested_metrics_n = 0;
    return KIQ_HANDLER_RESPOND;
}

int kiq_api_push_telemetry_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_push_telemetry_request_t *req = request;
    kiq_push_telemetry_response_t *out = response;
    if (kiq_uuid_is_zero(&req->client_instance_id)) out->error_code = KIQ_ERR_INVALID_REQUEST;
    else if (req->subscription_id != subscription_of(&req->client_instance_id))
        out->error_code = KIQ_ERR_UNKNOWN_SUBSCRIPTION_ID; /* the client asks for its subscription again */
    return KIQ_HANDLER_RESPOND;
}
