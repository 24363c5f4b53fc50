/* StopReplica (control plane): the controller takes partitions off this
 * broker, deleting their logs when the topic is deleted or the replica
 * moved away. Only a cluster-mode broker has replicas to stop. */
#include "api/api.h"
#include "core/say.h"
#include "replica/replica_manager.h"

int kiq_api_stop_replica_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_stop_replica_response_t *out = resp;
    if (!b->replicas) {
        KIQ_WARN_LIMITED("StopReplica from %s, but broker %d is not in cluster mode", r->peer, b->node_id);
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_replica_manager_stop_replica(b->replicas, req, &r->arena, out);
    return KIQ_HANDLER_RESPOND;
}
