/* The one line to another broker; see peer_channel.h. */
#include "net/peer_channel.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "metrics/registry.h"
#include "net/client.h"

enum { CONNECT_TIMEOUT_MS = 2000 };

struct kiq_peer_channel {
    char name[32];
    char peer[32];
    char client_id[64];
    kiq_metrics_t *metrics;
    const struct kiq_peer_security *security; /* the broker's, outlives the channel */
    int backoff_min_ms, backoff_max_ms;
    kiq_worker_t *worker; /* queued channels; NULL for an owned one */
    pthread_mutex_t mu;   /* guards everything below */
    char host[256];
    int port;
    kiq_peer_call_t *head, *tail;
    /* the sending thread's (the worker, or the owner); published so
     * stop, retarget and interrupt can shut it down */
    kiq_client_conn_t *conn;
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

/* The sending thread: a connection, made now unless the backoff forbids
 * it; NULL with the reason in the error slot. */
static kiq_client_conn_t *connected(kiq_peer_channel_t *ch, int64_t left_ms)
{
    char host[sizeof ch->host];
    pthread_mutex_lock(&ch->mu);
    kiq_client_conn_t *conn = ch->conn;
    bool alive = conn && kiq_client_alive(conn);
    if (conn && !alive) ch->conn = NULL;
    int64_t wait_ns = ch->retry_at_ns - kiq_clock_mono_ns();
    bool stopping = ch->stopping;
    snprintf(host, sizeof host, "%s", ch->host);
    int port = ch->port;
    pthread_mutex_unlock(&ch->mu);
    if (alive) return conn;
    kiq_client_close(conn);
    if (stopping) return kiq_error_set("the broker is shutting down"), NULL;
    if (wait_ns > 0)
        return kiq_error_set("%s:%d was not reachable; trying again in %lld ms", host, port,
                             (long long)(wait_ns / 1000000 + 1)),
               NULL;
    int timeout = left_ms < CONNECT_TIMEOUT_MS ? (int)(left_ms > 1 ? left_ms : 1) : CONNECT_TIMEOUT_MS;
    conn = kiq_client_connect(host, port, timeout, ch->client_id, ch->security);
    pthread_mutex_lock(&ch->mu);
    if (conn) {
        ch->stats.connects++;
        ch->backoff_ms = ch->backoff_min_ms;
        ch->retry_at_ns = 0;
        if (ch->stopping) kiq_client_shutdown(conn);
        ch->conn = conn;
    } else {
        ch->stats.connect_failures++;
        if (ch->backoff_ms > 0) {
            ch->retry_at_ns = kiq_clock_mono_ns() + (int64_t)ch->backoff_ms * 1000000;
            ch->backoff_ms = ch->backoff_ms * 2 < ch->backoff_max_ms ? ch->backoff_ms * 2 : ch->backoff_max_ms;
        }
    }
    pthread_mutex_unlock(&ch->mu);
    return conn;
}

/* The sending thread: call on conn, counted; 0 or -1 with the error slot set. */
static int send_on(kiq_peer_channel_t *ch, kiq_client_conn_t *conn, kiq_peer_call_t *call)
{
    int64_t ms = (call->deadline_ns - kiq_clock_mono_ns()) / 1000000;
    call->sent_version = call->version >= 0 ? call->version : kiq_client_version(conn, call->api_key);
    pthread_mutex_lock(&ch->mu);
    ch->stats.sent++;
    pthread_mutex_unlock(&ch->mu);
    int rc = call->sent_version < 0
                 ? kiq_error_set("%s does not serve api key %d", kiq_client_peer(conn), call->api_key)
                 : kiq_client_request(conn, call->api_key, call->sent_version, call->request, call->arena,
                                      call->response, ms > 1 ? (int)ms : 1);
    pthread_mutex_lock(&ch->mu);
    if (rc == 0) ch->stats.answered++;
    else ch->stats.failed++;
    pthread_mutex_unlock(&ch->mu);
    return rc;
}

static int64_t channel_round(void *arg)
{
    kiq_peer_channel_t *ch = arg;
    char why[160] = "not connected";
    for (;;) {
        int64_t left = expire(ch, why);
        if (left < 0) return -1;
        pthread_mutex_lock(&ch->mu);
        int64_t hold_ms = ch->head ? (ch->head->not_before_ns - kiq_clock_mono_ns()) / 1000000 + 1 : 0;
        pthread_mutex_unlock(&ch->mu);
        if (hold_ms > 0) return hold_ms < left ? hold_ms : left;
        kiq_client_conn_t *conn = connected(ch, left);
        if (!conn) {
            snprintf(why, sizeof why, "%s", kiq_error_get());
            pthread_mutex_lock(&ch->mu);
            bool stopping = ch->stopping;
            int64_t retry = (ch->retry_at_ns - kiq_clock_mono_ns()) / 1000000 + 1;
            pthread_mutex_unlock(&ch->mu);
            if (stopping) return -1;
            return retry < left ? retry : left;
        }
        pthread_mutex_lock(&ch->mu);
        kiq_peer_call_t *call = pop(ch);
        pthread_mutex_unlock(&ch->mu);
        if (!call) continue;
        if (send_on(ch, conn, call) == 0)
            call->done(call, 0);
        else
            fail(call, kiq_error_get());
    }
}

/* Its figures, for the broker's metrics registry. */
static void channel_metrics(void *src, kiq_metric_out_t *o)
{
    kiq_peer_channel_t *ch = src;
    kiq_peer_channel_stats_t st;
    kiq_peer_channel_stats(ch, &st);
    const struct {
        const char *outcome;
        uint64_t n;
    } calls[] = {{"sent", st.sent}, {"answered", st.answered}, {"failed", st.failed}, {"expired", st.expired}};
    kiq_metric_family(o, "kafkaiq_peer_channel_calls_total", KIQ_METRIC_COUNTER,
                      "calls on a line to another broker: sent, answered, failed (expired: before being sent)");
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        kiq_metric_sample(o, "", (double)calls[i].n, "channel", ch->name, "peer", ch->peer, "outcome",
                          calls[i].outcome, NULL);
    kiq_metric_family(o, "kafkaiq_peer_channel_connects_total", KIQ_METRIC_COUNTER,
                      "connections a line to another broker made, and attempts that failed");
    kiq_metric_sample(o, "", (double)st.connects, "channel", ch->name, "peer", ch->peer, "outcome", "made", NULL);
    kiq_metric_sample(o, "", (double)st.connect_failures, "channel", ch->name, "peer", ch->peer, "outcome", "failed",
                      NULL);
    kiq_metric_family(o, "kafkaiq_peer_channel_queued", KIQ_METRIC_GAUGE, "calls waiting on a line to another broker");
    kiq_metric_sample(o, "", st.queued, "channel", ch->name, "peer", ch->peer, NULL);
}

static kiq_peer_channel_t *make(const kiq_peer_channel_config_t *cfg)
{
    kiq_peer_channel_t *ch = calloc(1, sizeof *ch);
    if (!ch) return kiq_error_set("out of memory"), NULL;
    snprintf(ch->name, sizeof ch->name, "%s", cfg->name);
    snprintf(ch->peer, sizeof ch->peer, "%s", cfg->peer ? cfg->peer : "");
    snprintf(ch->host, sizeof ch->host, "%s", cfg->host);
    ch->port = cfg->port;
    snprintf(ch->client_id, sizeof ch->client_id, "%s", cfg->client_id);
    ch->backoff_min_ms = ch->backoff_ms = cfg->backoff_min_ms;
    ch->backoff_max_ms = cfg->backoff_max_ms > cfg->backoff_min_ms ? cfg->backoff_max_ms : cfg->backoff_min_ms;
    pthread_mutex_init(&ch->mu, NULL);
    ch->metrics = cfg->metrics;
    ch->security = cfg->security;
    if (kiq_metrics_add(ch->metrics, channel_metrics, ch) != 0) {
        pthread_mutex_destroy(&ch->mu);
        free(ch);
        return kiq_error_set("out of memory"), NULL;
    }
    return ch;
}

kiq_peer_channel_t *kiq_peer_channel_new(const kiq_peer_channel_config_t *cfg)
{
    kiq_peer_channel_t *ch = make(cfg);
    if (!ch) return NULL;
    kiq_worker_config_t wc = {.name = ch->name, .round = channel_round, .ctx = ch, .first_delay_ms = -1};
    if (!(ch->worker = kiq_worker_start(&wc))) {
        kiq_metrics_remove(ch->metrics, ch);
        pthread_mutex_destroy(&ch->mu);
        free(ch);
        return NULL;
    }
    return ch;
}

kiq_peer_channel_t *kiq_peer_channel_open(const kiq_peer_channel_config_t *cfg) { return make(cfg); }

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

int kiq_peer_channel_call(kiq_peer_channel_t *ch, kiq_peer_call_t *call)
{
    call->error[0] = '\0';
    call->sent_version = -1;
    int64_t left = (call->deadline_ns - kiq_clock_mono_ns()) / 1000000;
    kiq_client_conn_t *conn = connected(ch, left);
    int rc = conn ? send_on(ch, conn, call) : -1;
    if (!conn) {
        pthread_mutex_lock(&ch->mu);
        ch->stats.failed++;
        pthread_mutex_unlock(&ch->mu);
    }
    if (rc != 0) snprintf(call->error, sizeof call->error, "%s", kiq_error_get());
    return rc;
}

int kiq_peer_channel_request(kiq_peer_channel_t *ch, int16_t api_key, int16_t version, const void *request,
                             kiq_arena_t *arena, void *response, int timeout_ms)
{
    kiq_peer_call_t call = {.api_key = api_key, .version = version, .request = request, .arena = arena,
                            .response = response,
                            .deadline_ns = kiq_clock_mono_ns() + (int64_t)timeout_ms * 1000000};
    return kiq_peer_channel_call(ch, &call);
}

int16_t kiq_peer_channel_version(kiq_peer_channel_t *ch, int16_t api_key)
{
    kiq_client_conn_t *conn = connected(ch, CONNECT_TIMEOUT_MS);
    if (!conn) return -1;
    int16_t v = kiq_client_version(conn, api_key);
    if (v < 0) kiq_error_set("%s does not serve api key %d", kiq_client_peer(conn), api_key);
    return v;
}

void kiq_peer_channel_retarget(kiq_peer_channel_t *ch, const char *host, int port)
{
    pthread_mutex_lock(&ch->mu);
    snprintf(ch->host, sizeof ch->host, "%s", host);
    ch->port = port;
    ch->retry_at_ns = 0;
    ch->backoff_ms = ch->backoff_min_ms;
    if (ch->conn) kiq_client_shutdown(ch->conn);
    pthread_mutex_unlock(&ch->mu);
    if (ch->worker) kiq_worker_poke(ch->worker);
}

void kiq_peer_channel_interrupt(kiq_peer_channel_t *ch)
{
    pthread_mutex_lock(&ch->mu);
    if (ch->conn) kiq_client_shutdown(ch->conn);
    pthread_mutex_unlock(&ch->mu);
}

void kiq_peer_channel_stats(kiq_peer_channel_t *ch, kiq_peer_channel_stats_t *out)
{
    pthread_mutex_lock(&ch->mu);
    *out = ch->stats;
    pthread_mutex_unlock(&ch->mu);
}

const char *kiq_peer_channel_name(const kiq_peer_channel_t *ch) { return ch->name; }

const char *kiq_peer_channel_peer(const kiq_peer_channel_t *ch) { return ch->peer; }

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
    kiq_metrics_remove(ch->metrics, ch);
    kiq_client_close(ch->conn);
    pthread_mutex_destroy(&ch->mu);
    free(ch);
}
