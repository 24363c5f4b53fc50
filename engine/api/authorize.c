/* The authorizer's questions from handlers; see authorize.h. */
#include "api/authorize.h"

#include "core/say.h"
#include "security/authorizer.h"

static bool unchecked(const kiq_broker_t *b, const kiq_request_t *r)
{
    return !b->authorizer || r->listener == KIQ_LISTENER_CONTROL;
}

bool kiq_api_allowed(kiq_broker_t *b, const kiq_request_t *r, int8_t op, int8_t resource_type, kiq_str_t name)
{
    if (unchecked(b, r)) return true;
    kiq_acl_request_t q = {r->principal, r->host, op, resource_type, name.p ? name : KIQ_STR("")};
    const char *why = NULL;
    if (kiq_authorizer_authorize(b->authorizer, &q, &why) == KIQ_ACL_ALLOWED) return true;
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

bool kiq_api_allowed_any(kiq_broker_t *b, const kiq_request_t *r, int8_t op, int8_t resource_type)
{
    if (unchecked(b, r)) return true;
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
    if (unchecked(b, r))
        return resource_type == KIQ_RES_TOPIC ? KIQ_ACL_TOPIC_OPERATIONS
               : resource_type == KIQ_RES_GROUP ? KIQ_ACL_GROUP_OPERATIONS
                                                : KIQ_ACL_CLUSTER_OPERATIONS;
    kiq_acl_request_t q = {r->principal, r->host, KIQ_OP_ALL, resource_type, name.p ? name : KIQ_STR("")};
    return kiq_authorizer_operations(b->authorizer, &q, ops, n);
}
