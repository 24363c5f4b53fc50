/* A kept line to one other broker; see peer_channel.h. */
#include "net/peer_channel.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "net/client.h"

enum { CONNECT_TIMEOUT_MS = 2000, BACKOFF_MS = 100, BACKOFF_MAX_MS = 1000 };

struct kiq_peer_channel {
    char name[32];
    char host[256];
    int port;
    char client_id[64];
    kiq_worker_t *worker;
    pthread_mutex_t mu; /* guards everything below */
    kiq_peer_call_t *head, *tail;
    kiq_client_conn_t *conn; /* the worker's; published so free can shut it down */
    bool stopping;
    int64_t retry_at_ns; /* no connection attempt before this */
    int backoff_ms;      /* the next wait after a failed attempt */
    kiq_peer_channel_stats_t stats;
};

static void fail(kiq_peer_call_t *call, const char *why)
{
    snprintf(call->error, sizeof call->error, "%s", why);
    call->done(call, -1);
}

/* The head call, still under mu, or NULL. */
static kiq_peer_call_t *pop(kiq_peer_channel_t *ch)
{
    kiq_peer_call_t *call = ch->head;
    if (!call) return NULL;
    ch->head = call->next;
    if (!ch->head) ch->tail = NULL;
    call->next = NULL;
    ch->stats.queued--;
    return call;
}

/* Ends every queued call past its deadline; the ms until the head's. */
static int64_t expire(kiq_peer_channel_t *ch, const char *why)
{
    for (;;) {
        int64_t now = kiq_clock_mono_ns();
        pthread_mutex_lock(&ch->mu);
        kiq_peer_call_t *call = ch->head;
        if (!call || call->deadline_ns > now) {
            int64_t left = call ? (call->deadline_ns - now) / 1000000 + 1 : -1;
            pthread_mutex_unlock(&ch->mu);
            return left;
        }
        pop(ch);
        ch->stats.failed++;
        ch->stats.expired++;
        pthread_mutex_unlock(&ch->mu);
        char msg[sizeof call->error];
        snprintf(msg, sizeof msg, "no answer from %.40s:%d in time: %.100s", ch->host, ch->port, why);
        fail(call, msg);
    }
}

/* A connection, made now unless the backoff forbids it; NULL when none. */
static kiq_client_conn_t *connected(kiq_peer_channel_t *ch, int64_t head_left_ms, char *why, size_t whylen)
{
    pthread_mutex_lock(&ch->mu);
    kiq_client_conn_t *conn = ch->conn;
    bool alive = conn && kiq_client_alive(conn);
    if (conn && !alive) ch->conn = NULL;
    int64_t wait_ns = ch->retry_at_ns - kiq_clock_mono_ns();
    pthread_mutex_unlock(&ch->mu);
    if (alive) return conn;
    kiq_client_close(conn);
    if (wait_ns > 0) return NULL;
    int timeout = head_left_ms < CONNECT_TIMEOUT_MS ? (int)head_left_ms : CONNECT_TIMEOUT_MS;
    conn = kiq_client_connect(ch->host, ch->port, timeout, ch->client_id);
    pthread_mutex_lock(&ch->mu);
    if (conn) {
        ch->stats.connects++;
        ch->backoff_ms = BACKOFF_MS;
        ch->retry_at_ns = 0;
        if (ch->stopping) kiq_client_shutdown(conn);
        ch->conn = conn;
    } else {
        ch->stats.connect_failures++;
        ch->retry_at_ns = kiq_clock_mono_ns() + (int64_t)ch->backoff_ms * 1000000;
        ch->backoff_ms = ch->backoff_ms * 2 < BACKOFF_MAX_MS ? ch->backoff_ms * 2 : BACKOFF_MAX_MS;
        snprintf(why, whylen, "%s", kiq_error_get());
    }
    pthread_mutex_unlock(&ch->mu);
    return conn;
}

static int64_t channel_round(void *arg)
{
    kiq_peer_channel_t *ch = arg;
    char why[160] = "not connected";
    for (;;) {
        int64_t left = expire(ch, why);
        if (left < 0) return -1;
        pthread_mutex_lock(&ch->mu);
        bool stopping = ch->stopping;
        pthread_mutex_unlock(&ch->mu);
        if (stopping) return -1;
        kiq_client_conn_t *conn = connected(ch, left, why, sizeof why);
        if (!conn) {
            pthread_mutex_lock(&ch->mu);
            int64_t retry = (ch->retry_at_ns - kiq_clock_mono_ns()) / 1000000 + 1;
            pthread_mutex_unlock(&ch->mu);
            return retry < left ? retry : left;
        }
        pthread_mutex_lock(&ch->mu);
        kiq_peer_call_t *call = pop(ch);
        if (call) ch->stats.sent++;
        pthread_mutex_unlock(&ch->mu);
        if (!call) continue;
        int64_t ms = (call->deadline_ns - kiq_clock_mono_ns()) / 1000000;
        call->sent_version = call->version >= 0 ? call->version : kiq_client_version(conn, call->api_key);
        int rc = call->sent_version < 0 ? kiq_error_set("%s does not serve api key %d", kiq_client_peer(conn),
                                                        call->api_key)
                                        : kiq_client_request(conn, call->api_key, call->sent_version, call->request,
                                                             call->arena, call->response, ms > 1 ? (int)ms : 1);
        pthread_mutex_lock(&ch->mu);
        if (rc == 0) ch->stats.answered++;
        else ch->stats.failed++;
        pthread_mutex_unlock(&ch->mu);
        if (rc == 0)
            call->done(call, 0);
        else
            fail(call, kiq_error_get());
    }
}

kiq_peer_channel_t *kiq_peer_channel_new(const char *name, const char *host, int port, const char *client_id)
{
    kiq_peer_channel_t *ch = calloc(1, sizeof *ch);
    if (!ch) return kiq_error_set("out of memory"), NULL;
    snprintf(ch->name, sizeof ch->name, "%s", name);
    snprintf(ch->host, sizeof ch->host, "%s", host);
    ch->port = port;
    snprintf(ch->client_id, sizeof ch->client_id, "%s", client_id);
    ch->backoff_ms = BACKOFF_MS;
    pthread_mutex_init(&ch->mu, NULL);
    kiq_worker_config_t wc = {.name = ch->name, .round = channel_round, .ctx = ch, .first_delay_ms = -1};
    if (!(ch->worker = kiq_worker_start(&wc))) {
        pthread_mutex_destroy(&ch->mu);
        free(ch);
        return NULL;
    }
    return ch;
}

void kiq_peer_channel_submit(kiq_peer_channel_t *ch, kiq_peer_call_t *call)
{
    call->next = NULL;
    call->error[0] = '\0';
    call->sent_version = -1;
    pthread_mutex_lock(&ch->mu);
    if (ch->stopping) {
        pthread_mutex_unlock(&ch->mu);
        fail(call, "the broker is shutting down");
        return;
    }
    if (ch->tail)
        ch->tail->next = call;
    else
        ch->head = call;
    ch->tail = call;
    ch->stats.queued++;
    pthread_mutex_unlock(&ch->mu);
    kiq_worker_poke(ch->worker);
}

void kiq_peer_channel_stats(kiq_peer_channel_t *ch, kiq_peer_channel_stats_t *out)
{
    pthread_mutex_lock(&ch->mu);
    *out = ch->stats;
    pthread_mutex_unlock(&ch->mu);
}

void kiq_peer_channel_stop(kiq_peer_channel_t *ch)
{
    if (!ch) return;
    pthread_mutex_lock(&ch->mu);
    bool was = ch->stopping;
    ch->stopping = true;
    if (ch->conn) kiq_client_shutdown(ch->conn);
    pthread_mutex_unlock(&ch->mu);
    if (was) return;
    kiq_worker_stop(ch->worker);
    ch->worker = NULL;
    for (;;) {
        pthread_mutex_lock(&ch->mu);
        kiq_peer_call_t *call = pop(ch);
        pthread_mutex_unlock(&ch->mu);
        if (!call) break;
        fail(call, "the broker is shutting down");
    }
}

void kiq_peer_channel_free(kiq_peer_channel_t *ch)
{
    if (!ch) return;
    kiq_peer_channel_stop(ch);
    kiq_client_close(ch->conn);
    pthread_mutex_destroy(&ch->mu);
    free(ch);
}
