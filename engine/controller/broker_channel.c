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
#include "net/client.h"

#define BACKOFF_MS 300
#define REQUEST_TIMEOUT_MS 10000
/* The versions this controller speaks: the newest declared. */
#define UPDATE_METADATA_VERSION 7
#define LEADER_AND_ISR_VERSION 6
#define STOP_REPLICA_VERSION 3

struct kiq_broker_channel {
    int32_t broker;
    kiq_channel_owner_t owner;
    /* sends a round whenever the broker is behind; poked by a change or a
     * reset, from new to free */
    kiq_worker_t *worker;
    pthread_mutex_t mu; /* guards everything below */
    char host[256];
    int port;
    uint64_t target, acked;
    bool running;
    kiq_client_conn_t *conn; /* the worker's; published for shutdown */
};

/* One round; 0 when the broker took all of it. */
static int send_round(kiq_broker_channel_t *ch, kiq_client_conn_t *conn)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_channel_round_t round;
    memset(&round, 0, sizeof round);
    kiq_update_metadata_request_init(&round.update_metadata);
    kiq_leader_and_isr_request_init(&round.leader_and_isr);
    kiq_stop_replica_request_init(&round.stop_replica);
    if (kiq_client_version(conn, 6) < UPDATE_METADATA_VERSION || kiq_client_version(conn, 4) < LEADER_AND_ISR_VERSION ||
        kiq_client_version(conn, 5) < STOP_REPLICA_VERSION) {
        kiq_client_shutdown(conn); /* ask again after the backoff: it may be starting */
        return kiq_error_set("broker %d does not take UpdateMetadata v%d, LeaderAndIsr v%d and StopReplica v%d on its "
                             "control plane", ch->broker, UPDATE_METADATA_VERSION, LEADER_AND_ISR_VERSION,
                             STOP_REPLICA_VERSION);
    }
    uint64_t version = ch->owner.build(ch->owner.ctx, ch->broker, &a, &round);
    kiq_update_metadata_response_t umr;
    kiq_leader_and_isr_response_t lar;
    kiq_stop_replica_response_t srr;
    int rc = kiq_client_request(conn, 6, UPDATE_METADATA_VERSION, &round.update_metadata, &a, &umr, REQUEST_TIMEOUT_MS);
    if (rc == 0)
        rc = kiq_client_request(conn, 4, LEADER_AND_ISR_VERSION, &round.leader_and_isr, &a, &lar, REQUEST_TIMEOUT_MS);
    if (rc == 0 && round.stop)
        rc = kiq_client_request(conn, 5, STOP_REPLICA_VERSION, &round.stop_replica, &a, &srr, REQUEST_TIMEOUT_MS);
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
    char host[256];
    pthread_mutex_lock(&ch->mu);
    bool idle = !ch->running || ch->acked >= ch->target;
    snprintf(host, sizeof host, "%s", ch->host);
    int port = ch->port;
    kiq_client_conn_t *conn = ch->conn;
    pthread_mutex_unlock(&ch->mu);
    if (idle) return -1;
    bool fresh = false;
    if (!conn || !kiq_client_alive(conn)) {
        fresh = true;
        pthread_mutex_lock(&ch->mu);
        ch->conn = NULL;
        pthread_mutex_unlock(&ch->mu);
        kiq_client_close(conn);
        conn = kiq_client_connect(host, port, 2000, "kafkaiq-controller");
        if (!conn) {
            KIQ_DEBUG("controller: broker %d at %s:%d unreachable: %s", ch->broker, host, port, kiq_error_get());
            return BACKOFF_MS;
        }
        pthread_mutex_lock(&ch->mu);
        ch->conn = conn;
        bool running = ch->running;
        pthread_mutex_unlock(&ch->mu);
        if (!running) return -1;
    }
    if (send_round(ch, conn) == 0) return 0; /* at once again: more may have changed */
    KIQ_DEBUG("controller: sending to broker %d: %s", ch->broker, kiq_error_get());
    /* a connection to a broker that restarted fails at its first use: a
     * new one is tried at once, only a new one's failure waits */
    if (fresh) return BACKOFF_MS;
    kiq_client_shutdown(conn);
    return 0;
}

kiq_broker_channel_t *kiq_broker_channel_new(int32_t broker, const char *host, int port, const kiq_channel_owner_t *owner)
{
    kiq_broker_channel_t *ch = calloc(1, sizeof *ch);
    if (!ch) return kiq_error_set("out of memory"), NULL;
    ch->broker = broker;
    ch->owner = *owner;
    snprintf(ch->host, sizeof ch->host, "%s", host);
    ch->port = port;
    ch->running = true;
    pthread_mutex_init(&ch->mu, NULL);
    char name[32];
    snprintf(name, sizeof name, "controller-to-%d", broker);
    kiq_worker_config_t wc = {.name = name, .round = channel_round, .ctx = ch};
    if (!(ch->worker = kiq_worker_start(&wc))) {
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
    pthread_mutex_lock(&ch->mu);
    snprintf(ch->host, sizeof ch->host, "%s", host);
    ch->port = port;
    ch->acked = 0;
    if (ch->target == 0) ch->target = 1;
    if (ch->conn) kiq_client_shutdown(ch->conn); /* a restarted broker: a new connection */
    pthread_mutex_unlock(&ch->mu);
    kiq_worker_poke(ch->worker);
}

void kiq_broker_channel_free(kiq_broker_channel_t *ch)
{
    if (!ch) return;
    pthread_mutex_lock(&ch->mu);
    ch->running = false;
    if (ch->conn) kiq_client_shutdown(ch->conn);
    pthread_mutex_unlock(&ch->mu);
    kiq_worker_stop(ch->worker);
    kiq_client_close(ch->conn);
    pthread_mutex_destroy(&ch->mu);
    free(ch);
}
