/* A replica fetcher: one thread pulling, as a follower, the partitions this
 * broker follows on one leader broker, with Fetch requests carrying our
 * broker id as replica_id (Kafka's ReplicaFetcherThread). Appends what it
 * gets at the leader's offsets, takes the leader's high watermark (capped
 * at what it has), and truncates where the leader says the logs diverge
 * (Fetch v12 diverging_epoch). The partition list is guarded by the
 * fetcher's mutex; every function is callable from any thread. */
#ifndef KIQ_REPLICA_REPLICA_FETCHER_H
#define KIQ_REPLICA_REPLICA_FETCHER_H

#include <stdint.h>

#include "log/topics.h"
#include "metrics/registry.h"

typedef struct kiq_replica_fetcher kiq_replica_fetcher_t;

typedef struct kiq_replica_fetcher_config {
    int32_t self;      /* our broker id, sent as replica_id */
    int32_t leader;    /* the broker fetched from */
    const char *host;  /* its client listener */
    int port;
    int max_wait_ms;   /* replica.fetch.wait.max.ms */
    int max_bytes;     /* replica.fetch.max.bytes, per partition */
    int index;         /* of num.replica.fetchers for this leader, for names */
    kiq_metrics_t *metrics; /* its line to the leader reports there (NULL: nowhere) */
    const struct kiq_peer_security *security; /* TLS and SASL toward it; NULL: plaintext */
} kiq_replica_fetcher_config_t;

/* Starts the thread. NULL with the reason. */
kiq_replica_fetcher_t *kiq_replica_fetcher_new(const kiq_replica_fetcher_config_t *cfg);
/* Stops (interrupting a fetch in flight) and joins; releases the topics. */
void kiq_replica_fetcher_free(kiq_replica_fetcher_t *f);
/* Follows topic's partition from now on (takes a reference on topic). */
int kiq_replica_fetcher_add(kiq_replica_fetcher_t *f, kiq_topic_t *topic, int32_t partition);
/* Stops following it; true when it was followed here. */
bool kiq_replica_fetcher_remove(kiq_replica_fetcher_t *f, const kiq_topic_t *topic, int32_t partition);
int kiq_replica_fetcher_count(kiq_replica_fetcher_t *f);
/* Any thread: its largest lag behind the leader's high watermark in the
 * last answer, in offsets. */
int64_t kiq_replica_fetcher_max_lag(kiq_replica_fetcher_t *f);
/* Cuts the connection to the leader (Lua's link control, tests); the
 * fetcher reconnects after its backoff unless paused. */
void kiq_replica_fetcher_pause(kiq_replica_fetcher_t *f, bool paused);

#endif
