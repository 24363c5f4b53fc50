/* The share offset admin calls in a cluster (Describe/Alter/
 * DeleteShareGroupOffsets): a share-partition's state is its leader's, so
 * the group's coordinator answers what it leads itself and asks every other
 * live broker the same request as a broker (client id kafkaiq-broker-<id>),
 * which answers for the partitions it leads only and marks the others
 * NOT_LEADER_OR_FOLLOWER; each partition's answer is then its leader's. The
 * asks go on queued peer lines (broker->share_peers): the request is parked
 * and answered from the last callback, so no thread waits on a broker. */
#ifndef KIQ_API_SHARE_FANOUT_H
#define KIQ_API_SHARE_FANOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

/* Merges remote (another broker's answer, in its own arena) into response
 * (in arena); remote NULL: every answer is in, the last touches before it
 * goes to the client. Calls are serialized. */
typedef void (*kiq_share_fanout_merge_fn)(void *response, const void *remote, kiq_arena_t *arena);

/* Whether r comes from a live broker of this cluster (a coordinator's ask). */
bool kiq_api_share_from_broker(kiq_broker_t *b, const kiq_request_t *r);

/* The handler's return: asks the other live brokers request (r's api and
 * version) and answers response once all have answered or failed (a
 * failed one leaves its partitions as the local answer has them), merged
 * with merge; with no other broker to ask, merges NULL and answers now. */
int kiq_api_share_fanout(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response,
                         size_t response_size, kiq_share_fanout_merge_fn merge);

#endif
