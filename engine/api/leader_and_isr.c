/* LeaderAndIsr (control plane): the controller tells this broker which
 * partitions it leads and which it follows, at which leader epochs. Only a
 * cluster-mode broker has replicas to move; a standalone one refuses. */
#include "api/api.h"
#include "core/say.h"
#include "replica/replica_manager.h"

/* The partitions a LeaderAndIsr names, whichever version grouped them. */
static int64_t leader_and_isr_partitions(const kiq_leader_and_isr_request_t *req)
{
    int64_t n = req->ungrouped_partition_states_n > 0 ? req->ungrouped_partition_states_n : 0;
    for (int32_t i = 0; i < req->topic_states_n; i++) n += req->topic_states[i].partition_states_n;
    return n;
}

int kiq_api_leader_and_isr_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_leader_and_isr_response_t *out = resp;
    if (!b->replicas) {
        KIQ_WARN_LIMITED("LeaderAndIsr from %s, but broker %d is not in cluster mode", r->peer, b->node_id);
        out->error_code = KIQ_ERR_INVALID_REQUEST;
        return KIQ_HANDLER_RESPOND;
    }
    kiq_replica_manager_apply_leader_and_isr(b->replicas, req, &r->arena, out);
    int64_t named = leader_and_isr_partitions(req);
    if (named > 0) kiq_broker_startup_from_controller(&b->startup, KIQ_STARTUP_REPLICATION, named);
    return KIQ_HANDLER_RESPOND;
}
