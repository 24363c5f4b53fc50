/* UpdateRaftVoter (KIP-853): a voter tells the quorum's leader the
 * listeners it has now and the kraft.version range it speaks; the leader
 * writes the voter set again with its new endpoint and answers once that
 * is committed. Between controllers only: a node that does not lead
 * answers NOT_LEADER_OR_FOLLOWER, naming the leader it knows. */
#include "api/api.h"
#include "server/controller_link.h"

int kiq_api_update_raft_voter_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum) {
        ((kiq_update_raft_voter_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return KIQ_HANDLER_RESPOND;
    }
    void *ctx = kiq_api_park_for_link(b, r, resp);
    kiq_controller_link_change_voters(b, KIQ_API_UPDATE_RAFT_VOTER, req, &r->arena, resp, kiq_api_answer_parked, ctx);
    return KIQ_HANDLER_PARKED;
}
