/* AlterUserScramCredentials (KIP-554): credentials set from the salted
 * passwords clients send, or deleted, decided and written to the metadata
 * log by the active controller (kiq_controller_alter_scram): here when
 * this node's controller is active, else forwarded to it. ALTER on the
 * cluster is needed (else CLUSTER_AUTHORIZATION_FAILED for each user). A
 * standalone broker, with no controller quorum, answers NOT_CONTROLLER for
 * each user. */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"
#include "server/controller_link.h"

#define ALTER_WAIT_MS 30000

typedef struct forwarded_alter {
    kiq_request_t *r;
    const kiq_alter_user_scram_credentials_request_t *req;
    kiq_alter_user_scram_credentials_response_t *out;
} forwarded_alter_t;

/* One result per user named, each with code and message. */
static void refuse_all(kiq_request_t *r, const kiq_alter_user_scram_credentials_request_t *req,
                       kiq_alter_user_scram_credentials_response_t *out, int16_t code, const char *why)
{
    int nd = req->deletions_n > 0 ? req->deletions_n : 0, nu = req->upsertions_n > 0 ? req->upsertions_n : 0;
    out->results = kiq_arena_calloc(&r->arena, (size_t)(nd + nu) + 1, sizeof *out->results);
    out->results_n = 0;
    for (int i = 0; i < nd + nu; i++) {
        kiq_str_t user = i < nd ? req->deletions[i].name : req->upsertions[i - nd].name;
        bool seen = false;
        for (int j = 0; j < out->results_n; j++)
            seen |= out->results[j].user.len == user.len && memcmp(out->results[j].user.p, user.p, (size_t)user.len) == 0;
        if (seen) continue;
        kiq_alter_user_scram_credentials_response_results_t *o = &out->results[out->results_n++];
        kiq_alter_user_scram_credentials_response_results_init(o);
        o->user = user;
        o->error_code = code;
        if (why) o->error_message = kiq_request_str(r, why);
    }
}

static void decided(void *ctx)
{
    forwarded_alter_t *f = ctx;
    /* no results: the controller was not reached */
    if (f->out->results_n <= 0 && (f->req->deletions_n > 0 || f->req->upsertions_n > 0))
        refuse_all(f->r, f->req, f->out, KIQ_ERR_REQUEST_TIMED_OUT, "the controller did not answer");
    kiq_request_respond(f->r, f->out);
}

int kiq_api_alter_user_scram_credentials_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_user_scram_credentials_request_t *req = request;
    kiq_alter_user_scram_credentials_response_t *out = response;
    /* as Kafka: ALTER on the cluster */
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER)) {
        refuse_all(r, req, out, KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED, NULL);
        return KIQ_HANDLER_RESPOND;
    }
    if (r->listener == KIQ_LISTENER_CONTROL || !b->cluster) {
        /* forwarded here, or a node that is its own quorum */
        if (b->controller) kiq_controller_alter_scram(b->controller, req, &r->arena, out);
        else refuse_all(r, req, out, KIQ_ERR_NOT_CONTROLLER, "SCRAM credentials are kept by a controller quorum: this node hosts none");
        return KIQ_HANDLER_RESPOND;
    }
    forwarded_alter_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
    *f = (forwarded_alter_t){r, req, out};
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_whole(b, KIQ_API_ALTER_USER_SCRAM_CREDENTIALS, req, ALTER_WAIT_MS, &r->arena, out, decided, f);
    return KIQ_HANDLER_PARKED;
}
