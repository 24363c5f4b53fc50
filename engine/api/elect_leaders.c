/* ElectLeaders: the controller elects (preferred replica or unclean, see
 * kiq_controller_elect_leaders); brokers forward to it. A standalone
 * broker is every partition's only replica and leader, so nothing ever
 * needs electing (ELECTION_NOT_NEEDED), unless its log directory failed:
 * then no replica is left to lead. A top-level error (v1+) is also given
 * to every partition named, as Kafka does. */
#include <stdio.h>

#include "api/api.h"
#include "api/authorize.h"
#include "controller/controller.h"
#include "core/error.h"
#include "server/controller_link.h"

#define ELECT_WAIT_MAX_MS 30000

static void standalone_elect(kiq_broker_t *b, kiq_request_t *r, const kiq_elect_leaders_request_t *req,
                             kiq_elect_leaders_response_t *out)
{
    bool unclean = req->election_type == 1;
    int count = 0;
    kiq_topic_t **list = req->topic_partitions_n < 0 ? kiq_topics_list(b->topics, &count) : NULL;
    int32_t nt = list ? count : req->topic_partitions_n;
    out->replica_election_results_n = nt;
    out->replica_election_results = kiq_arena_calloc(&r->arena, (size_t)(nt ? nt : 1), sizeof *out->replica_election_results);
    for (int32_t t = 0; t < nt; t++) {
        kiq_elect_leaders_response_replica_election_results_t *tr = &out->replica_election_results[t];
        kiq_elect_leaders_response_replica_election_results_init(tr);
        const kiq_elect_leaders_request_topic_partitions_t *want = list ? NULL : &req->topic_partitions[t];
        kiq_topic_t *topic = list ? list[t] : kiq_topics_get(b->topics, want->topic);
        tr->topic = list ? kiq_request_str(r, topic->name) : want->topic;
        char name[256];
        snprintf(name, sizeof name, KIQ_STR_FMT, KIQ_STR_ARG(tr->topic));
        int32_t np = list ? topic->npartitions : want->partitions_n;
        tr->partition_result = kiq_arena_calloc(&r->arena, (size_t)(np > 0 ? np : 1), sizeof *tr->partition_result);
        for (int32_t i = 0; i < np; i++) {
            int32_t p = list ? i : want->partitions[i];
            int16_t err = KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            if (topic && p >= 0 && p < topic->npartitions) {
                kiq_partition_log_t *log = topic->partitions[p]->log;
                bool leads = log && !kiq_partition_log_offline(log);
                err = leads ? KIQ_ERR_ELECTION_NOT_NEEDED
                      : unclean ? KIQ_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE
                                : KIQ_ERR_PREFERRED_LEADER_NOT_AVAILABLE;
            }
            if (list && err == KIQ_ERR_ELECTION_NOT_NEEDED) continue;
            kiq_controller_election_result(&r->arena, err, name, topic != NULL, p,
                                           &tr->partition_result[tr->partition_result_n++]);
        }
        if (!list) kiq_topic_unref(topic);
    }
    if (list) kiq_topics_list_free(list, count);
}

/* The top-level error given to every partition named, with its message. */
static void fail_all(kiq_request_t *r, const kiq_elect_leaders_request_t *req, kiq_elect_leaders_response_t *out)
{
    kiq_str_t why = kiq_request_error_message(r);
    int32_t nt = req->topic_partitions_n > 0 ? req->topic_partitions_n : 0;
    out->replica_election_results_n = nt;
    out->replica_election_results = kiq_arena_calloc(&r->arena, (size_t)(nt ? nt : 1), sizeof *out->replica_election_results);
    for (int32_t t = 0; t < nt; t++) {
        const kiq_elect_leaders_request_topic_partitions_t *want = &req->topic_partitions[t];
        kiq_elect_leaders_response_replica_election_results_t *tr = &out->replica_election_results[t];
        kiq_elect_leaders_response_replica_election_results_init(tr);
        tr->topic = want->topic;
        int32_t np = want->partitions_n > 0 ? want->partitions_n : 0;
        tr->partition_result_n = np;
        tr->partition_result = kiq_arena_calloc(&r->arena, (size_t)(np ? np : 1), sizeof *tr->partition_result);
        for (int32_t i = 0; i < np; i++) {
            kiq_elect_leaders_response_replica_election_results_partition_result_init(&tr->partition_result[i]);
            tr->partition_result[i].partition_id = want->partitions[i];
            tr->partition_result[i].error_code = out->error_code;
            tr->partition_result[i].error_message = why;
        }
    }
}

/* A forwarded election while the controller decides; in the request's arena. */
typedef struct forwarded_election {
    kiq_request_t *r;
    const kiq_elect_leaders_request_t *req;
    kiq_elect_leaders_response_t *out;
} forwarded_election_t;

static void decided(void *ctx)
{
    forwarded_election_t *f = ctx;
    if (f->out->error_code == KIQ_ERR_REQUEST_TIMED_OUT) kiq_error_set("the controller did not answer");
    if (f->out->error_code) fail_all(f->r, f->req, f->out);
    kiq_request_respond(f->r, f->out);
}

int kiq_api_elect_leaders_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_elect_leaders_request_t *req = request;
    kiq_elect_leaders_response_t *out = response;
    kiq_error_clear();
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER)) {
        /* as Kafka: ALTER on the cluster, else every partition refused */
        kiq_error_set("Cluster authorization failed.");
        out->error_code = KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
    } else if (req->election_type != 0 && req->election_type != 1) {
        kiq_error_set("Unknown election type %d", req->election_type);
        out->error_code = KIQ_ERR_INVALID_REQUEST;
    } else if (r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b)) {
        kiq_error_set("broker %d is not the controller", b->node_id);
        out->error_code = KIQ_ERR_NOT_CONTROLLER;
    } else if (b->cluster) {
        int wait = req->timeout_ms > 0 && req->timeout_ms < ELECT_WAIT_MAX_MS ? req->timeout_ms : ELECT_WAIT_MAX_MS;
        forwarded_election_t *f = kiq_arena_alloc(&r->arena, sizeof *f);
        *f = (forwarded_election_t){r, req, out};
        kiq_api_handled(b, r); /* r is the link's from here on */
        kiq_controller_link_whole(b, KIQ_API_ELECT_LEADERS, req, wait, &r->arena, out, decided, f);
        return KIQ_HANDLER_PARKED;
    } else {
        standalone_elect(b, r, req, out);
    }
    if (out->error_code) fail_all(r, req, out);
    return KIQ_HANDLER_RESPOND;
}
