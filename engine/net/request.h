/* A request's life: read and framed by a processor, queued, handled by an I/O
 * thread (possibly parked in a purgatory and completed by another thread),
 * then its response handed back to the processor that owns the connection.
 * Exactly one thread holds a request at any time; handing it over (queue,
 * purgatory, response queue) is the synchronisation. */
#ifndef KIQ_NET_REQUEST_H
#define KIQ_NET_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "proto/header.h"
#include "proto/messages.h"

struct kiq_processor;

/* Which listener a request came in on (kiq_request_t.listener). */
enum { KIQ_LISTENER_DATA = 0, KIQ_LISTENER_CONTROL = 1 };

/* Timestamps (monotonic ns) of each stage, for request metrics and record
 * journeys: Kafka's queue/local/remote/response-queue/send split. */
typedef struct kiq_request_times {
    int64_t received;         /* whole frame read */
    int64_t enqueued;         /* put on the request queue */
    int64_t dequeued;         /* taken by an I/O thread */
    int64_t handled;          /* handler done (or parked) */
    int64_t completed;        /* response built (differs from handled when parked) */
    int64_t response_queued;  /* on the processor's response queue */
    int64_t response_dequeued; /* taken off it by the processor */
    int64_t sent;             /* last byte written to the socket */
} kiq_request_times_t;

#define KIQ_REQUEST_ERROR_KINDS 8

/* The error codes a response carried and how many times each (Kafka's
 * errorCounts: the top level's and every topic's and partition's): the
 * first KIQ_REQUEST_ERROR_KINDS distinct codes, the rest only in `more`. */
typedef struct kiq_request_errors {
    int n;
    int16_t code[KIQ_REQUEST_ERROR_KINDS];
    uint32_t count[KIQ_REQUEST_ERROR_KINDS];
    uint32_t more;
} kiq_request_errors_t;

typedef struct kiq_request {
    struct kiq_processor *processor;
    uint64_t conn_id;
    int listener;
    char peer[64];
    /* its connection's SASL session (a reference, dropped with the
     * request); NULL on a listener without SASL */
    struct kiq_sasl_session *sasl;
    /* who sent it, for the authorizer: the SASL or TLS principal
     * ("User:name"), User:ANONYMOUS on a plain listener or before SASL
     * authentication; and the client's IP */
    char principal[256];
    char host[48];

    uint8_t *frame; /* request bytes without the size prefix */
    size_t frame_len;
    void *frame_mem; /* what is freed with the request: frame, or the input buffer it lies in */
    size_t frame_cap; /* frame_mem's size */
    /* queued.max.request.bytes: the frame's bytes in the pool (NULL: none),
     * given back when the request is freed */
    struct kiq_memory_pool *pool;
    size_t pooled;
    kiq_request_header_t header;
    size_t body_offset;
    const kiq_api_codec_t *codec;

    kiq_arena_t arena; /* decoded request, response message, handler scratch */
    void *body;        /* decoded request message */

    struct kiq_owned *owned; /* what the response points into, released with it */
    size_t response_size_hint; /* room to reserve when encoding the response */

    /* The frame with its size prefix: these bytes with the file parts
     * placed between them (see proto/writer.h). NULL when none is sent. */
    uint8_t *response;
    size_t response_len;
    kiq_file_part_t *response_parts; /* NULL when the frame is all bytes */
    size_t response_nparts;
    /* response, response_parts lie in the arena (encoded there when they
     * fit), not on the heap */
    bool response_in_arena, parts_in_arena;
    bool close_after; /* drop the connection instead of (or after) answering */
    bool answer_then_close; /* a handler's: the answer goes out, then the connection closes (failed SASL) */
    /* a SASL token framed without Kafka headers (after a SaslHandshake v0),
     * handled as a SaslAuthenticate v0: its answer is the server's token
     * alone (sasl_raw_answer, set by the handler), a failure closes the
     * connection without one, as Kafka does */
    bool sasl_raw;
    kiq_bytes_t sasl_raw_answer;
    bool refused;     /* the request queue was full when it came: its connection waited muted */
    bool tls;         /* came over TLS: a response's file parts are read and encrypted, not sendfile()d */
    /* Set by whoever dispatches it: runs once, first in
     * kiq_request_respond with the response message (client quotas put
     * their throttle time in), or in kiq_request_finish with NULL when the
     * request ends without one but the connection stays; on that thread.
     * NULL: none. */
    void (*before_respond)(void *ctx, struct kiq_request *r, void *response);
    void *before_respond_ctx;
    /* client quotas (KIP-219): once the response is sent, the connection
     * is left unread this long */
    int64_t throttle_ms;
    kiq_request_errors_t errors; /* what the response said, once encoded */

    kiq_request_times_t t;
    struct kiq_request *next; /* link on whichever queue holds it */
} kiq_request_t;

kiq_request_t *kiq_request_new(struct kiq_processor *p, uint64_t conn_id, uint8_t *frame,
                               size_t len);
void kiq_request_free(kiq_request_t *r);
/* Releases what the request holds, as kiq_request_free does, but keeps
 * the request and one chunk of its arena for kiq_request_reuse (a
 * processor keeps a few: a request then costs no allocation). */
void kiq_request_clear(kiq_request_t *r);
/* A request cleared with kiq_request_clear, made new as kiq_request_new
 * makes one. */
kiq_request_t *kiq_request_reuse(kiq_request_t *r, struct kiq_processor *p, uint64_t conn_id, uint8_t *frame,
                                 size_t len);
/* The request takes a malloc'd buffer and frees it with itself. Called by
 * the thread holding the request. */
void kiq_request_own(kiq_request_t *r, void *buf);
/* fn(arg) runs when the request is freed: after the last byte of its
 * response was sent, or when its connection went away, on whichever thread
 * frees it (the processor's, usually). Releases what the response refers to
 * (e.g. log segments its file parts read). Called by the thread holding the
 * request; fns run most recent first. */
void kiq_request_defer(kiq_request_t *r, void (*fn)(void *), void *arg);
/* Debug-level line with the request's stage times. */
void kiq_request_log_timing(const kiq_request_t *r);

/* Any thread holding the request: encodes the response (the request's
 * API and version, ApiVersions' unsupported ones as v0) with its header
 * and hands the request back to its processor; a request marked
 * close_after is dropped instead. */
void kiq_request_respond(kiq_request_t *r, const void *response);
/* Any thread holding the request: finishes it without a response. */
void kiq_request_finish(kiq_request_t *r, bool close_connection);
/* Arena copy of a C string as a protocol string; NULL: the null string. */
kiq_str_t kiq_request_str(kiq_request_t *r, const char *s);
/* Arena copy of the error slot's text (for error_message fields). */
kiq_str_t kiq_request_error_message(kiq_request_t *r);

#endif
