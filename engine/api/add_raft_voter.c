/* AddRaftVoter (KIP-853; kafka-metadata-quorum add-controller): the
 * quorum's leader adds a caught-up observer to the voter set and answers
 * once the new set is committed. A controller's control plane asks its
 * own quorum (--bootstrap-controller); a broker hands it to the active
 * controller (--bootstrap-server), as Kafka's brokers forward it. */
#include "api/api.h"
#include "server/controller_link.h"

int kiq_api_add_raft_voter_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    const kiq_add_raft_voter_request_t *in = req;
    if (!b->quorum && !b->cluster) {
        ((kiq_add_raft_voter_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return KIQ_HANDLER_RESPOND;
    }
    void *ctx = kiq_api_park_for_link(b, r, resp);
    if (r->listener == KIQ_LISTENER_CONTROL && b->quorum)
        kiq_controller_link_change_voters(b, KIQ_API_ADD_RAFT_VOTER, req, &r->arena, resp, kiq_api_answer_parked, ctx);
    else
        kiq_controller_link_whole(b, KIQ_API_ADD_RAFT_VOTER, req, in->timeout_ms > 0 ? in->timeout_ms : KIQ_VOTER_CHANGE_WAIT_MS,
                                  &r->arena, resp, kiq_api_answer_parked, ctx);
    return KIQ_HANDLER_PARKED;
}
