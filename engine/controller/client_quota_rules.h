/* Kafka's rules for client quotas, over a store (the controller's image,
 * or a standalone broker's own): which AlterClientQuotas changes are
 * accepted (its ClientQuotaControlManager's checks of entities, keys and
 * values; an entity's changes all or none, unchanged values and removals
 * of what is not there left out) and which entities a DescribeClientQuotas
 * filter matches. Pure: the caller guards the store. */
#ifndef KIQ_CONTROLLER_CLIENT_QUOTA_RULES_H
#define KIQ_CONTROLLER_CLIENT_QUOTA_RULES_H

#include <stddef.h>

#include "controller/client_quotas.h"
#include "core/arena.h"
#include "proto/messages.h"

/* One accepted change: as a record, and its entity (names in the arena). */
typedef struct kiq_client_quota_change {
    kiq_client_quota_record_t record;
    kiq_quota_entity_t entity;
    int entry; /* the request entry (and response entry) it is part of */
} kiq_client_quota_change_t;

/* Fills out with one entry per request entry (refused ones with Kafka's
 * error and message) and *changes with what the others change, all in a. */
void kiq_client_quotas_plan(const kiq_client_quota_store_t *store, const kiq_alter_client_quotas_request_t *req,
                            kiq_arena_t *a, kiq_alter_client_quotas_response_t *out, kiq_client_quota_change_t **changes,
                            size_t *nchanges);
/* The entries the request's filter matches, or its refusal (error code,
 * message, null entries). */
void kiq_client_quotas_describe(const kiq_client_quota_store_t *s, const kiq_describe_client_quotas_request_t *req,
                                kiq_arena_t *a, kiq_describe_client_quotas_response_t *out);

#endif
