/* The authorizer's questions from handlers; see authorize.h. */
#include "api/authorize.h"

#include <stdio.h>

#include "core/say.h"
#include "security/authorizer.h"

/* A Lua authorizer (the "authorize" interceptors) first, then the ACLs;
 * -1: nobody decides (no authorizer, no hook with a say). The control
 * plane, the nodes' own traffic, is the ACLs' alone: its principals are
 * the nodes' users (super users, or holding ClusterAction). */
static int decide(kiq_broker_t *b, const kiq_request_t *r, const kiq_acl_request_t *q, const char **why)
{
    if (r->listener != KIQ_LISTENER_CONTROL && kiq_interceptors_active(&b->interceptors, KIQ_HOOK_AUTHORIZE)) {
        int d = b->interceptors.ops->on_authorize(b->interceptors.ctx, r, q, why);
        if (d >= 0) return d;
    }
    return b->authorizer ? (int)kiq_authorizer_authorize(b->authorizer, q, why) : -1;
}

bool kiq_api_allowed(kiq_broker_t *b, const kiq_request_t *r, int8_t op, int8_t resource_type, kiq_str_t name)
{
    kiq_acl_request_t q = {r->principal, r->host, op, resource_type, name.p ? name : KIQ_STR("")};
    const char *why = NULL;
    if (decide(b, r, &q, &why) != KIQ_ACL_DENIED) return true;
    if (kiq_observers_want(&b->observers, KIQ_POINT_AUTHORIZATION_DENIED)) {
        char resource[256];
        snprintf(resource, sizeof resource, KIQ_STR_FMT, KIQ_STR_ARG(q.resource_name));
        kiq_event_t e = kiq_event(KIQ_POINT_AUTHORIZATION_DENIED, b->node_id);
        e.request = r;
        e.topic = resource;
        e.extra = op;
        e.records = resource_type;
        e.file = why ? why : "denied";
        kiq_observers_emit(&b->observers, &e);
    }
    KIQ_SAY_LIMITED_(KIQ_SAY_INFO, "authorizer: %s denied %s on %s:" KIQ_STR_FMT " from %s (%s %s): %s",
                     r->principal, kiq_acl_operation_name(op), kiq_acl_resource_name(resource_type),
                     KIQ_STR_ARG(q.resource_name), r->host, r->codec ? r->codec->name : "a request",
                     r->peer, why ? why : "denied");
    return false;
}

bool kiq_api_cluster_allowed(kiq_broker_t *b, const kiq_request_t *r, int8_t op)
{
    return kiq_api_allowed(b, r, op, KIQ_RES_CLUSTER, KIQ_STR(KIQ_ACL_CLUSTER_NAME));
}

int16_t kiq_api_acl_change_refusal(kiq_broker_t *b, const kiq_request_t *r)
{
    if (!b->authorizer) return KIQ_ERR_SECURITY_DISABLED;
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_ALTER)) return KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
    if (b->cluster && r->listener == KIQ_LISTENER_CONTROL && !kiq_broker_active_controller(b))
        return KIQ_ERR_NOT_CONTROLLER;
    return 0;
}

bool kiq_api_authorizing(kiq_broker_t *b, const kiq_request_t *r)
{
    return r->listener != KIQ_LISTENER_CONTROL &&
           (b->authorizer || kiq_interceptors_active(&b->interceptors, KIQ_HOOK_AUTHORIZE));
}

bool kiq_api_topics_describable(kiq_broker_t *b, const kiq_request_t *r, const kiq_str_t *names, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, names[i])) return false;
    return true;
}

bool kiq_api_allowed_any(kiq_broker_t *b, const kiq_request_t *r, int8_t op, int8_t resource_type)
{
    if (!b->authorizer || r->listener == KIQ_LISTENER_CONTROL) return true;
    kiq_acl_request_t q = {r->principal, r->host, op, resource_type, KIQ_STR("")};
    return kiq_authorizer_authorize_any(b->authorizer, &q);
}

int32_t kiq_api_operations(kiq_broker_t *b, const kiq_request_t *r, int8_t resource_type, kiq_str_t name)
{
    static const int8_t topic[] = {KIQ_OP_READ, KIQ_OP_WRITE, KIQ_OP_CREATE, KIQ_OP_DELETE, KIQ_OP_ALTER,
                                   KIQ_OP_DESCRIBE, KIQ_OP_DESCRIBE_CONFIGS, KIQ_OP_ALTER_CONFIGS};
    static const int8_t cluster[] = {KIQ_OP_CREATE, KIQ_OP_ALTER, KIQ_OP_DESCRIBE, KIQ_OP_CLUSTER_ACTION,
                                     KIQ_OP_DESCRIBE_CONFIGS, KIQ_OP_ALTER_CONFIGS, KIQ_OP_IDEMPOTENT_WRITE};
    static const int8_t group[] = {KIQ_OP_READ, KIQ_OP_DELETE, KIQ_OP_DESCRIBE, KIQ_OP_DESCRIBE_CONFIGS,
                                   KIQ_OP_ALTER_CONFIGS};
    const int8_t *ops = resource_type == KIQ_RES_TOPIC ? topic : resource_type == KIQ_RES_GROUP ? group : cluster;
    size_t n = resource_type == KIQ_RES_TOPIC ? sizeof topic : resource_type == KIQ_RES_GROUP ? sizeof group
                                                                                             : sizeof cluster;
    kiq_acl_request_t q = {r->principal, r->host, KIQ_OP_ALL, resource_type, name.p ? name : KIQ_STR("")};
    bool hooked = r->listener != KIQ_LISTENER_CONTROL && kiq_interceptors_active(&b->interceptors, KIQ_HOOK_AUTHORIZE);
    if (!hooked && b->authorizer && r->listener != KIQ_LISTENER_CONTROL)
        return kiq_authorizer_operations(b->authorizer, &q, ops, n);
    /* each op asked alone (a hook may answer any), nobody deciding: allowed */
    int32_t bits = 0;
    for (size_t i = 0; i < n; i++) {
        q.operation = ops[i];
        if (decide(b, r, &q, NULL) != KIQ_ACL_DENIED) bits |= (int32_t)1 << ops[i];
    }
    return bits;
}
