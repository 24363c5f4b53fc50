/* The controller's sender to one broker (a core/worker); see broker_channel.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/broker_channel.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "net/peer_channel.h"

#define BACKOFF_MS 300
#define REQUEST_TIMEOUT_MS 10000
/* The versions this controller speaks: the newest declared. */
#define UPDATE_METADATA_VERSION 7
#define LEADER_AND_ISR_VERSION 6
#define STOP_REPLICA_VERSION 3

struct kiq_broker_channel {
    int32_t broker;
    kiq_channel_owner_t owner;
    kiq_peer_channel_t *line; /* owned by the worker; retargeted and interrupted from any thread */
    /* sends a round whenever the broker is behind; poked by a change or a
     * reset, from new to free */
    kiq_worker_t *worker;
    pthread_mutex_t mu; /* guards everything below */
    uint64_t target, acked;
    bool running;
};

/* One round; 0 when the broker took all of it. */
static int send_round(kiq_broker_channel_t *ch)
{
    if (kiq_peer_channel_version(ch->line, 6) < UPDATE_METADATA_VERSION ||
        kiq_peer_channel_version(ch->line, 4) < LEADER_AND_ISR_VERSION ||
        kiq_peer_channel_version(ch->line, 5) < STOP_REPLICA_VERSION) {
        kiq_peer_channel_interrupt(ch->line); /* ask again after the backoff: it may be starting */
        return kiq_error_set("broker %d does not take UpdateMetadata v%d, LeaderAndIsr v%d and StopReplica v%d on its "
                             "control plane", ch->broker, UPDATE_METADATA_VERSION, LEADER_AND_ISR_VERSION,
                             STOP_REPLICA_VERSION);
    }
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_channel_round_t round;
    memset(&round, 0, sizeof round);
    kiq_update_metadata_request_init(&round.update_metadata);
    kiq_leader_and_isr_request_init(&round.leader_and_isr);
    kiq_stop_replica_request_init(&round.stop_replica);
    uint64_t version = ch->owner.build(ch->owner.ctx, ch->broker, &a, &round);
    kiq_update_metadata_response_t umr;
    kiq_leader_and_isr_response_t lar;
    kiq_stop_replica_response_t srr;
    int rc = kiq_peer_channel_request(ch->line, 6, UPDATE_METADATA_VERSION, &round.update_metadata, &a, &umr,
                                      REQUEST_TIMEOUT_MS);
    if (rc == 0)
        rc = kiq_peer_channel_request(ch->line, 4, LEADER_AND_ISR_VERSION, &round.leader_and_isr, &a, &lar,
                                      REQUEST_TIMEOUT_MS);
    if (rc == 0 && round.stop)
        rc = kiq_peer_channel_request(ch->line, 5, STOP_REPLICA_VERSION, &round.stop_replica, &a, &srr,
                                      REQUEST_TIMEOUT_MS);
    if (rc == 0 && (umr.error_code || lar.error_code || (round.stop && srr.error_code))) {
        rc = kiq_error_set("broker %d refused the controller's requests (errors %d/%d/%d)", ch->broker, umr.error_code,
                           lar.error_code, round.stop ? srr.error_code : 0);
    }
    kiq_arena_reset(&a);
    if (rc == 0) {
        ch->owner.sent(ch->owner.ctx, ch->broker, version, round.stop);
        pthread_mutex_lock(&ch->mu);
        if (version > ch->acked) ch->acked = version;
        pthread_mutex_unlock(&ch->mu);
    }
    return rc;
}

/* The worker's round: one round sent when the broker is behind; the
 * wait before the next (-1: until a poke). */
static int64_t channel_round(void *arg)
{
    kiq_broker_channel_t *ch = arg;
    pthread_mutex_lock(&ch->mu);
    bool idle = !ch->running || ch->acked >= ch->target;
    pthread_mutex_unlock(&ch->mu);
    if (idle) return -1;
    kiq_peer_channel_stats_t before, after;
    kiq_peer_channel_stats(ch->line, &before);
    if (send_round(ch) == 0) return 0; /* at once again: more may have changed */
    KIQ_DEBUG("controller: sending to broker %d: %s", ch->broker, kiq_error_get());
    /* a kept connection to a broker that restarted fails at its first use:
     * a new one is tried at once, only a new one's failure waits */
    kiq_peer_channel_stats(ch->line, &after);
    if (after.connects != before.connects || after.connect_failures != before.connect_failures) return BACKOFF_MS;
    kiq_peer_channel_interrupt(ch->line);
    return 0;
}

kiq_broker_channel_t *kiq_broker_channel_new(int32_t broker, const char *host, int port, const kiq_channel_owner_t *owner,
                                             kiq_metrics_t *metrics, const struct kiq_peer_security *security)
{
    kiq_broker_channel_t *ch = calloc(1, sizeof *ch);
    if (!ch) return kiq_error_set("out of memory"), NULL;
    ch->broker = broker;
    ch->owner = *owner;
    ch->running = true;
    char name[32], peer[16];
    snprintf(name, sizeof name, "controller-to-%d", broker);
    snprintf(peer, sizeof peer, "%d", broker);
    kiq_peer_channel_config_t lc = {.name = name, .peer = peer, .host = host, .port = port,
                                    .client_id = "kafkaiq-controller", .metrics = metrics, .security = security};
    if (!(ch->line = kiq_peer_channel_open(&lc))) {
        free(ch);
        return NULL;
    }
    pthread_mutex_init(&ch->mu, NULL);
    kiq_worker_config_t wc = {.name = name, .round = channel_round, .ctx = ch};
    if (!(ch->worker = kiq_worker_start(&wc))) {
        kiq_peer_channel_free(ch->line);
        pthread_mutex_destroy(&ch->mu);
        free(ch);
        return NULL;
    }
    return ch;
}

void kiq_broker_channel_poke(kiq_broker_channel_t *ch, uint64_t version)
{
    pthread_mutex_lock(&ch->mu);
    if (version > ch->target) ch->target = version;
    pthread_mutex_unlock(&ch->mu);
    kiq_worker_poke(ch->worker);
}

void kiq_broker_channel_reset(kiq_broker_channel_t *ch, const char *host, int port)
{
    kiq_peer_channel_retarget(ch->line, host, port); /* a restarted broker: a new connection */
    pthread_mutex_lock(&ch->mu);
    ch->acked = 0;
    if (ch->target == 0) ch->target = 1;
    pthread_mutex_unlock(&ch->mu);
    kiq_worker_poke(ch->worker);
}

void kiq_broker_channel_free(kiq_broker_channel_t *ch)
{
    if (!ch) return;
    pthread_mutex_lock(&ch->mu);
    ch->running = false;
    pthread_mutex_unlock(&ch->mu);
    kiq_peer_channel_stop(ch->line);
    kiq_worker_stop(ch->worker);
    kiq_peer_channel_free(ch->line);
    pthread_mutex_destroy(&ch->mu);
    free(ch);
}
