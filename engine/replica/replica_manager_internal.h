/* The replica manager's insides, shared by its files: the fetchers and
 * the metadata it applies (replica_manager.c) and the ISR thread
 * (replica_isr.c). See replica_manager.h. */
#ifndef KIQ_REPLICA_REPLICA_MANAGER_INTERNAL_H
#define KIQ_REPLICA_REPLICA_MANAGER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/worker.h"
#include "net/peer_channel.h"
#include "replica/replica_fetcher.h"
#include "replica/replica_manager.h"

#define ALTER_PARTITION_VERSION 1 /* topics by name */
#define ALTER_TIMEOUT_MS 5000
#define ISR_CHECK_MAX_MS 500
#define LOST_REPORT_MS 5000

typedef struct fetcher_slot {
    int32_t leader;
    int index; /* of num.replica.fetchers */
    char host[256];
    int port;
    kiq_replica_fetcher_t *f;
} fetcher_slot_t;

typedef struct isr_expand {
    kiq_topic_t *topic; /* a reference */
    int32_t partition, replica;
} isr_expand_t;

/* A replica this broker cannot trust to write (its directory full or
 * offline, its log damaged), assigned to the LOST directory. */
typedef struct lost_replica {
    kiq_uuid_t topic_id;
    int32_t partition;
    int dir;
} lost_replica_t;

struct kiq_replica_manager {
    kiq_replica_context_t b; /* fixed */
    int nfetchers_per_leader;
    int64_t lag_ms;
    int fetch_wait_ms, fetch_max_bytes;
    /* the controller's accepted ISR changes of partitions led here, for metrics */
    atomic_uint_fast64_t isr_shrinks, isr_expands;
    /* the ISR thread's own: when the shrink check is next due, how often */
    int64_t next_shrink_ms, isr_interval_ms;
    pthread_mutex_t mu; /* guards everything below */
    kiq_worker_t *isr;  /* the ISR thread */
    fetcher_slot_t *slots;
    int nslots, slots_cap;
    int32_t *paused; /* leaders not fetched from */
    int npaused, paused_cap;
    isr_expand_t *expands;
    int nexpands, expands_cap;
    int32_t controller_epoch;
    bool running;  /* the ISR thread runs: expansions are queued */
    bool stopped;  /* shutting down: no more fetchers */
    /* the ISR thread's line to the controller (AlterPartition,
     * AssignReplicasToDirs), from new to free; stopped from any thread */
    kiq_peer_channel_t *line;
    int32_t line_controller; /* the controller the line points at, the ISR thread's */
    /* the ISR thread's own: the replicas last reported impaired, and when
     * they are said again (a restarted controller forgets them) */
    lost_replica_t *lost;
    int nlost;
    int64_t next_lost_report_ms;
};

/* Room in *arr (of *cap elements) for one more after n; false when out of memory. */
static inline bool kiq_rm_grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap) return true;
    int c = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p) return false;
    *arr = p;
    *cap = c;
    return true;
}

/* The ISR thread's round (core/worker): shrinks, expansions, impaired
 * replicas reported; returns when it is next due. */
int64_t kiq_rm_isr_round_due(void *arg);

#endif
