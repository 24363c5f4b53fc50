/* Client quotas enforced as Kafka's ClientQuotaManagers do: for each quota
 * key, one sensor per entity a quota applies through (Kafka's metric tags:
 * the user and client id, blank where the matching entity has no such
 * part, so a user's quota is shared by all its clients), measuring a
 * sampled rate (quota.window.num windows of quota.window.size.seconds).
 * A recording that takes the rate past the bound is kept, and answered
 * with the time the client must wait for the rate to come back to it.
 *
 * The quotas come from a source (the controller's image, or a standalone
 * broker's own store: server/broker_quotas.h), looked up again when its
 * version moves; a client without any quota costs a lock and a map
 * lookup, and while no client has a quota for a key, a recording for it
 * costs no lock at all. Any thread; mu guards the manager. */
#ifndef KIQ_SERVER_QUOTA_MANAGER_H
#define KIQ_SERVER_QUOTA_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/client_quotas.h"
#include "metrics/registry.h"

typedef struct kiq_quota_manager kiq_quota_manager_t;

/* Where quotas are looked up; any thread. */
typedef struct kiq_quota_source_ops {
    /* moves whenever the quotas may have changed */
    uint64_t (*version)(void *ctx);
    /* the quota for key that applies to user and client_id (Kafka's
     * precedence): 1 with *bound and which parts the matching entity has;
     * 0 when none */
    int (*lookup)(void *ctx, const char *user, const char *client_id, int key, double *bound, bool *by_user,
                  bool *by_client);
    /* whether any client has a quota for key (NULL: always looked up) */
    bool (*sets)(void *ctx, int key);
} kiq_quota_source_ops_t;

kiq_quota_manager_t *kiq_quota_manager_new(int samples, int64_t window_ms, const kiq_quota_source_ops_t *source,
                                           void *source_ctx);
void kiq_quota_manager_free(kiq_quota_manager_t *qm);

/* One window's length (quota.window.size.seconds), in ms. */
int64_t kiq_quota_window_ms(const kiq_quota_manager_t *qm);

/* Records value (bytes, a request's share of a thread in percent, topic
 * mutations) for key against the quota that applies to user and
 * client_id, at now_ms; the throttle time in ms, 0 within the quota or
 * when none applies (controller_mutation_rate: its token bucket's). max_ms > 0 bounds it (Kafka bounds the request
 * quota's to one window). */
int64_t kiq_quota_record(kiq_quota_manager_t *qm, int key, const char *user, const char *client_id, double value, int64_t max_ms, int64_t now_ms);
/* Whether the quota for key is already exceeded (a strict controller
 * mutation check, before anything is recorded: its token bucket below
 * zero); *throttle_ms how long until it is not. */
bool kiq_quota_exceeded(kiq_quota_manager_t *qm, int key, const char *user, const char *client_id, int64_t now_ms,
                        int64_t *throttle_ms);

/* Metrics source: per sensor Kafka's byte-rate / request-time /
 * mutation-rate and throttle-time, labelled user and client_id. */
void kiq_quota_metrics(void *qm, kiq_metric_out_t *o);

#endif
