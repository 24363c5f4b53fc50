/* Vote (control plane): a candidate of the controller quorum asks this
 * voter; a broker that is no voter closes the connection, as Kafka's do. */
#include "api/api.h"
#include "controller/quorum.h"

int kiq_api_vote_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum) return KIQ_HANDLER_CLOSE;
    kiq_quorum_vote(b->quorum, req, &r->arena, resp);
    return KIQ_HANDLER_RESPOND;
}
