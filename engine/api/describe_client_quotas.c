/* DescribeClientQuotas: the quotas of the entities the filter matches,
 * from the metadata image of the active controller (here, or forwarded
 * there by any broker of a cluster), or a standalone broker's own. */
#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"
#include "server/broker_quotas.h"
#include "server/controller_link.h"

#define DESCRIBE_WAIT_MS 30000

int kiq_api_describe_client_quotas_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    kiq_describe_client_quotas_response_t *out = response;
    kiq_error_clear();
    /* as Kafka: DESCRIBE_CONFIGS on the cluster, asked where the client
     * sent it; refused, no entries */
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_DESCRIBE_CONFIGS)) {
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
        out->error_message = kiq_request_str(r, "Cluster authorization failed.");
        out->entries_n = -1;
        return KIQ_HANDLER_RESPOND;
    }
    if (b->cluster && !(r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b))) {
        void *ctx = kiq_api_park_for_link(b, r, out);
        kiq_controller_link_whole(b, KIQ_API_DESCRIBE_CLIENT_QUOTAS, request, DESCRIBE_WAIT_MS, &r->arena, out,
                                  kiq_api_answer_parked, ctx);
        return KIQ_HANDLER_PARKED;
    }
    if (!b->cluster) {
        kiq_broker_quotas_describe(b, request, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    out->error_code = KIQ_ERR_NOT_CONTROLLER;
    out->error_message = kiq_request_str(r, "this node is not the active controller");
    out->entries_n = -1;
    return KIQ_HANDLER_RESPOND;
}
