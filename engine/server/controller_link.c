#include "server/controller_link.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "controller/quorum.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "net/peer_channel.h"
#include "proto/errors.h"
#include "proto/messages.h"
#include "server/broker.h"

/* How long a block of producer ids may take to come. */
#define PRODUCER_IDS_TIMEOUT_MS 5000
#define RETRY_PAUSE_NS (50 * 1000000LL) /* between a forward's tries at finding the controller */

static kiq_str_t arena_copy(kiq_arena_t *arena, const char *s, size_t n)
{
    return (kiq_str_t){kiq_arena_strndup(arena, s, n), (int32_t)n};
}

static kiq_str_t error_text(kiq_arena_t *arena)
{
    const char *e = kiq_error_get();
    return *e ? arena_copy(arena, e, strlen(e)) : KIQ_STR_NULL;
}

/* Every order fails alike: the controller could not be asked. */
static void fail_all(kiq_topic_order_t *orders, int n, kiq_arena_t *arena)
{
    kiq_str_t why = error_text(arena);
    for (int i = 0; i < n; i++) {
        orders[i].error = KIQ_ERR_REQUEST_TIMED_OUT;
        orders[i].message = why;
    }
}

/* A request the controller answers whole: decided by `here` on an active
 * controller of this broker. */
typedef struct whole {
    int16_t api;
    size_t response_size, error_code_at, error_message_at;
    bool has_code; /* false: errors only per entry, which the handler fills when none came */
    bool has_message;
    void (*here)(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp);
    /* instead of here: answered later (a voter change, at its commit) */
    void (*later)(kiq_broker_t *b, int16_t api, const void *req, kiq_arena_t *a, void *resp, kiq_link_done_fn done,
                  void *ctx);
    /* a response with no top-level error: its answer when the forward
     * failed (else the error code, and message, set at the offsets above) */
    void (*failed)(const void *req, void *resp, kiq_arena_t *a, kiq_str_t why);
} whole_t;

/* A request on its way to the controller; in the caller's arena. */
typedef struct forward {
    kiq_peer_call_t call; /* first: the channel hands this pointer back */
    kiq_broker_t *b;
    kiq_arena_t *arena;
    kiq_topic_order_t *orders; /* topic requests' */
    kiq_config_order_t *config_orders;
    int n;
    union {
        kiq_create_topics_request_t create_topics;
        kiq_create_partitions_request_t create_partitions;
        kiq_delete_topics_request_t delete_topics;
    } req;
    union {
        kiq_create_topics_response_t create_topics;
        kiq_create_partitions_response_t create_partitions;
        kiq_delete_topics_response_t delete_topics;
        kiq_alter_configs_response_t alter;
        kiq_incremental_alter_configs_response_t incremental;
    } resp;
    void (*answer)(struct forward *f, int rc); /* the response (or the failure) to the orders */
    const struct whole *whole; /* a request answered whole: its table row */
    kiq_link_done_fn done;
    void *ctx;
} forward_t;

static forward_t *forward_new(kiq_broker_t *b, kiq_arena_t *arena, int timeout_ms, kiq_link_done_fn done, void *ctx)
{
    forward_t *f = kiq_arena_calloc(arena, 1, sizeof *f);
    f->b = b;
    f->arena = arena;
    f->done = done;
    f->ctx = ctx;
    f->call.version = -1;
    f->call.arena = arena;
    f->call.response = &f->resp;
    f->call.ctx = f;
    f->call.deadline_ns = kiq_clock_mono_ns() + (int64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000;
    return f;
}

/* Whether the node asked answered that it is no active controller (an
 * election under way, or an address from before one): it did nothing. A
 * node that is none says so for every topic, so the first one tells. */
static bool not_controller(const forward_t *f)
{
    if (f->whole)
        return *(const int16_t *)((const char *)f->call.response + f->whole->error_code_at) == KIQ_ERR_NOT_CONTROLLER;
    int16_t err = KIQ_ERR_NONE;
    switch (f->call.api_key) {
    case KIQ_API_CREATE_TOPICS:
        if (f->resp.create_topics.topics_n > 0) err = f->resp.create_topics.topics[0].error_code;
        break;
    case KIQ_API_CREATE_PARTITIONS:
        if (f->resp.create_partitions.results_n > 0) err = f->resp.create_partitions.results[0].error_code;
        break;
    case KIQ_API_DELETE_TOPICS:
        if (f->resp.delete_topics.responses_n > 0) err = f->resp.delete_topics.responses[0].error_code;
        break;
    case KIQ_API_ALTER_CONFIGS:
        if (f->resp.alter.responses_n > 0) err = f->resp.alter.responses[0].error_code;
        break;
    case KIQ_API_INCREMENTAL_ALTER_CONFIGS:
        if (f->resp.incremental.responses_n > 0) err = f->resp.incremental.responses[0].error_code;
        break;
    default: break;
    }
    return err == KIQ_ERR_NOT_CONTROLLER;
}

static void forwarded(kiq_peer_call_t *call, int rc)
{
    forward_t *f = call->ctx;
    /* The controller went (killed, or its connection cut) before it
     * answered, or the node asked is no controller (yet): as Kafka's
     * forwarding does, the next one is asked after a pause, until the
     * request's deadline (a request the lost one had carried out is then
     * refused as done already, e.g. TOPIC_ALREADY_EXISTS). A stopping
     * broker answers at once. */
    int64_t now = kiq_clock_mono_ns();
    if ((rc != 0 || not_controller(f)) && atomic_load(&f->b->running) && now + RETRY_PAUSE_NS < call->deadline_ns) {
        kiq_broker_controller_not_there(f->b, atomic_load(&f->b->forwarding_to));
        call->not_before_ns = now + RETRY_PAUSE_NS;
        kiq_peer_channel_submit(f->b->controller_channel, call);
        return;
    }
    if (rc != 0) kiq_error_set("%s", call->error);
    f->answer(f, rc);
    f->done(f->ctx);
}

static void send_forward(forward_t *f, int16_t api_key, const void *req, void (*answer)(forward_t *f, int rc))
{
    f->call.api_key = api_key;
    f->call.request = req;
    f->call.done = forwarded;
    f->answer = answer;
    kiq_broker_follow_controller(f->b);
    kiq_peer_channel_submit(f->b->controller_channel, &f->call);
}

/* The forwarded topic's configs field, from the checked configs. */
static void forward_configs(const kiq_topic_configs_t *cfg, kiq_create_topics_request_topics_t *t,
                            kiq_arena_t *arena)
{
    int n = 0;
    for (int i = 0; cfg && i < KIQ_TOPIC_CONFIG_COUNT; i++) n += cfg->value[i] != NULL;
    if (n == 0) return;
    t->configs = kiq_arena_calloc(arena, (size_t)n, sizeof *t->configs);
    for (int i = 0; i < KIQ_TOPIC_CONFIG_COUNT; i++) {
        if (!cfg->value[i]) continue;
        kiq_create_topics_request_topics_configs_t *e = &t->configs[t->configs_n++];
        kiq_create_topics_request_topics_configs_init(e);
        e->name = KIQ_STR(kiq_topic_config_defs[i].name);
        e->value = arena_copy(arena, cfg->value[i], strlen(cfg->value[i]));
    }
}

/* The controller's answer for the topic named: to its order. */
static void answered(kiq_topic_order_t *orders, int n, kiq_str_t name, int16_t error, kiq_str_t message)
{
    for (int i = 0; i < n; i++)
        if (name.p && orders[i].name.len == name.len && memcmp(orders[i].name.p, name.p, (size_t)name.len) == 0) {
            orders[i].error = error;
            orders[i].message = message;
            return;
        }
}

/* Before a forwarded request: each order fails unless the answer names it. */
static void awaiting(kiq_topic_order_t *orders, int n)
{
    for (int i = 0; i < n; i++) {
        orders[i].error = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        orders[i].message = KIQ_STR("the controller did not answer for this topic");
    }
}

/* When the controller runs here: each order decided by one(), with its
 * reason from the error slot. */
static void decide_here(kiq_controller_t *ctl, kiq_topic_order_t *orders, int n, bool validate_only, kiq_arena_t *arena,
                        int (*one)(kiq_controller_t *c, const kiq_topic_order_t *o, bool validate_only))
{
    for (int i = 0; i < n; i++) {
        kiq_error_clear();
        orders[i].error = (int16_t)one(ctl, &orders[i], validate_only);
        orders[i].message = orders[i].error ? error_text(arena) : KIQ_STR_NULL;
    }
}

static int create_topic_here(kiq_controller_t *c, const kiq_topic_order_t *o, bool validate_only)
{
    return kiq_controller_create_topic(c, o->name, o->partitions, o->replication_factor, o->configs, validate_only);
}

static int delete_topic_here(kiq_controller_t *c, const kiq_topic_order_t *o, bool validate_only)
{
    return kiq_controller_delete_topic(c, o->name);
}

static int create_partitions_here(kiq_controller_t *c, const kiq_topic_order_t *o, bool validate_only)
{
    return kiq_controller_create_partitions(c, o->name, o->partitions, o->assignments, o->nassignments, validate_only);
}

static void created(forward_t *f, int rc)
{
    if (rc != 0) {
        fail_all(f->orders, f->n, f->arena);
        return;
    }
    const kiq_create_topics_response_t *resp = &f->resp.create_topics;
    for (int32_t i = 0; i < resp->topics_n; i++)
        answered(f->orders, f->n, resp->topics[i].name, resp->topics[i].error_code, resp->topics[i].error_message);
}

void kiq_controller_link_create_topics(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only,
                                       int timeout_ms, kiq_arena_t *arena, kiq_link_done_fn done, void *ctx)
{
    kiq_controller_t *ctl = kiq_broker_active_controller(b);
    if (n <= 0 || ctl) {
        decide_here(ctl, orders, n, validate_only, arena, create_topic_here);
        done(ctx);
        return;
    }
    forward_t *f = forward_new(b, arena, timeout_ms, done, ctx);
    f->orders = orders;
    f->n = n;
    kiq_create_topics_request_t *req = &f->req.create_topics;
    kiq_create_topics_request_init(req);
    req->topics = kiq_arena_calloc(arena, (size_t)n, sizeof *req->topics);
    req->topics_n = n;
    for (int i = 0; i < n; i++) {
        kiq_create_topics_request_topics_init(&req->topics[i]);
        req->topics[i].name = orders[i].name;
        req->topics[i].num_partitions = orders[i].partitions;
        req->topics[i].replication_factor = orders[i].replication_factor;
        forward_configs(orders[i].configs, &req->topics[i], arena);
    }
    awaiting(orders, n);
    req->timeout_ms = timeout_ms;
    req->validate_only = validate_only;
    send_forward(f, KIQ_API_CREATE_TOPICS, req, created);
}

static void grown(forward_t *f, int rc)
{
    if (rc != 0) {
        fail_all(f->orders, f->n, f->arena);
        return;
    }
    const kiq_create_partitions_response_t *resp = &f->resp.create_partitions;
    for (int32_t i = 0; i < resp->results_n; i++)
        answered(f->orders, f->n, resp->results[i].name, resp->results[i].error_code,
                 resp->results[i].error_message);
}

void kiq_controller_link_create_partitions(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only,
                                           int timeout_ms, kiq_arena_t *arena, kiq_link_done_fn done, void *ctx)
{
    kiq_controller_t *ctl = kiq_broker_active_controller(b);
    if (n <= 0 || ctl) {
        decide_here(ctl, orders, n, validate_only, arena, create_partitions_here);
        done(ctx);
        return;
    }
    forward_t *f = forward_new(b, arena, timeout_ms, done, ctx);
    f->orders = orders;
    f->n = n;
    kiq_create_partitions_request_t *req = &f->req.create_partitions;
    kiq_create_partitions_request_init(req);
    req->topics = kiq_arena_calloc(arena, (size_t)n, sizeof *req->topics);
    req->topics_n = n;
    for (int i = 0; i < n; i++) {
        kiq_create_partitions_request_topics_init(&req->topics[i]);
        req->topics[i].name = orders[i].name;
        req->topics[i].count = orders[i].partitions;
        req->topics[i].assignments = (kiq_create_partitions_request_topics_assignments_t *)orders[i].assignments;
        req->topics[i].assignments_n = orders[i].nassignments;
    }
    awaiting(orders, n);
    req->timeout_ms = timeout_ms;
    req->validate_only = validate_only;
    send_forward(f, KIQ_API_CREATE_PARTITIONS, req, grown);
}

static void deleted(forward_t *f, int rc)
{
    if (rc != 0) {
        fail_all(f->orders, f->n, f->arena);
        return;
    }
    const kiq_delete_topics_response_t *resp = &f->resp.delete_topics;
    for (int32_t i = 0; i < resp->responses_n; i++)
        answered(f->orders, f->n, resp->responses[i].name, resp->responses[i].error_code,
                 resp->responses[i].error_message);
}

void kiq_controller_link_delete_topics(kiq_broker_t *b, kiq_topic_order_t *orders, int n, int timeout_ms,
                                       kiq_arena_t *arena, kiq_link_done_fn done, void *ctx)
{
    kiq_controller_t *ctl = kiq_broker_active_controller(b);
    if (n <= 0 || ctl) {
        decide_here(ctl, orders, n, false, arena, delete_topic_here);
        done(ctx);
        return;
    }
    forward_t *f = forward_new(b, arena, timeout_ms, done, ctx);
    f->orders = orders;
    f->n = n;
    kiq_delete_topics_request_t *req = &f->req.delete_topics;
    kiq_delete_topics_request_init(req);
    /* names travel in topic_names up to v5 and in topics from v6: both
     * are filled, the version the channel picks writes its own */
    req->topics = kiq_arena_calloc(arena, (size_t)n, sizeof *req->topics);
    req->topics_n = n;
    req->topic_names = kiq_arena_calloc(arena, (size_t)n, sizeof *req->topic_names);
    req->topic_names_n = n;
    for (int i = 0; i < n; i++) {
        kiq_delete_topics_request_topics_init(&req->topics[i]);
        req->topics[i].name = orders[i].name;
        req->topic_names[i] = orders[i].name;
    }
    awaiting(orders, n);
    req->timeout_ms = timeout_ms;
    send_forward(f, KIQ_API_DELETE_TOPICS, req, deleted);
}

/* ---- the requests the controller answers whole */

static void elect_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_elect_leaders(c, a, req, resp);
}

static void unregister_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    const kiq_unregister_broker_request_t *in = req;
    kiq_unregister_broker_response_t *out = resp;
    out->error_code = (int16_t)kiq_controller_unregister_broker(c, in->broker_id);
    if (out->error_code) out->error_message = error_text(a);
}

static void alter_reassignments_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_alter_reassignments(c, a, req, resp);
}

static void list_reassignments_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_list_reassignments(c, a, req, resp);
}

static void describe_quorum_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_quorum_describe(b->quorum, req, a, resp);
}

/* A voter change waiting for its commit at this node's quorum. */
typedef struct voter_change {
    kiq_arena_t *arena;
    int16_t *error_code;
    kiq_str_t *error_message;
    kiq_link_done_fn done;
    void *ctx;
} voter_change_t;

static void voters_changed(void *arg, int16_t error)
{
    voter_change_t *w = arg;
    *w->error_code = error;
    if (error && w->error_message) *w->error_message = error_text(w->arena);
    w->done(w->ctx);
}

/* UpdateRaftVoter names the quorum's leader as this node knows it, for a
 * voter that asked the wrong one; its answer has no message. */
static void update_voter(kiq_broker_t *b, const kiq_update_raft_voter_request_t *in, kiq_arena_t *arena,
                         kiq_update_raft_voter_response_t *out, voter_change_t *w, kiq_link_done_fn done, void *ctx)
{
    *w = (voter_change_t){ arena, &out->error_code, NULL, done, ctx };
    kiq_raft_view_t *v = kiq_arena_alloc(arena, sizeof *v);
    kiq_quorum_view(b->quorum, v);
    out->current_leader.leader_id = v->leader_id;
    out->current_leader.leader_epoch = v->epoch;
    int32_t ids[KIQ_RAFT_MAX_VOTERS];
    kiq_quorum_endpoint_t *eps = kiq_arena_alloc(arena, KIQ_RAFT_MAX_VOTERS * sizeof *eps);
    int n = kiq_quorum_voters(b->quorum, ids, eps);
    for (int i = 0; i < n; i++)
        if (ids[i] == v->leader_id && eps[i].port > 0) {
            out->current_leader.host = arena_copy(arena, eps[i].host, strlen(eps[i].host));
            out->current_leader.port = eps[i].port;
        }
    int nl = in->listeners_n > 0 ? in->listeners_n : 0;
    kiq_quorum_endpoint_t *ls = kiq_arena_alloc(arena, (size_t)(nl ? nl : 1) * sizeof *ls);
    for (int i = 0; i < nl; i++) {
        ls[i].port = in->listeners[i].port;
        snprintf(ls[i].name, sizeof ls[i].name, "%.*s", (int)in->listeners[i].name.len, in->listeners[i].name.p);
        snprintf(ls[i].host, sizeof ls[i].host, "%.*s", (int)in->listeners[i].host.len, in->listeners[i].host.p);
    }
    kiq_quorum_update_voter(b->quorum, in->voter_id, &in->voter_directory_id, ls, nl,
                            in->kraft_version_feature.min_supported_version,
                            in->kraft_version_feature.max_supported_version, KIQ_VOTER_CHANGE_WAIT_MS, voters_changed, w);
}

void kiq_controller_link_change_voters(kiq_broker_t *b, int16_t api, const void *req, kiq_arena_t *arena, void *resp,
                                       kiq_link_done_fn done, void *ctx)
{
    voter_change_t *w = kiq_arena_alloc(arena, sizeof *w);
    if (api == KIQ_API_UPDATE_RAFT_VOTER) {
        update_voter(b, req, arena, resp, w, done, ctx);
        return;
    }
    if (api == KIQ_API_REMOVE_RAFT_VOTER) {
        const kiq_remove_raft_voter_request_t *in = req;
        kiq_remove_raft_voter_response_t *out = resp;
        *w = (voter_change_t){ arena, &out->error_code, &out->error_message, done, ctx };
        kiq_quorum_remove_voter(b->quorum, in->voter_id, &in->voter_directory_id, KIQ_VOTER_CHANGE_WAIT_MS,
                                voters_changed, w);
        return;
    }
    const kiq_add_raft_voter_request_t *in = req;
    kiq_add_raft_voter_response_t *out = resp;
    *w = (voter_change_t){ arena, &out->error_code, &out->error_message, done, ctx };
    if (in->listeners_n < 1) {
        kiq_error_set("the new voter names no listener");
        voters_changed(w, KIQ_ERR_INVALID_REQUEST);
        return;
    }
    kiq_quorum_endpoint_t ep = { .port = in->listeners[0].port };
    snprintf(ep.name, sizeof ep.name, "%.*s", (int)in->listeners[0].name.len, in->listeners[0].name.p);
    snprintf(ep.host, sizeof ep.host, "%.*s", (int)in->listeners[0].host.len, in->listeners[0].host.p);
    kiq_quorum_add_voter(b->quorum, in->voter_id, &in->voter_directory_id, &ep, in->timeout_ms, voters_changed, w);
}

static void update_features_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_update_features_response_t *out = resp;
    out->error_code = (int16_t)kiq_controller_update_features(c, req);
    if (out->error_code) out->error_message = error_text(a);
}

static void describe_scram_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_describe_scram(c, req, a, resp);
}

static void alter_scram_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_alter_scram(c, req, a, resp);
}

static void describe_quotas_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_describe_client_quotas(c, req, a, resp);
}

static void alter_quotas_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_alter_client_quotas(c, req, a, resp);
}

static void create_acls_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_create_acls(c, req, a, resp);
}

static void describe_acls_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_describe_acls(c, req, a, resp);
}

static void delete_acls_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_delete_acls(c, req, a, resp);
}

/* The client a forwarding broker named (NUL-terminated), or none. */
static const char *requester(kiq_arena_t *a, kiq_str_t s)
{
    char *p = kiq_arena_alloc(a, (size_t)(s.p && s.len > 0 ? s.len : 0) + 1);
    if (s.p && s.len > 0) memcpy(p, s.p, (size_t)s.len);
    p[s.p && s.len > 0 ? s.len : 0] = 0;
    return p;
}

static void create_token_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    const kiq_create_delegation_token_request_t *q = req;
    kiq_controller_create_token(c, requester(a, q->kafkaiq_requester), q, a, resp);
}

static void renew_token_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    const kiq_renew_delegation_token_request_t *q = req;
    kiq_controller_renew_token(c, requester(a, q->kafkaiq_requester), q, resp);
}

static void expire_token_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    const kiq_expire_delegation_token_request_t *q = req;
    kiq_controller_expire_token(c, requester(a, q->kafkaiq_requester), q, resp);
}

static void describe_tokens_here(kiq_broker_t *b, kiq_controller_t *c, kiq_arena_t *a, const void *req, void *resp)
{
    kiq_controller_describe_tokens(c, req, a, resp);
}

/* Every creation answered with the failure. */
static void create_acls_failed(const void *request, void *response, kiq_arena_t *a, kiq_str_t why)
{
    const kiq_create_acls_request_t *req = request;
    kiq_create_acls_response_t *out = response;
    int n = req->creations_n > 0 ? req->creations_n : 0;
    out->results = kiq_arena_calloc(a, (size_t)n + 1, sizeof *out->results);
    out->results_n = n;
    for (int i = 0; i < n; i++) {
        kiq_create_acls_response_results_init(&out->results[i]);
        out->results[i].error_code = KIQ_ERR_REQUEST_TIMED_OUT;
        out->results[i].error_message = why;
    }
}

/* Every filter answered with the failure. */
static void delete_acls_failed(const void *request, void *response, kiq_arena_t *a, kiq_str_t why)
{
    const kiq_delete_acls_request_t *req = request;
    kiq_delete_acls_response_t *out = response;
    int n = req->filters_n > 0 ? req->filters_n : 0;
    out->filter_results = kiq_arena_calloc(a, (size_t)n + 1, sizeof *out->filter_results);
    out->filter_results_n = n;
    for (int i = 0; i < n; i++) {
        kiq_delete_acls_response_filter_results_init(&out->filter_results[i]);
        out->filter_results[i].error_code = KIQ_ERR_REQUEST_TIMED_OUT;
        out->filter_results[i].error_message = why;
    }
}

/* Every entity of the request answered with the failure. */
static void alter_quotas_failed(const void *request, void *response, kiq_arena_t *a, kiq_str_t why)
{
    const kiq_alter_client_quotas_request_t *req = request;
    kiq_alter_client_quotas_response_t *out = response;
    int n = req->entries_n > 0 ? req->entries_n : 0;
    out->entries = kiq_arena_calloc(a, (size_t)n + 1, sizeof *out->entries);
    out->entries_n = n;
    for (int i = 0; i < n; i++) {
        kiq_alter_client_quotas_response_entries_t *o = &out->entries[i];
        kiq_alter_client_quotas_response_entries_init(o);
        o->error_code = KIQ_ERR_REQUEST_TIMED_OUT;
        o->error_message = why;
        o->entity_n = req->entries[i].entity_n > 0 ? req->entries[i].entity_n : 0;
        o->entity = kiq_arena_calloc(a, (size_t)o->entity_n + 1, sizeof *o->entity);
        for (int32_t j = 0; j < o->entity_n; j++) {
            kiq_alter_client_quotas_response_entries_entity_init(&o->entity[j]);
            o->entity[j].entity_type = req->entries[i].entity[j].entity_type;
            o->entity[j].entity_name = req->entries[i].entity[j].entity_name;
        }
    }
}

/* Each one's response: its size and where its error code (and message,
 * where it has one) are, for the answer of a forward that failed. */
#define WHOLE(api, T, here) \
    {api, sizeof(T), offsetof(T, error_code), offsetof(T, error_message), true, true, here, NULL, NULL}
#define WHOLE_NO_MESSAGE(api, T, here) {api, sizeof(T), offsetof(T, error_code), 0, true, false, here, NULL, NULL}
#define WHOLE_NO_CODE(api, T, here) {api, sizeof(T), 0, 0, false, false, here, NULL, NULL}
#define WHOLE_LATER(api, T, later) \
    {api, sizeof(T), offsetof(T, error_code), offsetof(T, error_message), true, true, NULL, later, NULL}
#define WHOLE_ENTRIES(api, T, here, failed) {api, sizeof(T), 0, 0, false, false, here, NULL, failed}

static const whole_t WHOLES[] = {
    WHOLE_NO_MESSAGE(KIQ_API_ELECT_LEADERS, kiq_elect_leaders_response_t, elect_here),
    WHOLE(KIQ_API_UNREGISTER_BROKER, kiq_unregister_broker_response_t, unregister_here),
    WHOLE(KIQ_API_ALTER_PARTITION_REASSIGNMENTS, kiq_alter_partition_reassignments_response_t,
          alter_reassignments_here),
    WHOLE(KIQ_API_LIST_PARTITION_REASSIGNMENTS, kiq_list_partition_reassignments_response_t, list_reassignments_here),
    WHOLE(KIQ_API_DESCRIBE_QUORUM, kiq_describe_quorum_response_t, describe_quorum_here),
    WHOLE_LATER(KIQ_API_ADD_RAFT_VOTER, kiq_add_raft_voter_response_t, kiq_controller_link_change_voters),
    WHOLE_LATER(KIQ_API_REMOVE_RAFT_VOTER, kiq_remove_raft_voter_response_t, kiq_controller_link_change_voters),
    WHOLE(KIQ_API_UPDATE_FEATURES, kiq_update_features_response_t, update_features_here),
    WHOLE(KIQ_API_DESCRIBE_USER_SCRAM_CREDENTIALS, kiq_describe_user_scram_credentials_response_t, describe_scram_here),
    WHOLE_NO_CODE(KIQ_API_ALTER_USER_SCRAM_CREDENTIALS, kiq_alter_user_scram_credentials_response_t, alter_scram_here),
    WHOLE(KIQ_API_DESCRIBE_CLIENT_QUOTAS, kiq_describe_client_quotas_response_t, describe_quotas_here),
    WHOLE_ENTRIES(KIQ_API_ALTER_CLIENT_QUOTAS, kiq_alter_client_quotas_response_t, alter_quotas_here,
                  alter_quotas_failed),
    WHOLE_ENTRIES(KIQ_API_CREATE_ACLS, kiq_create_acls_response_t, create_acls_here, create_acls_failed),
    WHOLE(KIQ_API_DESCRIBE_ACLS, kiq_describe_acls_response_t, describe_acls_here),
    WHOLE_ENTRIES(KIQ_API_DELETE_ACLS, kiq_delete_acls_response_t, delete_acls_here, delete_acls_failed),
    WHOLE_NO_MESSAGE(KIQ_API_CREATE_DELEGATION_TOKEN, kiq_create_delegation_token_response_t, create_token_here),
    WHOLE_NO_MESSAGE(KIQ_API_RENEW_DELEGATION_TOKEN, kiq_renew_delegation_token_response_t, renew_token_here),
    WHOLE_NO_MESSAGE(KIQ_API_EXPIRE_DELEGATION_TOKEN, kiq_expire_delegation_token_response_t, expire_token_here),
    WHOLE_NO_MESSAGE(KIQ_API_DESCRIBE_DELEGATION_TOKEN, kiq_describe_delegation_token_response_t,
                     describe_tokens_here),
};

static void whole_failed(forward_t *f, int rc)
{
    if (rc == 0) return;
    const whole_t *w = f->whole;
    char *resp = f->call.response;
    memset(resp, 0, w->response_size);
    if (w->failed) {
        w->failed(f->call.request, resp, f->arena, error_text(f->arena));
        return;
    }
    if (w->has_code) *(int16_t *)(resp + w->error_code_at) = KIQ_ERR_REQUEST_TIMED_OUT;
    if (w->has_message) *(kiq_str_t *)(resp + w->error_message_at) = error_text(f->arena);
}

void kiq_controller_link_whole(kiq_broker_t *b, int16_t api_key, const void *req, int timeout_ms, kiq_arena_t *arena,
                               void *resp, kiq_link_done_fn done, void *ctx)
{
    const whole_t *w = WHOLES;
    while (w->api != api_key) w++; /* one of the table's: the callers are its handlers */
    kiq_controller_t *ctl = kiq_broker_active_controller(b);
    if (ctl) {
        kiq_error_clear();
        if (w->later) {
            w->later(b, api_key, req, arena, resp, done, ctx);
            return;
        }
        w->here(b, ctl, arena, req, resp);
        done(ctx);
        return;
    }
    forward_t *f = forward_new(b, arena, timeout_ms, done, ctx);
    f->call.response = resp;
    f->whole = w;
    send_forward(f, api_key, req, whole_failed);
}

/* Both responses list the resources in the request's order, alike. */
static void configs_changed(forward_t *f, int rc)
{
    kiq_str_t why = rc == 0 ? KIQ_STR("the controller left the resource out of its answer") : error_text(f->arena);
    for (int i = 0; i < f->n; i++) {
        kiq_config_order_t *o = &f->config_orders[i];
        o->error = rc == 0 ? KIQ_ERR_UNKNOWN_SERVER_ERROR : KIQ_ERR_REQUEST_TIMED_OUT;
        o->message = why;
        if (rc != 0) continue;
        if (f->call.api_key == KIQ_API_ALTER_CONFIGS && i < f->resp.alter.responses_n) {
            o->error = f->resp.alter.responses[i].error_code;
            o->message = f->resp.alter.responses[i].error_message;
        } else if (f->call.api_key == KIQ_API_INCREMENTAL_ALTER_CONFIGS && i < f->resp.incremental.responses_n) {
            o->error = f->resp.incremental.responses[i].error_code;
            o->message = f->resp.incremental.responses[i].error_message;
        }
    }
}

void kiq_controller_link_change_configs(kiq_broker_t *b, int16_t api_key, const void *req, kiq_config_order_t *orders,
                                        int n, bool validate_only, int timeout_ms, kiq_arena_t *arena,
                                        kiq_link_done_fn done, void *ctx)
{
    kiq_error_clear();
    kiq_controller_t *ctl = kiq_broker_active_controller(b);
    if (ctl) {
        kiq_controller_change_configs(ctl, arena, orders, n, validate_only);
        done(ctx);
        return;
    }
    forward_t *f = forward_new(b, arena, timeout_ms, done, ctx);
    f->config_orders = orders;
    f->n = n;
    send_forward(f, api_key, req, configs_changed);
}

/* A request for producer ids: the broker's, not a client request's, so on
 * the heap until its answer. */
typedef struct id_block_call {
    kiq_peer_call_t call; /* first: the channel hands this pointer back */
    kiq_producer_ids_t *ids;
    kiq_arena_t arena;
    kiq_allocate_producer_ids_request_t req;
    kiq_allocate_producer_ids_response_t resp;
} id_block_call_t;

static void give(kiq_producer_ids_t *ids, int rc, const kiq_allocate_producer_ids_response_t *resp)
{
    if (rc == 0 && (resp->error_code || resp->producer_id_len <= 0))
        rc = kiq_error_set("the controller gave no producer ids (error %d)", resp->error_code);
    kiq_producer_ids_given(ids, rc, rc == 0 ? resp->producer_id_start : 0, rc == 0 ? resp->producer_id_len : 0);
}

static void id_block_answered(kiq_peer_call_t *call, int rc)
{
    id_block_call_t *c = (id_block_call_t *)call;
    if (rc != 0) kiq_error_set("cannot reach the controller for producer ids: %s", call->error);
    give(c->ids, rc, &c->resp);
    kiq_arena_reset(&c->arena);
    free(c);
}

void kiq_controller_link_producer_ids(kiq_broker_t *b, kiq_producer_ids_t *ids)
{
    int64_t epoch = atomic_load(&b->registered_epoch);
    if (epoch < 0) {
        kiq_error_set("broker %d is not registered with the controller yet", b->node_id);
        kiq_producer_ids_given(ids, -1, 0, 0);
        return;
    }
    id_block_call_t *c = calloc(1, sizeof *c);
    if (!c) {
        kiq_error_set("out of memory");
        kiq_producer_ids_given(ids, -1, 0, 0);
        return;
    }
    c->ids = ids;
    kiq_arena_init(&c->arena);
    kiq_allocate_producer_ids_request_init(&c->req);
    c->req.broker_id = b->node_id;
    c->req.broker_epoch = epoch;
    kiq_allocate_producer_ids_response_init(&c->resp);
    kiq_controller_t *ctl = kiq_broker_active_controller(b);
    if (ctl) {
        kiq_controller_allocate_producer_ids(ctl, &c->req, &c->resp);
        give(ids, 0, &c->resp);
        free(c);
        return;
    }
    c->call = (kiq_peer_call_t){.api_key = KIQ_API_ALLOCATE_PRODUCER_IDS, .version = -1, .request = &c->req,
                                .arena = &c->arena, .response = &c->resp, .done = id_block_answered};
    c->call.deadline_ns = kiq_clock_mono_ns() + (int64_t)PRODUCER_IDS_TIMEOUT_MS * 1000000;
    kiq_broker_follow_controller(b);
    kiq_peer_channel_submit(b->controller_channel, &c->call);
}
