/* DescribeQuorum: the quorum's leader, epoch, high watermark and each
 * voter's place, as kafka-metadata-quorum shows them. A voter's control
 * plane answers for itself (one that does not lead says who does); a
 * broker's client listener hands it to the active controller, as
 * Kafka's brokers do for --bootstrap-server. */
#include "api/api.h"
#include "controller/quorum.h"
#include "server/controller_link.h"

#define DESCRIBE_WAIT_MS 10000

typedef struct forwarded_describe {
    kiq_request_t *r;
    kiq_describe_quorum_response_t *out;
} forwarded_describe_t;

static void described(void *ctx)
{
    forwarded_describe_t *f = ctx;
    kiq_request_respond(f->r, f->out);
}

int kiq_api_describe_quorum_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    if (r->listener == KIQ_LISTENER_CONTROL && b->quorum) {
        kiq_quorum_describe(b->quorum, req, &r->arena, resp);
    } else if (r->listener != KIQ_LISTENER_CONTROL && b->cluster) {
        forwarded_describe_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
        *f = (forwarded_describe_t){r, resp};
        kiq_api_handled(b, r); /* r is the link's from here on */
        kiq_controller_link_describe_quorum(b, req, DESCRIBE_WAIT_MS, &r->arena, resp, described, f);
        return KIQ_HANDLER_PARKED;
    } else {
        ((kiq_describe_quorum_response_t *)resp)->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    return KIQ_HANDLER_RESPOND;
}
