/* AlterUserScramCredentials (KIP-554): credentials set from the salted
 * passwords clients send, or deleted, decided and written to the metadata
 * log by this node's active controller (kiq_controller_alter_scram), ALTER
 * on the cluster needed (else CLUSTER_AUTHORIZATION_FAILED for each user).
 * A node without a controller answers NOT_CONTROLLER for each user (not
 * forwarded yet). */
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"

int kiq_api_alter_user_scram_credentials_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_alter_user_scram_credentials_request_t *req = request;
    kiq_alter_user_scram_credentials_response_t *out = response;
    /* as Kafka: ALTER on the cluster */
    bool allowed = kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER);
    if (allowed && b->controller) {
        kiq_controller_alter_scram(b->controller, req, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    int nd = req->deletions_n > 0 ? req->deletions_n : 0, nu = req->upsertions_n > 0 ? req->upsertions_n : 0;
    out->results = kiq_arena_calloc(&r->arena, (size_t)(nd + nu) + 1, sizeof *out->results);
    for (int i = 0; i < nd + nu; i++) {
        kiq_str_t user = i < nd ? req->deletions[i].name : req->upsertions[i - nd].name;
        bool seen = false;
        for (int j = 0; j < out->results_n; j++)
            seen |= out->results[j].user.len == user.len && memcmp(out->results[j].user.p, user.p, (size_t)user.len) == 0;
        if (seen) continue;
        kiq_alter_user_scram_credentials_response_results_t *o = &out->results[out->results_n++];
        kiq_alter_user_scram_credentials_response_results_init(o);
        o->user = user;
        o->error_code = allowed ? KIQ_ERR_NOT_CONTROLLER : KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        if (allowed)
            o->error_message = kiq_request_str(r, "SCRAM credentials are kept by a controller quorum: this node hosts none");
    }
    return KIQ_HANDLER_RESPOND;
}
