/* DescribeCluster: the brokers clients can reach (the live ones in cluster
 * mode; DescribeCluster v2's fenced brokers are not known here, so
 * include_fenced_brokers lists the same), the controller and the cluster
 * id. On a voter's control-plane listener it answers as Kafka's
 * controllers do (KIP-919, what --bootstrap-controller asks): the
 * voters' endpoints and the active one. Asking a listener for the other
 * kind is Kafka's MISMATCHED_ENDPOINT_TYPE, an unknown type
 * UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at v0, which has no type). */
#include <stdio.h>

#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"
#include "controller/metadata_cache.h"
#include "controller/quorum.h"

enum { ENDPOINT_BROKERS = 1, ENDPOINT_CONTROLLERS = 2 };

int kiq_api_describe_cluster_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_cluster_request_t *req = request;
    kiq_describe_cluster_response_t *out = response;
    int16_t v = r->header.api_version;
    bool controllers = r->listener == KIQ_LISTENER_CONTROL && b->quorum;
    int8_t here = controllers ? ENDPOINT_CONTROLLERS : ENDPOINT_BROKERS;
    out->endpoint_type = here;
    if (req->endpoint_type != here) {
        if (req->endpoint_type == ENDPOINT_CONTROLLERS || req->endpoint_type == ENDPOINT_BROKERS) {
            kiq_error_set("The request was sent to an endpoint of type %s, but we wanted an endpoint of type %s",
                          controllers ? "CONTROLLER" : "BROKER", controllers ? "BROKER" : "CONTROLLER");
            out->error_code = v >= 1 ? KIQ_ERR_MISMATCHED_ENDPOINT_TYPE : KIQ_ERR_INVALID_REQUEST;
        } else {
            kiq_error_set("Unsupported endpoint type %d", req->endpoint_type);
            out->error_code = v >= 1 ? KIQ_ERR_UNSUPPORTED_ENDPOINT_TYPE : KIQ_ERR_INVALID_REQUEST;
        }
        out->error_message = kiq_request_error_message(r);
        return KIQ_HANDLER_RESPOND;
    }
    out->cluster_id = kiq_request_str(r, b->cluster_id);
    if (req->include_cluster_authorized_operations)
        out->cluster_authorized_operations = kiq_api_operations(b, r, KIQ_RES_CLUSTER, KIQ_STR(KIQ_ACL_CLUSTER_NAME));
    if (controllers) {
        out->controller_id = kiq_broker_controller_id(b);
        /* the set in force: the config's, or the metadata log's (dynamic voters) */
        int32_t ids[KIQ_RAFT_MAX_VOTERS];
        kiq_quorum_endpoint_t eps[KIQ_RAFT_MAX_VOTERS];
        int n = kiq_quorum_voters(b->quorum, ids, eps);
        out->brokers = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->brokers);
        for (int i = 0; i < n; i++) {
            if (eps[i].port <= 0) continue;
            kiq_describe_cluster_response_brokers_t *o = &out->brokers[out->brokers_n++];
            kiq_describe_cluster_response_brokers_init(o);
            o->broker_id = ids[i];
            o->host = kiq_request_str(r, eps[i].host);
            o->port = eps[i].port;
            o->rack = KIQ_STR_NULL;
        }
        return KIQ_HANDLER_RESPOND;
    }
    kiq_cached_broker_t *list = NULL;
    int n = kiq_api_live_brokers(b, r, &list);
    int32_t controller = kiq_broker_controller_id(b);
    out->brokers_n = n;
    out->brokers = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->brokers);
    for (int i = 0; i < n; i++) {
        kiq_describe_cluster_response_brokers_t *o = &out->brokers[i];
        kiq_describe_cluster_response_brokers_init(o);
        o->broker_id = list[i].id;
        o->host = KIQ_STR(list[i].host);
        o->port = list[i].port;
        o->rack = list[i].rack ? KIQ_STR(list[i].rack) : KIQ_STR_NULL;
        if (list[i].id == controller) out->controller_id = controller;
    }
    return KIQ_HANDLER_RESPOND;
}
