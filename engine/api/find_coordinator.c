/* FindCoordinator: this broker coordinates every group (it leads every
 * partition of __consumer_offsets, created here on first use as Kafka
 * does). Transactions are not supported: their coordinator is never
 * available. v4 asks for several keys at once. */
#include "api/api.h"
#include "group/group_coordinator.h"

enum { KEY_TYPE_GROUP = 0, KEY_TYPE_TRANSACTION = 1 };

static int16_t lookup(kiq_broker_t *b, kiq_request_t *r, int8_t key_type, kiq_str_t *message)
{
    if (key_type == KEY_TYPE_TRANSACTION) {
        *message = KIQ_STR("transactions are not supported by this broker");
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (key_type != KEY_TYPE_GROUP) {
        *message = KIQ_STR("unknown key type");
        return KIQ_ERR_INVALID_REQUEST;
    }
    int16_t err = (int16_t)kiq_group_coordinator_ensure_topic(b->groups);
    if (err) *message = kiq_api_error_message(r);
    return err ? KIQ_ERR_COORDINATOR_NOT_AVAILABLE : KIQ_ERR_NONE;
}

int kiq_api_find_coordinator_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_find_coordinator_request_t *req = request;
    kiq_find_coordinator_response_t *out = response;
    kiq_str_t host = kiq_api_str(r, b->advertised_host);
    if (r->header.api_version < 4) {
        out->error_code = lookup(b, r, req->key_type, &out->error_message);
        out->node_id = out->error_code ? -1 : b->node_id;
        out->host = out->error_code ? KIQ_STR("") : host;
        out->port = out->error_code ? -1 : b->advertised_port;
        return KIQ_HANDLER_RESPOND;
    }
    out->coordinators_n = req->coordinator_keys_n > 0 ? req->coordinator_keys_n : 0;
    out->coordinators = kiq_arena_calloc(&r->arena, (size_t)(out->coordinators_n ? out->coordinators_n : 1),
                                         sizeof *out->coordinators);
    for (int32_t i = 0; i < out->coordinators_n; i++) {
        kiq_find_coordinator_response_coordinators_t *c = &out->coordinators[i];
        kiq_find_coordinator_response_coordinators_init(c);
        c->key = req->coordinator_keys[i];
        c->error_code = lookup(b, r, req->key_type, &c->error_message);
        c->node_id = c->error_code ? -1 : b->node_id;
        c->host = c->error_code ? KIQ_STR("") : host;
        c->port = c->error_code ? -1 : b->advertised_port;
    }
    return KIQ_HANDLER_RESPOND;
}
