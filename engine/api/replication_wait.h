/* A coordinator's write answered once it is replicated: the request waits
 * in the purgatory until the partition's high watermark covers the write
 * (at once when the leader is alone in the ISR), so an acknowledged commit
 * or transaction state survives a coordinator failover. */
#ifndef KIQ_API_REPLICATION_WAIT_H
#define KIQ_API_REPLICATION_WAIT_H

#include "api/api.h"

/* How long a coordinator's write may take to replicate before the answer
 * says so: Kafka's request.timeout.ms. */
#define KIQ_API_COORDINATOR_WRITE_TIMEOUT_MS 30000

/* One partition a write went to and the high watermark that covers it. */
typedef struct kiq_api_replication_need {
    const char *topic; /* a name the request's arena (or static storage) holds */
    int32_t partition;
    int64_t need; /* < 0: nothing written */
} kiq_api_replication_need_t;

/* I/O thread: resp answers r once partition `partition` of topic (a name
 * with static storage) has its high watermark at need or more; when that
 * takes longer than timeout_ms, or the leadership the write was made in
 * ends first (a new leader may have cut it), timed_out(resp) marks the
 * answer first.
 * KIQ_HANDLER_RESPOND when it is replicated already (or need < 0: nothing
 * written), else KIQ_HANDLER_PARKED (r is the purgatory's). */
int kiq_api_respond_when_replicated(kiq_broker_t *b, kiq_request_t *r, void *resp, const char *topic,
                                    int32_t partition, int64_t need, int64_t timeout_ms,
                                    void (*timed_out)(void *resp));
/* The same for writes to several partitions (needs copied): resp answers
 * once every one is replicated. */
int kiq_api_respond_when_all_replicated(kiq_broker_t *b, kiq_request_t *r, void *resp,
                                        const kiq_api_replication_need_t *needs, int n, int64_t timeout_ms,
                                        void (*timed_out)(void *resp));

#endif
