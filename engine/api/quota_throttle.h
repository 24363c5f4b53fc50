/* Client quotas applied to a client's requests (see quota_throttle.c). */
#ifndef KIQ_API_QUOTA_THROTTLE_H
#define KIQ_API_QUOTA_THROTTLE_H

#include "server/broker.h"

/* Called as a request is dispatched: its response will be measured
 * against the client's quotas and throttled. */
void kiq_api_quota_watch(kiq_broker_t *b, kiq_request_t *r);

#endif
