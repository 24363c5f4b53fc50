/* Client quotas applied to a client's requests (see quota_throttle.c). */
#ifndef KIQ_API_QUOTA_THROTTLE_H
#define KIQ_API_QUOTA_THROTTLE_H

#include "server/broker.h"

/* Called as a request is dispatched: its response will be measured
 * against the client's quotas and throttled. */
void kiq_api_quota_watch(kiq_broker_t *b, kiq_request_t *r);

/* A client's topic change of `partitions` partitions against its
 * controller_mutation_rate (KIP-599): strict (the versions that may answer
 * THROTTLING_QUOTA_EXCEEDED) refuses it while the quota is exceeded, else
 * it is recorded, possibly past the quota; either way the request's
 * throttle grows to the quota's. 0 or THROTTLING_QUOTA_EXCEEDED. Handler
 * threads, while they hold r. */
int16_t kiq_api_mutation_quota(kiq_broker_t *b, kiq_request_t *r, int32_t partitions, bool strict);

#endif
