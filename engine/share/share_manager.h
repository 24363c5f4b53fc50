/* The share groups' state on this broker as partition leader (KIP-932):
 * a share-partition per (group, topic, partition) it was fetched from,
 * and the share sessions of the members fetching here (ShareFetch's and
 * ShareAcknowledge's ShareSessionEpoch: 0 opens, -1 closes, otherwise the
 * next in sequence), and the groups' own configs (group_configs.h). A
 * share-partition's state is also written to __share_group_state
 * (share_state.h), from where a restarted leader loads it; sessions and
 * group configs are in memory only.
 *
 * One mutex guards everything; callers take it with kiq_share_lock and
 * call the rest holding it. */
#ifndef KIQ_SHARE_SHARE_MANAGER_H
#define KIQ_SHARE_SHARE_MANAGER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/str_map.h"
#include "core/uuid.h"
#include "config/group_configs.h"
#include "share/share_partition.h"

/* One partition a share session fetches. */
typedef struct kiq_share_tp {
    kiq_uuid_t topic;
    int32_t partition;
} kiq_share_tp_t;

typedef struct kiq_share_session {
    uint64_t owner;      /* kiq_share_owner of the member id */
    int32_t next_epoch;  /* the epoch the member's next request carries */
    int64_t used_ms;     /* the caller's clock at its last request */
    kiq_share_tp_t *tps; /* in the order they were added */
    int n, cap;
} kiq_share_session_t;

typedef struct kiq_share_manager {
    pthread_mutex_t mu;
    kiq_str_map_t *parts;    /* group '\0' topic id partition -> kiq_share_partition_t */
    kiq_str_map_t *sessions; /* group '\0' member id -> kiq_share_session_t */
    kiq_str_map_t *configs;  /* group id -> kiq_group_configs_t (group_configs.h), those with any set */
} kiq_share_manager_t;

kiq_share_manager_t *kiq_share_manager_new(void);
void kiq_share_manager_free(kiq_share_manager_t *m);
void kiq_share_lock(kiq_share_manager_t *m);
void kiq_share_unlock(kiq_share_manager_t *m);

/* The group's share-partition, made (not started) when missing; NULL when
 * out of memory. */
kiq_share_partition_t *kiq_share_partition_get(kiq_share_manager_t *m, const char *group, int32_t glen,
                                               const kiq_uuid_t *topic, int32_t partition, int delivery_limit,
                                               int max_in_flight);
/* The share-partitions the group has here, as a list the caller frees;
 * NULL with *n 0 when none (or out of memory). */
kiq_share_tp_t *kiq_share_partitions_of(kiq_share_manager_t *m, const char *group, int32_t glen, int *n);
/* The group's share-partition, or NULL; dropped (freed): its state is
 * forgotten. */
kiq_share_partition_t *kiq_share_partition_find(kiq_share_manager_t *m, const char *group, int32_t glen,
                                                const kiq_uuid_t *topic, int32_t partition);
void kiq_share_partition_drop(kiq_share_manager_t *m, const char *group, int32_t glen, const kiq_uuid_t *topic,
                              int32_t partition);
/* The group's own configs, or NULL when it has none. */
const kiq_group_configs_t *kiq_share_group_configs(kiq_share_manager_t *m, const char *group, int32_t glen);
/* Every group's configs forgotten (the controller's are pushed whole). */
void kiq_share_group_configs_reset(kiq_share_manager_t *m);
/* The group's configs become c's (taken; none set: removed). 0 or -1. */
int kiq_share_group_configs_put(kiq_share_manager_t *m, const char *group, int32_t glen, kiq_group_configs_t *c);
/* The member's session, or NULL. */
kiq_share_session_t *kiq_share_session_find(kiq_share_manager_t *m, const char *group, int32_t glen,
                                            const char *member, int32_t mlen);
/* A new session for the member (epoch 0), replacing any; NULL when out of
 * memory. The replaced one's records go back (the caller's *released). */
kiq_share_session_t *kiq_share_session_open(kiq_share_manager_t *m, const char *group, int32_t glen,
                                            const char *member, int32_t mlen, int *released);
/* Closes the session least recently used, if that was before idle_ms
 * (its member gone without closing it): what it held goes back. Whether
 * there was one. */
bool kiq_share_session_evict_idle(kiq_share_manager_t *m, int64_t idle_ms);
/* Closes the member's session: what it holds of the session's partitions
 * goes back. Returns how many records. */
int kiq_share_session_close(kiq_share_manager_t *m, const char *group, int32_t glen, const char *member,
                            int32_t mlen);
/* Adds (once) or removes a partition of the session; add: 0 or -1. */
int kiq_share_session_add(kiq_share_session_t *s, const kiq_uuid_t *topic, int32_t partition);
void kiq_share_session_remove(kiq_share_session_t *s, const kiq_uuid_t *topic, int32_t partition);
/* The epoch after e (1 after INT32_MAX, as Kafka's sessions wrap). */
int32_t kiq_share_next_epoch(int32_t e);

#endif
