/* AddRaftVoter (KIP-853; kafka-metadata-quorum add-controller): the
 * quorum's leader adds a caught-up observer to the voter set and answers
 * once the new set is committed. Served on the control plane, which
 * --bootstrap-controller reaches. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "controller/quorum.h"
#include "core/error.h"

/* A parked request waiting for the voter change's commit. */
typedef struct change_wait {
    void *parked;
    kiq_arena_t *arena;
    int16_t *error_code;
    kiq_str_t *error_message;
} change_wait_t;

static void changed(void *ctx, int16_t error)
{
    change_wait_t *w = ctx;
    *w->error_code = error;
    if (error) {
        const char *why = kiq_error_get();
        *w->error_message = (kiq_str_t){ kiq_arena_strndup(w->arena, why, strlen(why)), (int32_t)strlen(why) };
    }
    kiq_api_answer_parked(w->parked);
}

int kiq_api_add_raft_voter_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    const kiq_add_raft_voter_request_t *in = req;
    kiq_add_raft_voter_response_t *out = resp;
    if (!b->quorum) {
        out->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return KIQ_HANDLER_RESPOND;
    }
    if (in->listeners_n < 1) {
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        out->error_message = KIQ_STR("the new voter names no listener");
        return KIQ_HANDLER_RESPOND;
    }
    kiq_quorum_endpoint_t ep = { .port = in->listeners[0].port };
    snprintf(ep.name, sizeof ep.name, "%.*s", (int)in->listeners[0].name.len, in->listeners[0].name.p);
    snprintf(ep.host, sizeof ep.host, "%.*s", (int)in->listeners[0].host.len, in->listeners[0].host.p);
    change_wait_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    *w = (change_wait_t){ NULL, &r->arena, &out->error_code, &out->error_message };
    w->parked = kiq_api_park_for_link(b, r, resp);
    kiq_quorum_add_voter(b->quorum, in->voter_id, &in->voter_directory_id, &ep, in->timeout_ms, changed, w);
    return KIQ_HANDLER_PARKED;
}
