/* UpdateFeatures: finalized feature levels changed by Kafka's rules
 * (controller/features.h), all or nothing. The controller decides; brokers
 * forward it there; a standalone broker decides itself. One error for the
 * whole request; v0-1 also list each feature named as a success when
 * there is none, and list nothing after one, as Kafka 4 does. */
#include "api/api.h"
#include "core/error.h"
#include "server/broker_features.h"
#include "server/controller_link.h"

#define UPDATE_WAIT_MAX_MS 60000

/* Each feature's success (v0-1). */
static void results(kiq_request_t *r, const kiq_update_features_request_t *req, kiq_update_features_response_t *out)
{
    if (r->header.api_version >= 2 || out->error_code || req->feature_updates_n <= 0) return;
    out->results = kiq_arena_calloc(&r->arena, (size_t)req->feature_updates_n, sizeof *out->results);
    out->results_n = req->feature_updates_n;
    for (int32_t i = 0; i < req->feature_updates_n; i++) {
        kiq_update_features_response_results_init(&out->results[i]);
        out->results[i].feature = req->feature_updates[i].feature;
    }
}

typedef struct forwarded_update {
    kiq_request_t *r;
    const kiq_update_features_request_t *req;
    kiq_update_features_response_t *out;
} forwarded_update_t;

static void decided(void *ctx)
{
    forwarded_update_t *f = ctx;
    if (f->out->error_code == KIQ_ERR_REQUEST_TIMED_OUT && !f->out->error_message.p)
        f->out->error_message = KIQ_STR("the controller did not answer");
    results(f->r, f->req, f->out);
    kiq_request_respond(f->r, f->out);
}

int kiq_api_update_features_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_update_features_request_t *req = (kiq_update_features_request_t *)request;
    kiq_update_features_response_t *out = response;
    kiq_error_clear();
    /* v0's allow_downgrade is a safe downgrade (Kafka's reading), so the
     * controller sees one form whatever version came in */
    if (r->header.api_version == 0)
        for (int32_t i = 0; i < req->feature_updates_n; i++)
            req->feature_updates[i].upgrade_type =
                req->feature_updates[i].allow_downgrade ? KIQ_FEATURE_SAFE_DOWNGRADE : KIQ_FEATURE_UPGRADE;
    if (r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)) {
        kiq_error_set("broker %d is not the active controller", b->node_id);
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
    } else if (b->cluster) {
        int wait = req->timeout_ms > 0 && req->timeout_ms < UPDATE_WAIT_MAX_MS ? req->timeout_ms : UPDATE_WAIT_MAX_MS;
        forwarded_update_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
        *f = (forwarded_update_t){r, req, out};
        kiq_api_handled(b, r); /* r is the link's from here on */
        kiq_controller_link_whole(b, KIQ_API_UPDATE_FEATURES, req, wait, &r->arena, out, decided, f);
        return KIQ_HANDLER_PARKED;
    } else {
        out->error_code = (int16_t)kiq_broker_features_update(b, req);
    }
    if (out->error_code) out->error_message = kiq_request_error_message(r);
    results(r, req, out);
    return KIQ_HANDLER_RESPOND;
}
