/* A processor (num.network.threads of them): one thread running its own libev
 * loop over the connections the acceptor gives it. It frames requests,
 * parses headers, puts one request per connection at a time on the request
 * queue, and writes responses back in order. Its inbox (new sockets,
 * finished requests, wake-ups) is the only state other threads touch; they
 * reach it through the functions marked "any thread", which lock the inbox
 * and ev_async_send the loop. */
#ifndef KIQ_NET_PROCESSOR_H
#define KIQ_NET_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/observer.h"
#include "net/request.h"
#include "net/request_queue.h"

typedef struct kiq_processor kiq_processor_t;

typedef struct kiq_processor_config {
    int id;
    int listener;
    size_t max_request_bytes; /* socket.request.max.bytes */
    int64_t idle_ms;          /* connections.max.idle.ms; <= 0: none */
    int64_t read_timeout_ms;  /* kafkaiq.request.read.timeout.ms (first byte to whole request); <= 0: none */
    /* queued.max.request.bytes, shared with the listener's other
     * processors (NULL: not counted); wire kiq_processor_pool_space to it */
    struct kiq_memory_pool *pool;
    struct kiq_connection_quotas *quotas; /* slots given back at close; NULL: none */
    kiq_request_queue_t *queue;
    /* A second queue, with its own I/O thread, for the requests urgent()
     * picks (the controller quorum's own RPCs on the control plane), so
     * they never wait behind handlers that wait for them. NULL: none;
     * wire kiq_processor_queue_space to it too. */
    kiq_request_queue_t *urgent_queue;
    bool (*urgent)(void *ctx, const kiq_request_t *r);
    /* Admission check run on the processor thread once a header parses;
     * non-zero means refuse (close) the connection. */
    int (*admit)(void *ctx, kiq_request_t *r);
    /* Called on the processor thread when a request is finished (answered,
     * or not), before it is freed: request metrics. */
    void (*done)(void *ctx, const kiq_request_t *r);
    void *admit_ctx; /* passed to admit and done */
    /* The listener's TLS (SSL, SASL_SSL), shared read-only; NULL: plain
     * sockets (PLAINTEXT, SASL_PLAINTEXT), their path untouched. */
    struct kiq_tls *tls;
    /* The listener's SASL (SASL_PLAINTEXT, SASL_SSL), shared read-only:
     * each connection authenticates before its other requests; NULL: none. */
    struct kiq_sasl *sasl;
    const kiq_observers_t *observers; /* RECEIVED, RESPONSE_QUEUED, SENT; NULL: none */
    int32_t broker;                   /* whose they are */
} kiq_processor_config_t;

kiq_processor_t *kiq_processor_new(const kiq_processor_config_t *cfg);
int kiq_processor_start(kiq_processor_t *p);
/* Any thread: stops the loop, closes connections, joins the thread. */
void kiq_processor_stop(kiq_processor_t *p);
void kiq_processor_free(kiq_processor_t *p);

/* Any thread: adopt an accepted socket from address ip (its quota slot,
 * if any, is the processor's from now on). */
void kiq_processor_add_socket(kiq_processor_t *p, int fd, const char *peer, const char *ip);
/* Any thread: the request is done; its response (if any) goes out and the
 * connection reads its next request. Takes ownership of r. */
void kiq_processor_complete(kiq_request_t *r);
/* Any thread: the request queue has room again (request-queue callback). */
void kiq_processor_queue_space(void *processor);
/* Any thread: the memory pool has room again (memory-pool callback). */
void kiq_processor_pool_space(void *processor);
/* Any thread: the share of its time since start the loop spent waiting for
 * events (Kafka's NetworkProcessorAvgIdlePercent, as a ratio). */
double kiq_processor_idle_ratio(kiq_processor_t *p);

/* What a processor has done since it started; a caller's value. */
typedef struct kiq_processor_stats {
    int connections, muted; /* open; waiting for room in the request queue */
    int starved;            /* left unread for want of queued.max.request.bytes */
    uint64_t closed_idle;   /* past connections.max.idle.ms */
    uint64_t closed_slow;   /* past kafkaiq.request.read.timeout.ms */
    uint64_t requests;      /* framed */
    uint64_t bytes_in, bytes_out;
    int64_t idle_ns, up_ns; /* time waiting for events, of the time since start */
} kiq_processor_stats_t;
/* Any thread. */
void kiq_processor_stats(kiq_processor_t *p, kiq_processor_stats_t *out);

#endif
