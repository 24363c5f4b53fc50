/* ListPartitionReassignments: the controller lists the reassignments in
 * progress (kiq_controller_list_reassignments); any broker forwards it
 * there. A standalone broker never reassigns: an empty list. */
#include "api/api.h"
#include "core/error.h"

#define LIST_WAIT_MAX_MS 30000

int kiq_api_list_partition_reassignments_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                                void *response)
{
    const kiq_list_partition_reassignments_request_t *req = request;
    kiq_list_partition_reassignments_response_t *out = response;
    kiq_error_clear();
    if (r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)) {
        kiq_error_set("broker %d is not the active controller", b->node_id);
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
        out->error_message = kiq_request_error_message(r);
    } else if (b->cluster) {
        int wait = req->timeout_ms > 0 && req->timeout_ms < LIST_WAIT_MAX_MS ? req->timeout_ms : LIST_WAIT_MAX_MS;
        return kiq_api_to_controller(b, r, KIQ_API_LIST_PARTITION_REASSIGNMENTS, req, wait, out);
    }
    return KIQ_HANDLER_RESPOND;
}
