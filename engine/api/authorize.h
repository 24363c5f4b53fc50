/* What handlers ask about a request's principal and host: the "authorize"
 * interceptors first (a Lua authorizer, beside the ACLs or instead of
 * them), then the broker's authorizer (security/authorizer.h). With
 * neither deciding, and on the control plane (controllers and brokers in
 * plaintext), everything is allowed. A refusal is logged (rate-limited)
 * with the reason the hook or the authorizer gave. Handler threads. */
#ifndef KIQ_API_AUTHORIZE_H
#define KIQ_API_AUTHORIZE_H

#include <stdbool.h>

#include "api/api.h"

bool kiq_api_allowed(kiq_broker_t *b, const kiq_request_t *r, int8_t op, int8_t resource_type, kiq_str_t name);
/* DESCRIBE on each topic named (a member's subscription): false when one
 * is refused; true for none or n < 0 (null). */
bool kiq_api_topics_describable(kiq_broker_t *b, const kiq_request_t *r, const kiq_str_t *names, int32_t n);
/* Whether anyone decides (an authorizer, an "authorize" hook): where none
 * does, every question is answered yes. */
bool kiq_api_authorizing(kiq_broker_t *b, const kiq_request_t *r);
bool kiq_api_cluster_allowed(kiq_broker_t *b, const kiq_request_t *r, int8_t op);
/* Kafka's answer to an ACL request where no authorizer is configured. */
#define KIQ_NO_AUTHORIZER_MESSAGE "No Authorizer is configured on the broker"
/* What refuses a CreateAcls or DeleteAcls before the controller decides:
 * SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED
 * without ALTER on the cluster, NOT_CONTROLLER where it arrived forwarded
 * at a controller no longer active; 0 when none does. */
int16_t kiq_api_acl_change_refusal(kiq_broker_t *b, const kiq_request_t *r);
/* Whether op is allowed on some resource of the type (Kafka's
 * authorizeByResourceType, e.g. WRITE on any topic for an idempotent
 * producer). */
bool kiq_api_allowed_any(kiq_broker_t *b, const kiq_request_t *r, int8_t op, int8_t resource_type);
/* The authorized-operations bitfield of a topic, group or the cluster. */
int32_t kiq_api_operations(kiq_broker_t *b, const kiq_request_t *r, int8_t resource_type, kiq_str_t name);

#endif
