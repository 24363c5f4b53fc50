/* A kept line to one other broker (Kafka's NodeToControllerChannelManager
 * and InterBrokerSendThread): callers queue typed requests, each with a
 * deadline and a callback, and go on; the channel's own thread keeps one
 * connection, sends them in order, reconnects with a backoff when the peer
 * is gone and calls each callback once, with the response or the reason
 * it has none. So no I/O thread ever waits on another broker: a handler
 * queues its forwarded request, returns KIQ_HANDLER_PARKED and is answered
 * from the callback.
 *
 * Calls are sent one at a time: a peer that stops answering holds the
 * ones behind the head until the head's deadline; each of those still
 * gets its callback no later than its own deadline plus the head's.
 *
 * Every function is callable from any thread; the callbacks run on the
 * channel's thread (or, for calls still queued at kiq_peer_channel_stop
 * or submitted after it, on the stopping or submitting thread). */
#ifndef KIQ_NET_PEER_CHANNEL_H
#define KIQ_NET_PEER_CHANNEL_H

#include <stdint.h>

#include "core/arena.h"

typedef struct kiq_peer_call kiq_peer_call_t;

/* rc 0: call->response holds the peer's answer. -1: none came (not
 * reachable, refused, past the deadline, the channel stopping); the reason
 * is in call->error. */
typedef void (*kiq_peer_done_fn)(kiq_peer_call_t *call, int rc);

/* One request, in its caller's memory (a parked request's arena) until
 * its callback returns. */
struct kiq_peer_call {
    int16_t api_key;
    int16_t version;         /* -1: the newest both sides speak */
    const void *request;     /* the api's kiq_<api>_request_t */
    kiq_arena_t *arena;      /* the response is decoded in it */
    void *response;          /* room for the api's kiq_<api>_response_t */
    int64_t deadline_ns;     /* monotonic */
    kiq_peer_done_fn done;
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

typedef struct kiq_peer_channel kiq_peer_channel_t;

/* A channel to host:port, its thread named name, its requests carrying
 * client_id. NULL with the reason in the error slot. */
kiq_peer_channel_t *kiq_peer_channel_new(const char *name, const char *host, int port, const char *client_id);
/* Queues call; its callback will run exactly once. */
void kiq_peer_channel_submit(kiq_peer_channel_t *ch, kiq_peer_call_t *call);
void kiq_peer_channel_stats(kiq_peer_channel_t *ch, kiq_peer_channel_stats_t *out);
/* Stops the thread (a request in flight fails at once) and fails what is
 * still queued; later calls fail as they are submitted. Idempotent. */
void kiq_peer_channel_stop(kiq_peer_channel_t *ch);
/* Stops, then frees: once no thread can submit any more. NULL is fine. */
void kiq_peer_channel_free(kiq_peer_channel_t *ch);

#endif
