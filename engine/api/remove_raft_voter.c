/* RemoveRaftVoter (KIP-853; kafka-metadata-quorum remove-controller): the
 * quorum's leader drops a voter, named by id and directory id, and
 * answers once the new set is committed (a leader that removed itself
 * then resigns). Served on the control plane. */
#include <string.h>

#include "api/api.h"
#include "controller/quorum.h"
#include "core/error.h"

#define REMOVE_TIMEOUT_MS 30000

typedef struct removal {
    void *parked;
    kiq_arena_t *arena;
    kiq_remove_raft_voter_response_t *out;
} removal_t;

static void removed(void *ctx, int16_t error)
{
    removal_t *w = ctx;
    w->out->error_code = error;
    if (error) {
        const char *why = kiq_error_get();
        w->out->error_message = (kiq_str_t){ kiq_arena_strndup(w->arena, why, strlen(why)), (int32_t)strlen(why) };
    }
    kiq_api_answer_parked(w->parked);
}

int kiq_api_remove_raft_voter_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    const kiq_remove_raft_voter_request_t *in = req;
    if (!b->quorum) {
        ((kiq_remove_raft_voter_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return KIQ_HANDLER_RESPOND;
    }
    removal_t *w = kiq_arena_alloc(&r->arena, sizeof *w);
    *w = (removal_t){ NULL, &r->arena, resp };
    w->parked = kiq_api_park_for_link(b, r, resp);
    kiq_quorum_remove_voter(b->quorum, in->voter_id, &in->voter_directory_id, REMOVE_TIMEOUT_MS, removed, w);
    return KIQ_HANDLER_PARKED;
}
