/* FetchSnapshot (control plane): a voter of the controller quorum whose
 * log fell behind the leader's log start copies the leader's snapshot
 * (KIP-630); a broker that is no voter closes the connection, as Kafka's
 * do. */
#include "api/api.h"
#include "controller/quorum.h"

int kiq_api_fetch_snapshot_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum) return KIQ_HANDLER_CLOSE;
    kiq_quorum_fetch_snapshot(b->quorum, req, &r->arena, resp);
    return KIQ_HANDLER_RESPOND;
}
