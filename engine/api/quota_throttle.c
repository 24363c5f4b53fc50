/* Client quotas on the data plane, as Kafka applies them (KIP-219): when a
 * client's response is ready, what the request cost is recorded against
 * its quotas — a Produce request's bytes (producer_byte_rate), a consumer
 * Fetch response's record bytes (consumer_byte_rate), the handler's time
 * as a share of one thread (request_percentage, its throttle bounded by
 * one window) — and the response goes out at once with the longest
 * throttle in its throttle_time_ms (any API's that has one); the
 * processor then leaves the connection unread that long. Topic changes count against
 * controller_mutation_rate (KIP-599) as their handlers ask
 * (kiq_api_mutation_quota), their throttle answered in CreateTopics,
 * CreatePartitions and DeleteTopics. */
#include <string.h>

#include "api/api.h"
#include "api/quota_throttle.h"
#include "core/clock.h"
#include "core/text.h"
#include "security/sasl.h"
#include "server/quota_manager.h"

/* Kafka's principal name of the connection: the SASL user, else ANONYMOUS. */
static const char *user_of(const kiq_request_t *r)
{
    const char *p = r->sasl ? kiq_sasl_principal(r->sasl) : NULL;
    if (!p) return "ANONYMOUS";
    return strncmp(p, "User:", 5) == 0 ? p + 5 : p;
}

static double fetched_bytes(const kiq_fetch_response_t *f)
{
    double n = 0;
    for (int32_t t = 0; t < f->responses_n; t++)
        for (int32_t p = 0; p < f->responses[t].partitions_n; p++) {
            const kiq_fetch_response_responses_partitions_t *pa = &f->responses[t].partitions[p];
            if (pa->records.p) n += pa->records.len;
            if (pa->records_file)
                for (int i = 0; i < pa->records_file->n; i++) n += pa->records_file->ranges[i].length;
        }
    return n;
}

static void client_of(const kiq_request_t *r, char *client, size_t cap)
{
    kiq_str_t id = r->header.client_id;
    kiq_text_copy(client, cap, id.p ? id.p : "", id.p && id.len > 0 ? (size_t)id.len : 0);
}

static void throttle(void *ctx, kiq_request_t *r, void *response)
{
    kiq_broker_t *b = ctx;
    char client[256];
    client_of(r, client, sizeof client);
    const char *user = user_of(r);
    int64_t now = kiq_clock_mono_ms(), ms = r->throttle_ms; /* a mutation quota's, set by the handler */
    int16_t key = r->header.api_key;
    if (key == KIQ_API_PRODUCE)
        ms = kiq_quota_record(b->client_quotas, KIQ_QUOTA_PRODUCER_BYTE_RATE, user, client, (double)r->frame_len, 0, now);
    else if (key == KIQ_API_FETCH) {
        const kiq_fetch_request_t *req = r->body;
        bool follower = req && (req->replica_id >= 0 || req->replica_state.replica_id >= 0);
        if (!follower && response)
            ms = kiq_quota_record(b->client_quotas, KIQ_QUOTA_CONSUMER_BYTE_RATE, user, client,
                                  fetched_bytes(response), 0, now);
    }
    /* a request's handler time in percent of one thread (Kafka's nanosToPercentage) */
    if (r->t.handled && r->t.dequeued && r->t.handled > r->t.dequeued) {
        double pct = (double)(r->t.handled - r->t.dequeued) * 100.0 / 1e9;
        int64_t req_ms = kiq_quota_record(b->client_quotas, KIQ_QUOTA_REQUEST_PERCENTAGE, user, client, pct,
                                          kiq_quota_window_ms(b->client_quotas), now);
        if (req_ms > ms) ms = req_ms;
    }
    r->throttle_ms = ms;
    if (ms <= 0 || !response) return; /* without a response (acks=0) the mute alone says it */
    /* every response that has the field says it (the codec knows where) */
    if (r->codec->throttle_at >= 0)
        *(int32_t *)((char *)response + r->codec->throttle_at) = ms > INT32_MAX ? INT32_MAX : (int32_t)ms;
}

int16_t kiq_api_mutation_quota(kiq_broker_t *b, kiq_request_t *r, int32_t partitions, bool strict)
{
    if (r->listener != KIQ_LISTENER_DATA || partitions <= 0) return 0;
    char client[256];
    client_of(r, client, sizeof client);
    const char *user = user_of(r);
    int64_t now = kiq_clock_mono_ms(), ms = 0;
    if (strict && kiq_quota_exceeded(b->client_quotas, KIQ_QUOTA_CONTROLLER_MUTATION_RATE, user, client, now, &ms)) {
        if (ms > r->throttle_ms) r->throttle_ms = ms;
        return KIQ_ERR_THROTTLING_QUOTA_EXCEEDED;
    }
    ms = kiq_quota_record(b->client_quotas, KIQ_QUOTA_CONTROLLER_MUTATION_RATE, user, client, (double)partitions, 0,
                          now);
    if (ms > r->throttle_ms) r->throttle_ms = ms;
    return 0;
}

void kiq_api_quota_watch(kiq_broker_t *b, kiq_request_t *r)
{
    /* client requests only, and not the ones that come before a client is known */
    int16_t key = r->header.api_key;
    if (r->listener != KIQ_LISTENER_DATA || key == KIQ_API_API_VERSIONS ||
        key == KIQ_API_SASL_HANDSHAKE || key == KIQ_API_SASL_AUTHENTICATE)
        return;
    r->before_respond = throttle;
    r->before_respond_ctx = b;
}
