/* Client quotas where they live for this broker: a cluster broker's are
 * its controller's (a node hosting none neither has them nor throttles); a
 * standalone broker is its own controller: it decides AlterClientQuotas by
 * the same rules and keeps its quotas in its first log directory
 * (.broker-configs/client-quotas: the ClientQuotaRecords Kafka's
 * controller would write, each framed as in the metadata log and preceded
 * by its length), rewritten whole at each change before the answer.
 *
 * Any thread: the broker's quotas_mu guards the standalone store. */
#ifndef KIQ_SERVER_BROKER_QUOTAS_H
#define KIQ_SERVER_BROKER_QUOTAS_H

#include "include/kafkaiq.h"
#include "proto/messages.h"
#include "server/quota_manager.h"

/* Standalone, at start: the saved quotas. 0, or -1 with the reason (an
 * unreadable or malformed file). */
int kiq_broker_quotas_load(kiq_broker_t *b);
/* Standalone AlterClientQuotas: planned by Kafka's rules, applied and
 * saved (not when validate_only); a failed save answers each changed
 * entity UNKNOWN_SERVER_ERROR and changes nothing. */
void kiq_broker_quotas_alter(kiq_broker_t *b, const kiq_alter_client_quotas_request_t *req, kiq_arena_t *a,
                             kiq_alter_client_quotas_response_t *out);
/* Standalone DescribeClientQuotas. */
void kiq_broker_quotas_describe(kiq_broker_t *b, const kiq_describe_client_quotas_request_t *req, kiq_arena_t *a,
                                kiq_describe_client_quotas_response_t *out);
/* A cluster's broker hosting no controller: the client quotas the
 * controller's UpdateMetadata carries replace the ones it had. */
void kiq_broker_quotas_pushed(kiq_broker_t *b, const kiq_update_metadata_request_t *req);
/* The source the broker's quota manager looks quotas up in (ctx: b). */
extern const kiq_quota_source_ops_t kiq_broker_quota_source;

#endif
