#include "server/broker_lifecycle.h"
#include "server/controller_link.h"

#include <stdio.h>
#include <string.h>

#include "controller/controller.h"
#include "core/error.h"
#include "core/say.h"
#include "net/client.h"
#include "proto/errors.h"
#include "proto/messages.h"
#include "server/broker.h"

enum { CONNECT_TIMEOUT_MS = 2000 };

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

static kiq_client_conn_t *connect_controller(kiq_broker_t *b, int timeout_ms)
{
    char id[32];
    snprintf(id, sizeof id, "kafkaiq-broker-%d", b->node_id);
    return kiq_client_connect(b->controller_host, b->controller_port,
                              timeout_ms > 0 && timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms : CONNECT_TIMEOUT_MS, id);
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
static void decide_here(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only, kiq_arena_t *arena,
                        int (*one)(kiq_controller_t *c, const kiq_topic_order_t *o, bool validate_only))
{
    for (int i = 0; i < n; i++) {
        kiq_error_clear();
        orders[i].error = (int16_t)one(b->controller, &orders[i], validate_only);
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

void kiq_controller_link_create_topics(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only,
                                       int timeout_ms, kiq_arena_t *arena)
{
    if (n <= 0) return;
    if (b->controller) {
        decide_here(b, orders, n, validate_only, arena, create_topic_here);
        return;
    }
    kiq_client_conn_t *c = connect_controller(b, timeout_ms);
    if (!c) {
        fail_all(orders, n, arena);
        return;
    }
    kiq_create_topics_request_t req;
    kiq_create_topics_request_init(&req);
    req.topics = kiq_arena_calloc(arena, (size_t)n, sizeof *req.topics);
    req.topics_n = n;
    for (int i = 0; i < n; i++) {
        kiq_create_topics_request_topics_init(&req.topics[i]);
        req.topics[i].name = orders[i].name;
        req.topics[i].num_partitions = orders[i].partitions;
        req.topics[i].replication_factor = orders[i].replication_factor;
        forward_configs(orders[i].configs, &req.topics[i], arena);
    }
    awaiting(orders, n);
    req.timeout_ms = timeout_ms;
    req.validate_only = validate_only;
    kiq_create_topics_response_t resp;
    if (kiq_client_request(c, KIQ_API_CREATE_TOPICS, -1, &req, arena, &resp, timeout_ms) != 0) {
        fail_all(orders, n, arena);
    } else {
        for (int32_t i = 0; i < resp.topics_n; i++)
            answered(orders, n, resp.topics[i].name, resp.topics[i].error_code, resp.topics[i].error_message);
    }
    kiq_client_close(c);
}

void kiq_controller_link_create_partitions(kiq_broker_t *b, kiq_topic_order_t *orders, int n, bool validate_only,
                                           int timeout_ms, kiq_arena_t *arena)
{
    if (n <= 0) return;
    if (b->controller) {
        decide_here(b, orders, n, validate_only, arena, create_partitions_here);
        return;
    }
    kiq_client_conn_t *c = connect_controller(b, timeout_ms);
    if (!c) {
        fail_all(orders, n, arena);
        return;
    }
    kiq_create_partitions_request_t req;
    kiq_create_partitions_request_init(&req);
    req.topics = kiq_arena_calloc(arena, (size_t)n, sizeof *req.topics);
    req.topics_n = n;
    for (int i = 0; i < n; i++) {
        kiq_create_partitions_request_topics_init(&req.topics[i]);
        req.topics[i].name = orders[i].name;
        req.topics[i].count = orders[i].partitions;
        req.topics[i].assignments = (kiq_create_partitions_request_topics_assignments_t *)orders[i].assignments;
        req.topics[i].assignments_n = orders[i].nassignments;
    }
    awaiting(orders, n);
    req.timeout_ms = timeout_ms;
    req.validate_only = validate_only;
    kiq_create_partitions_response_t resp;
    if (kiq_client_request(c, KIQ_API_CREATE_PARTITIONS, -1, &req, arena, &resp, timeout_ms) != 0) {
        fail_all(orders, n, arena);
    } else {
        for (int32_t i = 0; i < resp.results_n; i++)
            answered(orders, n, resp.results[i].name, resp.results[i].error_code, resp.results[i].error_message);
    }
    kiq_client_close(c);
}

void kiq_controller_link_elect_leaders(kiq_broker_t *b, const kiq_elect_leaders_request_t *req, int timeout_ms,
                                       kiq_arena_t *arena, kiq_elect_leaders_response_t *resp)
{
    if (b->controller) {
        kiq_error_clear();
        kiq_controller_elect_leaders(b->controller, arena, req, resp);
        return;
    }
    kiq_client_conn_t *c = connect_controller(b, timeout_ms);
    if (!c || kiq_client_request(c, KIQ_API_ELECT_LEADERS, -1, req, arena, resp, timeout_ms) != 0) {
        kiq_elect_leaders_response_init(resp);
        resp->error_code = KIQ_ERR_REQUEST_TIMED_OUT;
    }
    kiq_client_close(c);
}

int kiq_controller_link_allocate_producer_ids(kiq_broker_t *b, int timeout_ms, int64_t *start, int64_t *len)
{
    int64_t epoch = b->lifecycle ? kiq_broker_lifecycle_epoch(b->lifecycle) : -1;
    if (epoch < 0) return kiq_error_set("broker %d is not registered with the controller yet", b->node_id);
    kiq_allocate_producer_ids_request_t req;
    kiq_allocate_producer_ids_request_init(&req);
    req.broker_id = b->node_id;
    req.broker_epoch = epoch;
    kiq_allocate_producer_ids_response_t resp;
    kiq_allocate_producer_ids_response_init(&resp);
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    int rc = 0;
    if (b->controller) {
        kiq_controller_allocate_producer_ids(b->controller, &req, &resp);
    } else {
        kiq_client_conn_t *c = connect_controller(b, timeout_ms);
        rc = c ? kiq_client_request(c, KIQ_API_ALLOCATE_PRODUCER_IDS, -1, &req, &arena, &resp, timeout_ms) : -1;
        kiq_client_close(c);
    }
    kiq_arena_reset(&arena);
    if (rc != 0) return kiq_error_set("cannot reach the controller for producer ids: %s", kiq_error_get());
    if (resp.error_code || resp.producer_id_len <= 0)
        return kiq_error_set("the controller gave no producer ids (error %d)", resp.error_code);
    *start = resp.producer_id_start;
    *len = resp.producer_id_len;
    return 0;
}

void kiq_controller_link_change_configs(kiq_broker_t *b, int16_t api_key, const void *req, kiq_config_order_t *orders,
                                        int n, bool validate_only, int timeout_ms, kiq_arena_t *arena)
{
    kiq_error_clear();
    if (b->controller) {
        kiq_controller_change_configs(b->controller, arena, orders, n, validate_only);
        return;
    }
    /* both responses list the resources in the request's order, alike */
    union {
        kiq_alter_configs_response_t alter;
        kiq_incremental_alter_configs_response_t incremental;
    } resp;
    kiq_client_conn_t *c = connect_controller(b, timeout_ms);
    bool ok = c && kiq_client_request(c, api_key, -1, req, arena, &resp, timeout_ms) == 0;
    kiq_client_close(c);
    kiq_str_t why = ok ? KIQ_STR("the controller left the resource out of its answer") : error_text(arena);
    for (int i = 0; i < n; i++) {
        orders[i].error = ok ? KIQ_ERR_UNKNOWN_SERVER_ERROR : KIQ_ERR_REQUEST_TIMED_OUT;
        orders[i].message = why;
        if (!ok) continue;
        if (api_key == KIQ_API_ALTER_CONFIGS && i < resp.alter.responses_n) {
            orders[i].error = resp.alter.responses[i].error_code;
            orders[i].message = resp.alter.responses[i].error_message;
        } else if (api_key == KIQ_API_INCREMENTAL_ALTER_CONFIGS && i < resp.incremental.responses_n) {
            orders[i].error = resp.incremental.responses[i].error_code;
            orders[i].message = resp.incremental.responses[i].error_message;
        }
    }
}

void kiq_controller_link_delete_topics(kiq_broker_t *b, kiq_topic_order_t *orders, int n, int timeout_ms,
                                       kiq_arena_t *arena)
{
    if (n <= 0) return;
    if (b->controller) {
        decide_here(b, orders, n, false, arena, delete_topic_here);
        return;
    }
    kiq_client_conn_t *c = connect_controller(b, timeout_ms);
    if (!c) {
        fail_all(orders, n, arena);
        return;
    }
    int16_t v = kiq_client_version(c, KIQ_API_DELETE_TOPICS);
    kiq_delete_topics_request_t req;
    kiq_delete_topics_request_init(&req);
    /* names travel in topic_names up to v5 and in topics from v6 */
    if (v >= 6) {
        req.topics = kiq_arena_calloc(arena, (size_t)n, sizeof *req.topics);
        req.topics_n = n;
    } else {
        req.topic_names = kiq_arena_calloc(arena, (size_t)n, sizeof *req.topic_names);
        req.topic_names_n = n;
    }
    for (int i = 0; i < n; i++) {
        if (v >= 6) {
            kiq_delete_topics_request_topics_init(&req.topics[i]);
            req.topics[i].name = orders[i].name;
        } else {
            req.topic_names[i] = orders[i].name;
        }
    }
    awaiting(orders, n);
    req.timeout_ms = timeout_ms;
    kiq_delete_topics_response_t resp;
    if (v < 0 || kiq_client_request(c, KIQ_API_DELETE_TOPICS, v, &req, arena, &resp, timeout_ms) != 0) {
        if (v < 0) kiq_error_set("the controller at %s does not serve DeleteTopics", kiq_client_peer(c));
        fail_all(orders, n, arena);
    } else {
        for (int32_t i = 0; i < resp.responses_n; i++)
            answered(orders, n, resp.responses[i].name, resp.responses[i].error_code,
                     resp.responses[i].error_message);
    }
    kiq_client_close(c);
}
