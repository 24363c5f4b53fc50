/* Client quotas enforced as Kafka's ClientQuotaManagers do: for each quota
 * key, one sensor per entity a quota applies through (Kafka's metric tags:
 * the user and client id, blank where the matching entity has no such
 * part, so a user's quota is shared by all its clients), measuring a
 * sampled rate (quota.window.num windows of quota.window.size.seconds).
 * A recording that takes the rate past the bound is kept, and answered
 * with the time the client must wait for the rate to come back to it.
 *
 * The quotas come from the controller's image (kiq_controller_client_quota),
 * looked up again when its quotas version moves; a client without any
 * quota costs a lock and a map lookup. Any thread; mu guards the manager. */
#ifndef KIQ_SERVER_QUOTA_MANAGER_H
#define KIQ_SERVER_QUOTA_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "controller/client_quotas.h"
#include "metrics/registry.h"

struct kiq_controller;
typedef struct kiq_quota_manager kiq_quota_manager_t;

kiq_quota_manager_t *kiq_quota_manager_new(int samples, int64_t window_ms);
void kiq_quota_manager_free(kiq_quota_manager_t *qm);

/* One window's length (quota.window.size.seconds), in ms. */
int64_t kiq_quota_window_ms(const kiq_quota_manager_t *qm);

/* Records value (bytes, a request's share of a thread in percent, topic
 * mutations) for key against the quota that applies to user and
 * client_id, at now_ms; the throttle time in ms, 0 within the quota or
 * when none applies. max_ms > 0 bounds it (Kafka bounds the request
 * quota's to one window). */
int64_t kiq_quota_record(kiq_quota_manager_t *qm, struct kiq_controller *c, int key, const char *user,
                         const char *client_id, double value, int64_t max_ms, int64_t now_ms);
/* Whether the quota for key is already exceeded (a strict controller
 * mutation check, before anything is recorded); *throttle_ms how long
 * until it is not. */
bool kiq_quota_exceeded(kiq_quota_manager_t *qm, struct kiq_controller *c, int key, const char *user,
                        const char *client_id, int64_t now_ms, int64_t *throttle_ms);

/* Metrics source: per sensor Kafka's byte-rate / request-time /
 * mutation-rate and throttle-time, labelled user and client_id. */
void kiq_quota_metrics(void *qm, kiq_metric_out_t *o);

#endif
