/* ACL bindings with Kafka's StandardAuthorizer semantics: resource types,
 * LITERAL and PREFIXED patterns and the wildcard name "*", ALLOW and DENY
 * with DENY winning, DESCRIBE implied by READ/WRITE/DELETE/ALTER and
 * DESCRIBE_CONFIGS by ALTER_CONFIGS (for ALLOW bindings only), principals
 * "Type:name" with the wildcard "User:*", hosts as an IP or "*".
 *
 * A store is a plain value: guarded by whoever holds it (the controller's
 * metadata image holds the cluster's). The functions are pure. */
#ifndef KIQ_SECURITY_ACL_H
#define KIQ_SECURITY_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/uuid.h"
#include "proto/types.h"

/* Kafka's codes on the wire and in records. */
enum kiq_acl_resource_type {
    KIQ_RES_UNKNOWN = 0, KIQ_RES_ANY = 1, KIQ_RES_TOPIC = 2, KIQ_RES_GROUP = 3, KIQ_RES_CLUSTER = 4,
    KIQ_RES_TRANSACTIONAL_ID = 5, KIQ_RES_DELEGATION_TOKEN = 6, KIQ_RES_USER = 7,
};
enum kiq_acl_pattern_type {
    KIQ_PAT_UNKNOWN = 0, KIQ_PAT_ANY = 1, KIQ_PAT_MATCH = 2, KIQ_PAT_LITERAL = 3, KIQ_PAT_PREFIXED = 4,
};
enum kiq_acl_operation {
    KIQ_OP_UNKNOWN = 0, KIQ_OP_ANY = 1, KIQ_OP_ALL = 2, KIQ_OP_READ = 3, KIQ_OP_WRITE = 4, KIQ_OP_CREATE = 5,
    KIQ_OP_DELETE = 6, KIQ_OP_ALTER = 7, KIQ_OP_DESCRIBE = 8, KIQ_OP_CLUSTER_ACTION = 9,
    KIQ_OP_DESCRIBE_CONFIGS = 10, KIQ_OP_ALTER_CONFIGS = 11, KIQ_OP_IDEMPOTENT_WRITE = 12,
    KIQ_OP_CREATE_TOKENS = 13, KIQ_OP_DESCRIBE_TOKENS = 14, KIQ_OP_TWO_PHASE_COMMIT = 15,
};
enum kiq_acl_permission { KIQ_PERM_UNKNOWN = 0, KIQ_PERM_ANY = 1, KIQ_PERM_DENY = 2, KIQ_PERM_ALLOW = 3 };

/* The cluster resource's only name. */
#define KIQ_ACL_CLUSTER_NAME "kafka-cluster"
/* The wildcard resource name of a LITERAL binding, and the any-user principal. */
#define KIQ_ACL_WILDCARD "*"
#define KIQ_ACL_ANY_USER "User:*"

typedef struct kiq_acl {
    kiq_uuid_t id;
    int8_t resource_type, pattern_type, operation, permission;
    char *resource_name, *principal, *host;
} kiq_acl_t;

/* A filter as Describe/DeleteAcls send it: codes may be ANY (pattern ANY or
 * MATCH), names NULL for any. */
typedef struct kiq_acl_filter {
    int8_t resource_type, pattern_type, operation, permission;
    kiq_str_t resource_name, principal, host; /* p NULL: any */
} kiq_acl_filter_t;

typedef struct kiq_acl_store {
    kiq_acl_t *acls; /* in the order added */
    size_t n, cap;
} kiq_acl_store_t;

/* NULL when the binding is one a controller can keep, else Kafka's reason
 * (answered with INVALID_REQUEST). */
const char *kiq_acl_invalid(int8_t resource_type, kiq_str_t resource_name, int8_t pattern_type, kiq_str_t principal,
                            kiq_str_t host, int8_t operation, int8_t permission);
/* NULL when the filter can match, else Kafka's reason. */
const char *kiq_acl_filter_invalid(const kiq_acl_filter_t *f);
bool kiq_acl_filter_matches(const kiq_acl_filter_t *f, const kiq_acl_t *a);
/* Whether a and the described binding are the same (ids aside). */
bool kiq_acl_same(const kiq_acl_t *a, int8_t resource_type, kiq_str_t resource_name, int8_t pattern_type,
                  kiq_str_t principal, kiq_str_t host, int8_t operation, int8_t permission);

void kiq_acl_store_clear(kiq_acl_store_t *s);
/* Copies the binding in; 0, or -1 when out of memory. */
int kiq_acl_store_add(kiq_acl_store_t *s, const kiq_acl_t *a);
/* 0 when removed, 1 when no binding has that id. */
int kiq_acl_store_remove(kiq_acl_store_t *s, const kiq_uuid_t *id);

/* One decision. */
typedef struct kiq_acl_request {
    const char *principal; /* "User:alice" */
    const char *host;      /* the client's IP */
    int8_t operation;
    int8_t resource_type;
    kiq_str_t resource_name;
} kiq_acl_request_t;

enum kiq_acl_decision { KIQ_ACL_DENIED = 0, KIQ_ACL_ALLOWED = 1 };

/* StandardAuthorizer's answer from the bindings alone (super users are the
 * caller's): a matching DENY denies, else a matching ALLOW allows, else
 * allow_if_none decides where no binding names the resource at all, and
 * otherwise it is denied. *why (may be NULL) gets a short reason. */
enum kiq_acl_decision kiq_acl_authorize(const kiq_acl_store_t *s, const kiq_acl_request_t *q, bool allow_if_none,
                                        const char **why);
/* Whether some resource of q's type (name ignored) allows q's operation to
 * q's principal and host, as Kafka's authorizeByResourceType decides: an
 * ALLOW binding of any pattern, unless a DENY binding on the wildcard or a
 * prefix/literal covering it denies that pattern. */
bool kiq_acl_authorize_any(const kiq_acl_store_t *s, const kiq_acl_request_t *q, bool allow_if_none);

/* The bitfield (bit = operation code) of ops allowed to q's principal on q's
 * resource, from the candidate list (q->operation ignored). */
int32_t kiq_acl_operations(const kiq_acl_store_t *s, const kiq_acl_request_t *q, bool allow_if_none,
                           const int8_t *ops, size_t nops);

/* Kafka's names ("TOPIC", "READ", "ALLOW"), for logs. */
const char *kiq_acl_resource_name(int8_t t);
const char *kiq_acl_operation_name(int8_t op);

#endif
