/* ListGroups: the groups this coordinator holds, with their states. */
#include "api/api.h"
#include "api/authorize.h"
#include "group/group_coordinator.h"

int kiq_api_list_groups_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_list_groups_response_t *out = resp;
    kiq_group_list(b->groups, r, req, resp);
    /* as Kafka: all of them with DESCRIBE on the cluster, else those the
     * principal may DESCRIBE */
    if (kiq_api_cluster_allowed(b, r, KIQ_OP_DESCRIBE)) return KIQ_HANDLER_RESPOND;
    int32_t kept = 0;
    for (int32_t i = 0; i < out->groups_n; i++)
        if (kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_GROUP, out->groups[i].group_id))
            out->groups[kept++] = out->groups[i];
    out->groups_n = kept;
    return KIQ_HANDLER_RESPOND;
}
