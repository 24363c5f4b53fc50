/* The one line to another broker (Kafka's NetworkClient to a node): a kept
 * connection, typed requests with deadlines, reconnects with a backoff, and
 * its own counters. Every connection from one broker to another is one of
 * these; nothing else connects.
 *
 * A channel runs one of two ways:
 * - queued (kiq_peer_channel_new; Kafka's NodeToControllerChannelManager):
 *   callers submit calls, each with a deadline and a callback, and go on;
 *   the channel's own worker sends them in order and calls each callback
 *   once, with the response or the reason it has none. So no I/O thread
 *   ever waits on another broker: a handler submits its forwarded request,
 *   returns KIQ_HANDLER_PARKED and is answered from the callback.
 * - owned (kiq_peer_channel_open; Kafka's blocking sends of its replica
 *   fetcher and lifecycle manager): a loop that has its own worker (a
 *   fetcher, the controller's sender to one broker) makes each call on its
 *   own thread with kiq_peer_channel_call, which waits for the answer until
 *   the call's deadline; only that loop waits.
 *
 * Calls go one at a time, as Kafka's brokers serve one request per
 * connection at a time anyway: a peer that stops answering holds the calls
 * behind the head until the head's deadline; each still gets its callback
 * no later than its own deadline plus the head's. Loops that must not wait
 * behind each other (long-poll fetches, heartbeats, forwarding) each keep
 * their own channel, as Kafka keeps one per purpose.
 *
 * Functions say which thread may call them; the callbacks of a queued
 * channel run on its worker (or, for calls queued at kiq_peer_channel_stop
 * or submitted after it, on the stopping or submitting thread). */
#ifndef KIQ_NET_PEER_CHANNEL_H
#define KIQ_NET_PEER_CHANNEL_H

#include <stdint.h>

#include "core/arena.h"
#include "metrics/registry.h"

typedef struct kiq_peer_call kiq_peer_call_t;
struct kiq_peer_security;

/* rc 0: call->response holds the peer's answer. -1: none came (not
 * reachable, refused, past the deadline, the channel stopping); the reason
 * is in call->error. */
typedef void (*kiq_peer_done_fn)(kiq_peer_call_t *call, int rc);

/* One request, in its caller's memory (a parked request's arena) until
 * its callback returns (queued) or the call returns (owned). */
struct kiq_peer_call {
    int16_t api_key;
    int16_t version;         /* -1: the newest both sides speak */
    const void *request;     /* the api's kiq_<api>_request_t */
    kiq_arena_t *arena;      /* the response is decoded in it */
    void *response;          /* room for the api's kiq_<api>_response_t */
    int64_t deadline_ns;     /* monotonic */
    int64_t not_before_ns;   /* monotonic; queued calls only: sent no sooner (a retry's pause); 0: at once */
    kiq_peer_done_fn done;   /* queued channels only */
    void *ctx;               /* the caller's */
    int16_t sent_version;    /* out: the version it went as */
    char error[200];         /* out, with rc -1 */
    kiq_peer_call_t *next;   /* the channel's, from submit to done */
};

/* What a channel has done, for /metrics and tests. */
typedef struct kiq_peer_channel_stats {
    uint64_t sent;        /* requests written to the peer */
    uint64_t answered;    /* responses read */
    uint64_t failed;      /* calls that ended without an answer */
    uint64_t expired;     /* of those, calls past their deadline before they were sent */
    uint64_t connects;    /* connections made */
    uint64_t connect_failures;
    int queued;           /* calls waiting now */
} kiq_peer_channel_stats_t;

typedef struct kiq_peer_channel_config {
    const char *name;      /* the worker's name and the metrics' channel label */
    const char *peer;      /* who is at the other end, for the metrics' peer label ("controller", "2") */
    const char *host;
    int port;
    const char *client_id; /* carried by every request */
    /* waits after a failed connection attempt, doubling from min to max;
     * 0: none of its own (an owned channel's loop keeps its own pace) */
    int backoff_min_ms, backoff_max_ms;
    kiq_metrics_t *metrics; /* the figures go there (NULL: nowhere) */
    /* TLS and SASL toward the peer (security/peer_security.h; outlives
     * the channel); NULL: plaintext */
    const struct kiq_peer_security *security;
} kiq_peer_channel_config_t;

typedef struct kiq_peer_channel kiq_peer_channel_t;

/* A queued channel with its worker. NULL with the reason in the error slot. */
kiq_peer_channel_t *kiq_peer_channel_new(const kiq_peer_channel_config_t *cfg);
/* An owned channel: no thread; its owner calls kiq_peer_channel_call. */
kiq_peer_channel_t *kiq_peer_channel_open(const kiq_peer_channel_config_t *cfg);

/* Queued channels, any thread: queues call; its callback will run exactly once. */
void kiq_peer_channel_submit(kiq_peer_channel_t *ch, kiq_peer_call_t *call);

/* Owned channels, the owner's thread: sends call now (connecting first
 * unless the backoff forbids it) and waits for the answer until its
 * deadline. 0, or -1 with the reason in call->error and the error slot. */
int kiq_peer_channel_call(kiq_peer_channel_t *ch, kiq_peer_call_t *call);
/* The same, the call made of these with a deadline timeout_ms from now. */
int kiq_peer_channel_request(kiq_peer_channel_t *ch, int16_t api_key, int16_t version, const void *request,
                             kiq_arena_t *arena, void *response, int timeout_ms);
/* Owned channels, the owner's thread: the highest version of api_key both
 * sides speak, connecting first when there is no connection; -1 with the
 * reason in the error slot when not connected or not spoken. */
int16_t kiq_peer_channel_version(kiq_peer_channel_t *ch, int16_t api_key);

/* Any thread: the peer is now at host:port, or restarted there; the call
 * in flight fails and the next one connects afresh, without a backoff. */
void kiq_peer_channel_retarget(kiq_peer_channel_t *ch, const char *host, int port);
/* Any thread: the call in flight fails now ("shut down"); the next one
 * connects again. */
void kiq_peer_channel_interrupt(kiq_peer_channel_t *ch);

void kiq_peer_channel_stats(kiq_peer_channel_t *ch, kiq_peer_channel_stats_t *out);
const char *kiq_peer_channel_name(const kiq_peer_channel_t *ch);
const char *kiq_peer_channel_peer(const kiq_peer_channel_t *ch);

/* Any thread: stops the worker (a call in flight fails at once) and fails
 * what is still queued; later calls fail. Idempotent. */
void kiq_peer_channel_stop(kiq_peer_channel_t *ch);
/* Stops, then frees: once no thread can call any more. NULL is fine. */
void kiq_peer_channel_free(kiq_peer_channel_t *ch);

#endif
