/* EndQuorumEpoch (control plane): the quorum's leader steps down and names
 * who should run first. */
#include "api/api.h"
#include "controller/quorum.h"

int kiq_api_end_quorum_epoch_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum) return KIQ_HANDLER_CLOSE;
    kiq_quorum_end_epoch(b->quorum, req, &r->arena, resp);
    return KIQ_HANDLER_RESPOND;
}
