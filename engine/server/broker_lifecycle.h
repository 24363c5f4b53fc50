/* A cluster-mode broker's standing with the controller (KRaft's broker
 * lifecycle): one thread connects to the controller's control-plane
 * listener, registers (BrokerRegistration v2: id, cluster id, a fresh
 * incarnation id per start, the client and control-plane listeners, the
 * log directories' ids) and then heartbeats (BrokerHeartbeat v0) every
 * broker.heartbeat.interval.ms. A heartbeat error (a stale epoch, an
 * unknown broker) means registering again; a lost connection means
 * reconnecting with a growing backoff. A registration refused as
 * DUPLICATE_BROKER_REGISTRATION for longer than broker.session.timeout.ms
 * (so not a restart waiting out its old session) is given up: another
 * live process has this broker.id (kiq_broker_lifecycle_gave_up).
 *
 * Started at the end of kiq_broker_start (the listeners are bound, so
 * their ports are known), freed at the start of the shutdown. The thread
 * owns the connection; lc->mu guards the shared fields. */
#ifndef KIQ_SERVER_BROKER_LIFECYCLE_H
#define KIQ_SERVER_BROKER_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/arena.h"
#include "core/uuid.h"
#include "metrics/registry.h"
#include "proto/messages.h"
#include "server/broker_startup.h"

typedef struct kiq_broker_lifecycle kiq_broker_lifecycle_t;

/* Log directories a registration names at most. */
#define KIQ_BROKER_MAX_LOG_DIRS 64

/* Who the broker is to the controller: what it registers with and where
 * the controller is. Strings are the broker's, fixed while it runs. */
typedef struct kiq_broker_identity {
    int32_t node_id;
    const char *cluster_id;
    kiq_uuid_t incarnation; /* fresh per start */
    const char *advertised_host; /* clients' listener */
    int advertised_port;
    bool has_control_plane;
    const char *control_host; /* "" for the advertised host */
    int control_port;
    /* the active controller as the broker last knows it: its id and
     * address (valid while the broker runs); read before each request */
    int32_t (*controller)(void *ctx, const char **host, int *port);
    /* the controller above could not be reached or is not the active one:
     * the broker looks for it at the next voter */
    void (*not_there)(void *ctx, int32_t controller);
    const kiq_config_t *config;
    kiq_broker_startup_t *startup; /* the broker's: registered and ready are stamped here */
    kiq_uuid_t log_dirs[KIQ_BROKER_MAX_LOG_DIRS]; /* their directory.id */
    int nlog_dirs;
    kiq_metrics_t *metrics; /* the broker's: the line to the controller reports there */
    const struct kiq_peer_security *security; /* TLS and SASL toward it (the broker's); NULL: plaintext */
    /* on the lifecycle thread after each registration, with its epoch */
    void (*registered)(void *ctx, int64_t broker_epoch);
    void *ctx;
} kiq_broker_identity_t;

/* Starts the thread for a started broker in cluster mode; the identity is
 * copied. NULL with the reason. */
kiq_broker_lifecycle_t *kiq_broker_lifecycle_new(const kiq_broker_identity_t *id);
/* Stops the thread (a blocked request fails at once) and frees lc; NULL is
 * fine. Any thread but the lifecycle's. */
void kiq_broker_lifecycle_free(kiq_broker_lifecycle_t *lc);
/* A clean stop's controlled shutdown: stops heartbeating, then tells the
 * controller (BrokerHeartbeat want_shut_down), which fences the broker and
 * moves its leaderships before it goes, instead of a session timeout
 * later. Bounded by the request timeout; call before _free. Not for a
 * paused broker (it is meant to look dead). */
void kiq_broker_lifecycle_shut_down(kiq_broker_lifecycle_t *lc);

/* Any thread: stops (paused) or resumes heartbeating. A paused broker
 * looks dead to the controller, which fences it after
 * broker.session.timeout.ms. */
void kiq_broker_lifecycle_pause(kiq_broker_lifecycle_t *lc, bool paused);

/* Any thread: the epoch of the current registration, -1 while none. */
int64_t kiq_broker_lifecycle_epoch(kiq_broker_lifecycle_t *lc);
/* Any thread: whether the last heartbeat's answer said fenced (true until
 * one said otherwise). */
bool kiq_broker_lifecycle_fenced(kiq_broker_lifecycle_t *lc);
/* Any thread: why the broker gave up on joining the cluster (its id is
 * another live process's), or NULL while it has not. */
const char *kiq_broker_lifecycle_gave_up(kiq_broker_lifecycle_t *lc);
/* Any thread: blocks until registered or timeout_ms passes (< 0:
 * forever); true when registered. */
bool kiq_broker_lifecycle_wait_registered(kiq_broker_lifecycle_t *lc, int timeout_ms);

/* The registration this broker sends, built into arena (listeners:
 * PLAINTEXT = the advertised client address, then the control-plane
 * listener under its configured name; no features, no rack). */
void kiq_broker_lifecycle_registration(const kiq_broker_identity_t *id, kiq_arena_t *arena,
                                       kiq_broker_registration_request_t *req);

#endif
