/* From a framed request to its response: decode, let request interceptors
 * have their say, run the handler, encode. Runs on I/O threads; delayed
 * requests and kiq_request_respond also on the purgatory thread. */
#include <stdio.h>
#include <stdlib.h>

#include "api/api.h"
#include "api/authorize.h"
#include "api/quota_throttle.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "server/controller_link.h"

typedef struct parked {
    kiq_request_t *r;
    void *response;
} parked_t;

void *kiq_api_park_for_link(kiq_broker_t *b, kiq_request_t *r, void *response)
{
    parked_t *p = kiq_arena_alloc(&r->arena, sizeof *p);
    *p = (parked_t){r, response};
    kiq_api_handled(b, r); /* r is the link's from here on */
    return p;
}

void kiq_api_answer_parked(void *ctx)
{
    parked_t *p = ctx;
    kiq_request_respond(p->r, p->response);
}

int kiq_api_to_controller(kiq_broker_t *b, kiq_request_t *r, int16_t api, const void *req, int wait_ms, void *out)
{
    void *ctx = kiq_api_park_for_link(b, r, out);
    kiq_controller_link_whole(b, api, req, wait_ms, &r->arena, out, kiq_api_answer_parked, ctx);
    return KIQ_HANDLER_PARKED;
}

void kiq_api_handled(kiq_broker_t *b, kiq_request_t *r)
{
    /* once: a request parked twice (waiting for producer ids, then for its
     * write to replicate) was handled at the first */
    if (r->t.handled) return;
    r->t.handled = kiq_clock_mono_ns();
    if (!kiq_observers_want(&b->observers, KIQ_POINT_HANDLED)) return;
    kiq_event_t e = kiq_event(KIQ_POINT_HANDLED, b->node_id);
    e.t_ns = r->t.handled;
    e.request = r;
    kiq_observers_emit(&b->observers, &e);
}

void kiq_api_finish(kiq_request_t *r, void *resp, int rc)
{
    switch (rc) {
    case KIQ_HANDLER_PARKED: break;
    case KIQ_HANDLER_RESPOND: kiq_request_respond(r, resp); break;
    case KIQ_HANDLER_NO_RESPONSE: kiq_request_finish(r, false); break;
    default: kiq_request_finish(r, true); break;
    }
}

static void run_handler(kiq_broker_t *b, kiq_request_t *r, void *req, void *resp, bool stamp)
{
    kiq_error_clear();
    const kiq_api_row_t *row = kiq_api_row(r->codec->key, r->listener);
    int rc;
    int16_t denied = (row->cluster_op && !kiq_api_cluster_allowed(b, r, row->cluster_op)) ||
                             (row->control_op && r->listener == KIQ_LISTENER_CONTROL &&
                              !kiq_api_cluster_allowed(b, r, row->control_op))
                         ? KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED
                     : row->txn_op && !kiq_api_allowed(b, r, row->txn_op, KIQ_RES_TRANSACTIONAL_ID, row->txn_of(req))
                         ? KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                     : row->group_op && !kiq_api_allowed(b, r, row->group_op, KIQ_RES_GROUP, row->group_of(req))
                         ? KIQ_ERR_GROUP_AUTHORIZATION_FAILED
                         : 0;
    if (denied) {
        row->deny(resp, r->header.api_version, denied);
        rc = KIQ_HANDLER_RESPOND;
    } else
        rc = row->handler(b, r, req, resp);
    /* A parked request belongs to the purgatory, which may already have
     * answered and freed it: the handler stamped it before parking. */
    if (rc == KIQ_HANDLER_PARKED) return;
    if (stamp) kiq_api_handled(b, r);
    kiq_api_finish(r, resp, rc);
}

/* Does what the interceptors decided (KIQ_HOOK_PROCEED when none spoke).
 * stamp: whether t.handled is still to be set (a delayed request set it
 * when it was parked). */
static void run_verdict(kiq_broker_t *b, kiq_request_t *r, void *req, void *resp,
                        enum kiq_hook_verdict verdict, bool stamp)
{
    switch (verdict) {
    case KIQ_HOOK_PROCEED: run_handler(b, r, req, resp, stamp); return;
    case KIQ_HOOK_DROP_AFTER:
        r->close_after = true; /* kiq_request_respond drops the answer */
        run_handler(b, r, req, resp, stamp);
        return;
    case KIQ_HOOK_DROP:
        if (stamp) kiq_api_handled(b, r);
        kiq_request_finish(r, true);
        return;
    case KIQ_HOOK_ANSWER:
        if (stamp) kiq_api_handled(b, r);
        /* acks=0 expects no answer: an error closes the connection, as the
         * produce handler does */
        if (r->codec->key == KIQ_API_PRODUCE && ((const kiq_produce_request_t *)req)->acks == 0)
            kiq_request_finish(r, true);
        else
            kiq_request_respond(r, resp);
        return;
    }
}

/* A request an interceptor delays: parked until its deadline, then the
 * verdict runs on the purgatory thread, so no I/O thread waits. Lives in
 * the request's arena. */
typedef struct delayed_request {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    void *req, *resp;
    enum kiq_hook_verdict verdict;
} delayed_request_t;

static bool delayed_try_complete(kiq_delayed_op_t *op, bool expired)
{
    if (!expired) return false;
    delayed_request_t d = *(delayed_request_t *)op; /* the arena goes with the request */
    run_verdict(d.b, d.r, d.req, d.resp, d.verdict, false);
    return true;
}

static void delay_request(kiq_broker_t *b, kiq_request_t *r, void *req, void *resp,
                          const kiq_hook_action_t *act)
{
    delayed_request_t *d = kiq_arena_alloc(&r->arena, sizeof *d);
    d->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)act->delay_ms * 1000000;
    d->op.kind = KIQ_DELAYED_REQUEST;
    d->op.try_complete = delayed_try_complete;
    d->op.keys = NULL;
    d->op.nkeys = 0; /* only its deadline */
    d->b = b;
    d->r = r;
    d->req = req;
    d->resp = resp;
    d->verdict = act->verdict;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &d->op);
}

void kiq_api_handle(kiq_broker_t *b, kiq_request_t *r)
{
    const kiq_api_codec_t *c = r->codec;
    int16_t v = r->header.api_version;
    void *req = kiq_arena_alloc(&r->arena, c->request_size);
    void *resp = kiq_arena_alloc(&r->arena, c->response_size);
    c->response_init(resp);
    if (!kiq_api_row_serves(kiq_api_row(c->key, r->listener), c, v)) {
        /* only ApiVersions gets here (admission refused the rest) */
        c->request_init(req);
    } else {
        kiq_rd_t rd;
        kiq_rd_init(&rd, r->frame + r->body_offset, r->frame_len - r->body_offset);
        if (c->request_decode(&rd, v, &r->arena, req) != 0) {
            KIQ_WARN_LIMITED("malformed %s request (api key %d, version %d) from %s at offset %zu: %s; closing",
                     c->name, c->key, v, r->peer, r->body_offset + kiq_rd_offset(&rd), rd.err);
            kiq_api_handled(b, r);
            kiq_request_finish(r, true);
            return;
        }
        /* Kafka ignores what follows a request's last field; librdkafka
         * 2.1+ leaves three stray bytes in an all-topics Metadata v12. */
        size_t trailing = kiq_rd_left(&rd);
        if (trailing) {
            KIQ_DEBUG("%s v%d from %s: %zu bytes after the last field at offset %zu ignored", c->name, v,
                      r->peer, trailing, r->body_offset + kiq_rd_offset(&rd));
            kiq_request_stats_trailing(&b->stats, c->key, trailing);
        }
    }
    r->body = req;
    kiq_api_quota_watch(b, r);
    kiq_hook_action_t act = {KIQ_HOOK_PROCEED, 0, 0};
    if (kiq_interceptors_active(&b->interceptors, KIQ_HOOK_REQUEST))
        b->interceptors.ops->on_request(b->interceptors.ctx, r, req, resp, &act);
    if (act.delay_ms > 0) {
        delay_request(b, r, req, resp, &act);
        return;
    }
    run_verdict(b, r, req, resp, act.verdict, true);
}
