/* DescribeQuorum (control plane): the quorum's leader, epoch, high
 * watermark and each voter's place, as kafka-metadata-quorum shows them;
 * a voter that does not lead says who does. */
#include "api/api.h"
#include "controller/quorum.h"

int kiq_api_describe_quorum_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (!b->quorum) {
        ((kiq_describe_quorum_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_quorum_describe(b->quorum, req, &r->arena, resp);
    return KIQ_HANDLER_RESPOND;
}
