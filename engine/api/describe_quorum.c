/* DescribeQuorum: the quorum's leader, epoch, high watermark and each
 * voter's place, as kafka-metadata-quorum shows them. A voter's control
 * plane answers for itself (one that does not lead says who does); a
 * broker's client listener hands it to the active controller, as
 * Kafka's brokers do for --bootstrap-server. */
#include "api/api.h"
#include "controller/quorum.h"

#define DESCRIBE_WAIT_MS 10000

int kiq_api_describe_quorum_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (r->listener == KIQ_LISTENER_CONTROL && b->quorum) {
        kiq_quorum_describe(b->quorum, req, &r->arena, resp);
    } else if (r->listener != KIQ_LISTENER_CONTROL && b->cluster) {
        return kiq_api_to_controller(b, r, KIQ_API_DESCRIBE_QUORUM, req, DESCRIBE_WAIT_MS, resp);
    } else {
        ((kiq_describe_quorum_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    return KIQ_HANDLER_RESPOND;
}
