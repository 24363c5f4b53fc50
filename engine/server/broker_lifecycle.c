#include "server/broker_lifecycle.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/cond.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "core/uuid.h"
#include "net/peer_channel.h"
#include "proto/errors.h"

enum {
    BACKOFF_MIN_MS = 50,
    BACKOFF_MAX_MS = 2000,
    CATCH_UP_MS = 2,  /* heartbeats while fenced, waiting for the metadata (a start's first moments) */
    STANDBY_MS = 5,   /* asks again of a voter not leading yet: an election is under way */
};

struct kiq_broker_lifecycle {
    kiq_broker_identity_t b; /* fixed */
    int32_t heartbeat_ms, request_timeout_ms;
    char client_id[32];
    /* registers, then heartbeats, each round returning the wait before
     * the next; poked by a pause change. Its state: */
    kiq_worker_t *worker;
    /* its line to the controller: the worker's, then (once the worker is
     * stopped) the controlled shutdown's; interrupted from any thread */
    kiq_peer_channel_t *line;
    char controller[300]; /* "host:port", for messages */
    int32_t line_controller; /* the controller the line points at */
    int backoff_ms;
    int last_refusal;
    bool standby; /* the last answer was NOT_CONTROLLER: an election is under way */
    int64_t refused_since; /* DUPLICATE_BROKER_REGISTRATION since then; 0: not refused so */
    bool warned_unreachable;

    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cond; /* CLOCK_MONOTONIC; stop and registration, for wait_registered */
    bool stop, paused, fenced;
    bool joined; /* the worker is gone (a controlled shutdown stopped it) */
    int64_t epoch;
    char gave_up[256]; /* why it stopped trying to register; "" while it has not */
};

void kiq_broker_lifecycle_registration(const kiq_broker_identity_t *b, kiq_arena_t *arena,
                                       kiq_broker_registration_request_t *req)
{
    kiq_broker_registration_request_init(req);
    req->broker_id = b->node_id;
    req->cluster_id = (kiq_str_t){kiq_arena_strndup(arena, b->cluster_id, strlen(b->cluster_id)),
                                  (int32_t)strlen(b->cluster_id)};
    req->incarnation_id = b->incarnation;
    int n = b->has_control_plane ? 2 : 1;
    kiq_broker_registration_request_listeners_t *l = kiq_arena_calloc(arena, (size_t)n, sizeof *l);
    kiq_broker_registration_request_listeners_init(&l[0]);
    l[0].name = KIQ_STR("PLAINTEXT");
    l[0].host = (kiq_str_t){kiq_arena_strndup(arena, b->advertised_host, strlen(b->advertised_host)),
                            (int32_t)strlen(b->advertised_host)};
    l[0].port = (uint16_t)b->advertised_port;
    if (n == 2) {
        const char *name = kiq_config_str(b->config, KIQ_CFG_CONTROL_PLANE_LISTENER_NAME);
        /* an every-interface control listener is reached where clients reach us */
        const char *host = *b->control_host ? b->control_host : b->advertised_host;
        kiq_broker_registration_request_listeners_init(&l[1]);
        l[1].name = (kiq_str_t){kiq_arena_strndup(arena, name, strlen(name)), (int32_t)strlen(name)};
        l[1].host = (kiq_str_t){kiq_arena_strndup(arena, host, strlen(host)), (int32_t)strlen(host)};
        l[1].port = (uint16_t)b->control_port;
    }
    req->listeners = l;
    req->listeners_n = n;
    req->features_n = 0;
    req->rack = KIQ_STR_NULL;
    req->log_dirs_n = b->nlog_dirs;
    req->log_dirs = kiq_arena_calloc(arena, (size_t)(b->nlog_dirs ? b->nlog_dirs : 1), sizeof *req->log_dirs);
    memcpy(req->log_dirs, b->log_dirs, (size_t)b->nlog_dirs * sizeof *req->log_dirs);
}

/* ---- the worker ---------------------------------------------------------- */

static void set_epoch(kiq_broker_lifecycle_t *lc, int64_t epoch)
{
    pthread_mutex_lock(&lc->mu);
    lc->epoch = epoch;
    if (epoch < 0) lc->fenced = true;
    pthread_cond_broadcast(&lc->cond);
    pthread_mutex_unlock(&lc->mu);
}

/* The controller refused the registration as a duplicate: a restart
 * waits out its previous process's session; past that (and a few
 * heartbeats), the id is another live process's. True when giving up. */
static bool duplicate(kiq_broker_lifecycle_t *lc, int64_t *refused_since)
{
    int64_t now = kiq_clock_mono_ns();
    if (!*refused_since) *refused_since = now;
    int64_t session_ms = kiq_config_int(lc->b.config, KIQ_CFG_BROKER_SESSION_TIMEOUT_MS);
    if ((now - *refused_since) / 1000000 <= session_ms + 3 * (int64_t)lc->heartbeat_ms) return false;
    pthread_mutex_lock(&lc->mu);
    snprintf(lc->gave_up, sizeof lc->gave_up,
             "broker.id %d is taken: another live broker process registered with it and heartbeats to the "
             "controller (DUPLICATE_BROKER_REGISTRATION for %lld ms); give this one another broker.id",
             lc->b.node_id, (long long)((now - *refused_since) / 1000000));
    lc->stop = true;
    pthread_mutex_unlock(&lc->mu);
    KIQ_ERROR("[KafkaIQ broker %d] %s", lc->b.node_id, lc->gave_up);
    return true;
}

/* 0 registered; 1 refused (logged once per distinct error); -1 the
 * connection failed. */
static int do_register(kiq_broker_lifecycle_t *lc, int16_t version, int *last_refusal, int64_t *refused_since)
{
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    kiq_broker_registration_request_t req;
    kiq_broker_registration_response_t resp;
    kiq_broker_lifecycle_registration(&lc->b, &arena, &req);
    int rc = kiq_peer_channel_request(lc->line, KIQ_API_BROKER_REGISTRATION, version, &req, &arena, &resp,
                                      lc->request_timeout_ms);
    lc->standby = rc == 0 && resp.error_code == KIQ_ERR_NOT_CONTROLLER;
    if (lc->standby) {
        rc = kiq_error_set("controller %s is not the active one", lc->controller); /* retried soon */
    } else if (rc == 0 && resp.error_code == KIQ_ERR_DUPLICATE_BROKER_REGISTRATION) {
        if (*last_refusal != resp.error_code)
            KIQ_WARN("[KafkaIQ broker %d] the controller at %s has broker %d registered by another live process; "
                     "waiting out its session", lc->b.node_id, lc->controller, lc->b.node_id);
        *last_refusal = resp.error_code;
        duplicate(lc, refused_since);
        rc = 1;
    } else if (rc == 0 && resp.error_code != KIQ_ERR_NONE) {
        if (resp.error_code != *last_refusal)
            KIQ_WARN("[KafkaIQ broker %d] the controller at %s refused the registration with error %d; retrying",
                     lc->b.node_id, lc->controller, resp.error_code);
        *last_refusal = resp.error_code;
        rc = 1;
    } else if (rc == 0) {
        KIQ_INFO("[KafkaIQ broker %d] registered with the controller at %s, broker epoch %lld", lc->b.node_id,
                 lc->controller, (long long)resp.broker_epoch);
        *last_refusal = 0;
        *refused_since = 0;
        set_epoch(lc, resp.broker_epoch);
        kiq_broker_startup_registered(lc->b.startup, resp.broker_epoch);
        if (lc->b.registered) lc->b.registered(lc->b.ctx, resp.broker_epoch);
    }
    kiq_arena_reset(&arena);
    return rc;
}

/* 0 alive; 1 the controller wants a new registration; -1 the connection
 * failed. */
static int do_heartbeat(kiq_broker_lifecycle_t *lc, int64_t epoch, bool shut_down)
{
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    kiq_broker_heartbeat_request_t req;
    kiq_broker_heartbeat_response_t resp;
    kiq_broker_heartbeat_request_init(&req);
    req.broker_id = lc->b.node_id;
    req.broker_epoch = epoch;
    req.current_metadata_offset = -1;
    /* as Kafka's: fenced until the broker holds the cluster's metadata, so
     * no client is told about leaders from a cache of before the restart */
    req.want_fence = !kiq_broker_startup_reached(lc->b.startup, KIQ_STARTUP_METADATA);
    req.want_shut_down = shut_down;
    int rc = kiq_peer_channel_request(lc->line, KIQ_API_BROKER_HEARTBEAT, 0, &req, &arena, &resp,
                                      lc->request_timeout_ms);
    lc->standby = rc == 0 && resp.error_code == KIQ_ERR_NOT_CONTROLLER;
    if (lc->standby) {
        /* a standby, or one that just lost the quorum: the epoch stands */
        rc = kiq_error_set("controller %s is not the active one", lc->controller);
    } else if (rc == 0 && resp.error_code != KIQ_ERR_NONE) {
        /* a stale epoch (the controller fenced or forgot us), an unknown
         * broker or anything else: registering again sorts it out */
        if (resp.error_code == KIQ_ERR_STALE_BROKER_EPOCH)
            KIQ_INFO("[KafkaIQ broker %d] broker epoch %lld is stale; registering again", lc->b.node_id,
                     (long long)epoch);
        else
            KIQ_WARN("[KafkaIQ broker %d] heartbeat refused with error %d; registering again", lc->b.node_id,
                     resp.error_code);
        set_epoch(lc, -1);
        rc = 1;
    } else if (rc == 0) {
        pthread_mutex_lock(&lc->mu);
        if (lc->fenced && !resp.is_fenced)
            KIQ_INFO("[KafkaIQ broker %d] unfenced by the controller", lc->b.node_id);
        lc->fenced = resp.is_fenced;
        pthread_mutex_unlock(&lc->mu);
        if (!resp.is_fenced) kiq_broker_startup_mark(lc->b.startup, KIQ_STARTUP_READY, epoch);
    }
    kiq_arena_reset(&arena);
    return rc;
}

/* The lifecycle thread: its line to where the active controller now is. */
static void follow_controller(kiq_broker_lifecycle_t *lc)
{
    const char *host;
    int port;
    int32_t id = lc->b.controller(lc->b.ctx, &host, &port);
    if (id == lc->line_controller) return;
    lc->line_controller = id;
    snprintf(lc->controller, sizeof lc->controller, "%s:%d", host, port);
    KIQ_INFO("[KafkaIQ broker %d] the active controller is now %d at %s", lc->b.node_id, id, lc->controller);
    kiq_peer_channel_retarget(lc->line, host, port);
}

static int grow_backoff(kiq_broker_lifecycle_t *lc)
{
    int ms = lc->backoff_ms;
    lc->backoff_ms = ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms * 2;
    return ms;
}

static int64_t lifecycle_round(void *arg)
{
    kiq_broker_lifecycle_t *lc = arg;
    const kiq_broker_identity_t *b = &lc->b;
    for (;;) {
        pthread_mutex_lock(&lc->mu);
        bool paused = lc->paused, stop = lc->stop;
        int64_t epoch = lc->epoch;
        pthread_mutex_unlock(&lc->mu);
        if (stop) return -1;
        if (paused) return lc->heartbeat_ms;
        follow_controller(lc);
        int16_t version = kiq_peer_channel_version(lc->line, KIQ_API_BROKER_REGISTRATION);
        if (version < 0) {
            if (!lc->warned_unreachable)
                KIQ_INFO("[KafkaIQ broker %d] controller not reachable yet: %s", b->node_id, kiq_error_get());
            lc->warned_unreachable = true;
            if (b->not_there) b->not_there(b->ctx, lc->line_controller);
            return grow_backoff(lc);
        }
        int rc = epoch < 0 ? do_register(lc, version, &lc->last_refusal, &lc->refused_since)
                           : do_heartbeat(lc, epoch, false);
        if (rc < 0) {
            KIQ_DEBUG("[KafkaIQ broker %d] lost the controller: %s", b->node_id, kiq_error_get());
            if (b->not_there) b->not_there(b->ctx, lc->line_controller);
            /* a voter that answers will be (or name) the leader within an
             * election: asked again soon, as a new cluster's brokers
             * register the moment its first election ends */
            return lc->standby ? STANDBY_MS : grow_backoff(lc);
        }
        lc->backoff_ms = BACKOFF_MIN_MS;
        lc->warned_unreachable = false;
        /* A fresh registration heartbeats at once, so the controller
         * unfences the broker without waiting an interval, and a refused
         * heartbeat registers again at once; a refused registration waits
         * an interval before trying again. */
        if ((epoch < 0) == (rc == 0)) continue;
        /* fenced while the metadata comes: ask again soon */
        return kiq_broker_lifecycle_fenced(lc) && lc->heartbeat_ms > CATCH_UP_MS ? CATCH_UP_MS : lc->heartbeat_ms;
    }
}

kiq_broker_lifecycle_t *kiq_broker_lifecycle_new(const kiq_broker_identity_t *b)
{
    kiq_broker_lifecycle_t *lc = calloc(1, sizeof *lc);
    if (!lc) {
        kiq_error_set("out of memory");
        return NULL;
    }
    lc->b = *b;
    lc->epoch = -1;
    lc->fenced = true;
    lc->heartbeat_ms = (int32_t)kiq_config_int(b->config, KIQ_CFG_BROKER_HEARTBEAT_INTERVAL_MS);
    lc->request_timeout_ms = (int32_t)kiq_config_int(b->config, KIQ_CFG_BROKER_SESSION_TIMEOUT_MS);
    snprintf(lc->client_id, sizeof lc->client_id, "kafkaiq-broker-%d", b->node_id);
    lc->backoff_ms = BACKOFF_MIN_MS;
    const char *host;
    int port;
    lc->line_controller = b->controller(b->ctx, &host, &port);
    snprintf(lc->controller, sizeof lc->controller, "%s:%d", host, port);
    kiq_peer_channel_config_t cc = {.name = "heartbeats", .peer = "controller", .host = host,
                                    .port = port, .client_id = lc->client_id, .metrics = b->metrics,
                                    .security = b->security};
    if (!(lc->line = kiq_peer_channel_open(&cc))) {
        free(lc);
        return NULL;
    }
    pthread_mutex_init(&lc->mu, NULL);
    kiq_cond_init_monotonic(&lc->cond);
    char name[24];
    snprintf(name, sizeof name, "lifecycle-%d", b->node_id);
    kiq_worker_config_t wc = {.name = name, .round = lifecycle_round, .ctx = lc};
    if (!(lc->worker = kiq_worker_start(&wc))) {
        kiq_peer_channel_free(lc->line);
        pthread_mutex_destroy(&lc->mu);
        pthread_cond_destroy(&lc->cond);
        free(lc);
        return NULL;
    }
    return lc;
}

static void stop_thread(kiq_broker_lifecycle_t *lc)
{
    if (lc->joined) return;
    pthread_mutex_lock(&lc->mu);
    lc->stop = true;
    pthread_cond_broadcast(&lc->cond);
    kiq_peer_channel_interrupt(lc->line);
    kiq_worker_t *w = lc->worker;
    lc->worker = NULL;
    pthread_mutex_unlock(&lc->mu);
    kiq_worker_stop(w);
    lc->joined = true;
}

void kiq_broker_lifecycle_shut_down(kiq_broker_lifecycle_t *lc)
{
    if (!lc) return;
    stop_thread(lc);
    if (lc->epoch < 0 || lc->paused) return;
    const kiq_broker_identity_t *b = &lc->b;
    follow_controller(lc); /* the quorum may have moved since the last round */
    int rc = do_heartbeat(lc, lc->epoch, true);
    if (rc != 0)
        KIQ_WARN("[KafkaIQ broker %d] no controlled shutdown: %s; its leaderships move when the controller "
                 "fences it", b->node_id, rc > 0 ? "the controller refused" : kiq_error_get());
    else
        KIQ_INFO("[KafkaIQ broker %d] controlled shutdown: the controller moved its leaderships", b->node_id);
}

void kiq_broker_lifecycle_free(kiq_broker_lifecycle_t *lc)
{
    if (!lc) return;
    stop_thread(lc);
    kiq_peer_channel_free(lc->line);
    pthread_mutex_destroy(&lc->mu);
    pthread_cond_destroy(&lc->cond);
    free(lc);
}

void kiq_broker_lifecycle_pause(kiq_broker_lifecycle_t *lc, bool paused)
{
    pthread_mutex_lock(&lc->mu);
    lc->paused = paused;
    if (lc->worker) kiq_worker_poke(lc->worker);
    pthread_mutex_unlock(&lc->mu);
}

int64_t kiq_broker_lifecycle_epoch(kiq_broker_lifecycle_t *lc)
{
    pthread_mutex_lock(&lc->mu);
    int64_t e = lc->epoch;
    pthread_mutex_unlock(&lc->mu);
    return e;
}

bool kiq_broker_lifecycle_fenced(kiq_broker_lifecycle_t *lc)
{
    pthread_mutex_lock(&lc->mu);
    bool f = lc->fenced;
    pthread_mutex_unlock(&lc->mu);
    return f;
}

const char *kiq_broker_lifecycle_gave_up(kiq_broker_lifecycle_t *lc)
{
    pthread_mutex_lock(&lc->mu);
    const char *why = lc->gave_up[0] ? lc->gave_up : NULL; /* written once, before stop */
    pthread_mutex_unlock(&lc->mu);
    return why;
}

bool kiq_broker_lifecycle_wait_registered(kiq_broker_lifecycle_t *lc, int timeout_ms)
{
    int64_t until = kiq_clock_mono_ns() + (int64_t)timeout_ms * 1000000;
    pthread_mutex_lock(&lc->mu);
    while (lc->epoch < 0 && !lc->stop) {
        if (timeout_ms < 0)
            pthread_cond_wait(&lc->cond, &lc->mu);
        else if (!kiq_cond_wait_until(&lc->cond, &lc->mu, until))
            break;
    }
    bool ok = lc->epoch >= 0;
    pthread_mutex_unlock(&lc->mu);
    return ok;
}
