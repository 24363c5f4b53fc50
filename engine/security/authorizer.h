/* The broker's authorizer, as Kafka's StandardAuthorizer decides:
 * super.users are allowed everything, then the cluster's ACL bindings
 * (security/acl.h) with allow.everyone.if.no.acl.found. (A Lua authorizer,
 * an interceptor, is asked before it: api/authorize.c.)
 *
 * Built on the thread building the broker, read-only once it serves; the
 * decisions run on handler threads, each over the bindings' current
 * published snapshot (security/acl_snapshot.h), taken without a lock any
 * writer holds. */
#ifndef KIQ_SECURITY_AUTHORIZER_H
#define KIQ_SECURITY_AUTHORIZER_H

#include <stdbool.h>

#include "config/config.h"
#include "security/acl.h"
#include "security/acl_snapshot.h"

typedef struct kiq_authorizer kiq_authorizer_t;

/* The cluster's bindings as this node has them now, referenced (the
 * authorizer releases it). */
typedef kiq_acl_snapshot_t *(*kiq_acl_snapshot_fn)(void *ctx);

/* The class name Kafka's KRaft brokers use; the only one taken. */
#define KIQ_STANDARD_AUTHORIZER "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

/* From authorizer.class.name, super.users, allow.everyone.if.no.acl.found:
 * *out NULL when no authorizer is configured (everything allowed). -1 with
 * the reason for another class name or a super user that is no principal. */
int kiq_authorizer_new(const kiq_config_t *c, kiq_acl_snapshot_fn snapshot, void *ctx, kiq_authorizer_t **out);
void kiq_authorizer_free(kiq_authorizer_t *a);

bool kiq_authorizer_is_super(const kiq_authorizer_t *a, const char *principal);
/* One decision; *reason (may be NULL) says why. */
enum kiq_acl_decision kiq_authorizer_authorize(const kiq_authorizer_t *a, const kiq_acl_request_t *q,
                                               const char **reason);
/* Whether any resource of q's type allows q's operation (Kafka's
 * authorizeByResourceType). */
bool kiq_authorizer_authorize_any(const kiq_authorizer_t *a, const kiq_acl_request_t *q);
/* The bitfield of ops allowed on q's resource. */
int32_t kiq_authorizer_operations(const kiq_authorizer_t *a, const kiq_acl_request_t *q, const int8_t *ops,
                                  size_t nops);

#endif
