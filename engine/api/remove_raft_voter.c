/* RemoveRaftVoter (KIP-853; kafka-metadata-quorum remove-controller): the
 * quorum's leader drops a voter, named by id and directory id, and
 * answers once the new set is committed (a leader that removed itself
 * then resigns). A controller's control plane asks its own quorum; a
 * broker hands it to the active controller. */
#include "api/api.h"
#include "server/controller_link.h"

int kiq_api_remove_raft_voter_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum && !b->cluster) {
        ((kiq_remove_raft_voter_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return KIQ_HANDLER_RESPOND;
    }
    void *ctx = kiq_api_park_for_link(b, r, resp);
    if (r->listener == KIQ_LISTENER_CONTROL && b->quorum)
        kiq_controller_link_change_voters(b, KIQ_API_REMOVE_RAFT_VOTER, req, &r->arena, resp, kiq_api_answer_parked,
                                          ctx);
    else
        kiq_controller_link_whole(b, KIQ_API_REMOVE_RAFT_VOTER, req, KIQ_VOTER_CHANGE_WAIT_MS, &r->arena, resp,
                                  kiq_api_answer_parked, ctx);
    return KIQ_HANDLER_PARKED;
}
