/* BeginQuorumEpoch (control plane): the quorum's new leader tells this voter. */
#include "api/api.h"
#include "controller/quorum.h"

int kiq_api_begin_quorum_epoch_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum) return KIQ_HANDLER_CLOSE;
    kiq_quorum_begin_epoch(b->quorum, req, &r->arena, resp);
    return KIQ_HANDLER_RESPOND;
}
