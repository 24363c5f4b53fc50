/* DescribeClientQuotas: the quotas of the entities the filter matches,
 * from the metadata image of the active controller (here, or forwarded
 * there by any broker of a cluster), or a standalone broker's own. */
#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"
#include "server/broker_quotas.h"

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
    if (b->cluster && !(r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)))
        return kiq_api_to_controller(b, r, KIQ_API_DESCRIBE_CLIENT_QUOTAS, request, DESCRIBE_WAIT_MS, out);
    if (!b->cluster) {
        kiq_broker_quotas_describe(b, request, &r->arena, out);
        return KIQ_HANDLER_RESPOND;
    }
    out->error_code = KIQ_ERR_NOT_CONTROLLER;
    out->error_message = kiq_request_str(r, "this node is not the active controller");
    out->entries_n = -1;
    return KIQ_HANDLER_RESPOND;
}
