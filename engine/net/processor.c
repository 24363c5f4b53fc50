#include "net/processor.h"

#include <errno.h>
#include <ev.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/text.h"
#include "net/connection_quotas.h"
#include "net/memory_pool.h"
#include "security/sasl.h"
#include "security/tls.h"

/* The input buffer holds the bytes of requests not yet framed and little
 * more, so the memory pool is charged about what a peer sent: there is
 * none while nothing is pending (an idle connection costs nothing), and it
 * grows to take what the socket holds (FIONREAD), at least MIN_READ, at
 * most READ_CHUNK until the frame's size is known, then at least doubling
 * (so a request that comes in pieces is copied a bounded number of times)
 * up to the whole frame, which a large request takes with it. Buffers of up
 * to READ_CHUNK are small to the pool: they may use its reserve. */
enum { MIN_READ = 512, READ_CHUNK = 65536 };

/* What a processor keeps of a request it sent the answer of, for the
 * next: the request with its arena's chunk, and its input buffer when it
 * took one no larger than SPARE_INPUT. A small request then costs no
 * allocation; the spares are outside the memory pool, as freed memory is. */
enum { SPARE_REQUESTS = 8, SPARE_INPUTS = 8, SPARE_INPUT = 16384 };

typedef struct spare_input {
    uint8_t *buf;
    size_t cap;
} spare_input_t;

/* Owned by the processor thread. */
typedef struct conn {
    uint64_t id;
    int fd;
    ev_io rio, wio;
    kiq_processor_t *p;
    char peer[64];
    char ip[48];  /* the peer's address, its connection quota's key */
    uint8_t *in; /* bytes read but not yet framed; in_cap of them in the pool; NULL when none */
    size_t in_len, in_cap;
    int64_t last_active_ns;   /* the last byte read or sent (connections.max.idle.ms) */
    int64_t partial_since_ns; /* the unframed bytes' first arrival, 0: none (the read timeout) */
    kiq_request_t *inflight; /* the one request out of this connection */
    bool queued;             /* inflight is on the request queue / with a handler */
    kiq_request_queue_t *queue; /* the one inflight went to */
    uint8_t *out;            /* response bytes being written */
    size_t out_len, out_off;
    const kiq_file_part_t *parts; /* the response's file parts, between its bytes */
    size_t nparts;
    size_t part;       /* next file part to send */
    uint32_t part_off; /* bytes of that part already sent */
    kiq_request_t *out_req;
    struct conn *next_waiting; /* on p->waiting while the queue is full */
    bool waiting;
    struct conn *next_starved; /* on p->starved while the memory pool is used up */
    bool starved;
    bool eof;           /* the peer closed its side: serve what was read, then close */
    kiq_tls_conn_t *tls; /* NULL on a plain listener */
    kiq_sasl_session_t *sasl; /* NULL on a listener without SASL; the principal once authenticated */
    /* a TLS read waits for the socket to be writable, a write for it to be readable */
    bool read_wants_write, write_wants_read;
    /* a client quota's throttle (KIP-219): after the response, nothing is
     * read until the timer fires */
    ev_timer throttle;
    bool throttled;
    struct conn *hnext; /* hash chain */
} conn_t;

typedef struct inbox_socket {
    int fd;
    char peer[64];
    char ip[48];
    struct inbox_socket *next;
} inbox_socket_t;

struct kiq_processor {
    kiq_processor_config_t cfg;
    pthread_t thread;
    bool started;
    struct ev_loop *loop;
    ev_async wake;

    pthread_mutex_t inbox_lock; /* guards the inbox fields */
    inbox_socket_t *new_sockets;
    kiq_request_t *done_head, *done_tail;
    bool space_available;
    bool pool_space; /* the memory pool got bytes back */
    bool stopping;

    /* processor thread only */
    conn_t **table;
    size_t table_size;
    uint64_t next_id;
    conn_t *waiting; /* connections whose request waits for queue space */
    conn_t *starved; /* connections left unread for want of pool memory */
    kiq_request_t *spare_requests; /* cleared, linked by next */
    int nspare_requests;
    spare_input_t spare_inputs[SPARE_INPUTS];
    int nspare_inputs;
    ev_timer tick;   /* idle and read timeouts; retries the starved */
    atomic_int nconns;
    /* Time the loop spent waiting for events (Kafka's network processor
     * idle ratio): stamped before each poll, added up after it. */
    ev_prepare before_poll;
    ev_check after_poll;
    atomic_int_fast64_t poll_started; /* 0 outside a poll; read by any thread */
    atomic_int_fast64_t idle_ns;
    int64_t started_ns;
    /* written by the processor thread alone, read by any (the live view) */
    atomic_int nmuted; /* connections on the waiting list */
    atomic_int nstarved; /* connections on the starved list */
    atomic_uint_fast64_t requests, bytes_in, bytes_out;
    atomic_uint_fast64_t closed_idle, closed_slow;
    /* TLS: file parts of responses are read into this and encrypted (no
     * sendfile through a user-space TLS session) */
    uint8_t *tls_buf;
};

enum { TLS_CHUNK = 16384 }; /* one TLS record's worth */

/* Processor thread: a counter only it writes, so no read-modify-write. */
static void bump(atomic_uint_fast64_t *v, uint64_t by)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + by, memory_order_relaxed);
}

static conn_t *conn_find(kiq_processor_t *p, uint64_t id)
{
    for (conn_t *c = p->table[id % p->table_size]; c; c = c->hnext)
        if (c->id == id) return c;
    return NULL;
}

/* Processor thread: a request for the frame, a spare one if any. */
static kiq_request_t *request_new(kiq_processor_t *p, uint64_t conn_id, uint8_t *frame, size_t len)
{
    kiq_request_t *r = p->spare_requests;
    if (!r) return kiq_request_new(p, conn_id, frame, len);
    p->spare_requests = r->next;
    p->nspare_requests--;
    return kiq_request_reuse(r, p, conn_id, frame, len);
}

/* Keeps a small input buffer for the next read: 0, or -1 when there is no
 * room for it (the caller frees it). */
static int spare_input_put(kiq_processor_t *p, uint8_t *buf, size_t cap)
{
    if (!buf || cap < MIN_READ || cap > SPARE_INPUT || p->nspare_inputs == SPARE_INPUTS) return -1;
    p->spare_inputs[p->nspare_inputs++] = (spare_input_t){buf, cap};
    return 0;
}

/* The smallest spare input buffer of at least cap bytes, taken; NULL: none. */
static uint8_t *spare_input_take(kiq_processor_t *p, size_t *cap)
{
    int best = -1;
    for (int i = 0; i < p->nspare_inputs; i++)
        if (p->spare_inputs[i].cap >= *cap && (best < 0 || p->spare_inputs[i].cap < p->spare_inputs[best].cap))
            best = i;
    if (best < 0) return NULL;
    spare_input_t s = p->spare_inputs[best];
    p->spare_inputs[best] = p->spare_inputs[--p->nspare_inputs];
    *cap = s.cap;
    return s.buf;
}

/* Processor thread, once the request's answer is out: what it held is
 * released, and the request and its input buffer kept if there is room. */
static void request_done(kiq_processor_t *p, kiq_request_t *r)
{
    if (spare_input_put(p, r->frame_mem, r->frame_cap) == 0) r->frame_mem = NULL;
    if (p->nspare_requests == SPARE_REQUESTS) {
        kiq_request_free(r);
        return;
    }
    kiq_request_clear(r);
    r->next = p->spare_requests;
    p->spare_requests = r;
    p->nspare_requests++;
}

static void conn_close(conn_t *c, const char *why)
{
    kiq_processor_t *p = c->p;
    if (why) KIQ_DEBUG("closing connection %s: %s", c->peer, why);
    ev_io_stop(p->loop, &c->rio);
    ev_io_stop(p->loop, &c->wio);
    ev_timer_stop(p->loop, &c->throttle);
    kiq_tls_conn_free(c->tls);
    kiq_sasl_session_unref(c->sasl);
    close(c->fd);
    conn_t **pp = &p->table[c->id % p->table_size];
    while (*pp != c) pp = &(*pp)->hnext;
    *pp = c->hnext;
    if (c->waiting) {
        conn_t **wp = &p->waiting;
        while (*wp != c) wp = &(*wp)->next_waiting;
        *wp = c->next_waiting;
        atomic_store_explicit(&p->nmuted, atomic_load_explicit(&p->nmuted, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    }
    if (c->starved) {
        conn_t **sp = &p->starved;
        while (*sp != c) sp = &(*sp)->next_starved;
        *sp = c->next_starved;
        atomic_store_explicit(&p->nstarved, atomic_load_explicit(&p->nstarved, memory_order_relaxed) - 1,
                              memory_order_relaxed);
    }
    if (p->cfg.pool) kiq_memory_pool_release(p->cfg.pool, c->in_cap);
    if (p->cfg.quotas) kiq_connection_quotas_release(p->cfg.quotas, c->ip);
    /* A request with an I/O thread is freed when it comes back; others now. */
    if (c->inflight && !c->queued) {
        kiq_request_queue_forget(c->queue ? c->queue : p->cfg.queue, c->inflight);
        kiq_request_free(c->inflight);
    }
    kiq_request_free(c->out_req);
    free(c->in);
    free(c);
    atomic_fetch_sub(&p->nconns, 1);
}

static void conn_process_input(conn_t *c);

/* A request is being served, answered or throttled: nothing more is read. */
static bool conn_busy(const conn_t *c) { return c->inflight || c->out || c->throttled; }

/* Watches for input; bytes a TLS session already decrypted show no
 * readiness on the socket, so the callback is made to run for them. */
static void conn_arm_read(conn_t *c)
{
    ev_io_start(c->p->loop, &c->rio);
    if (c->tls && kiq_tls_pending(c->tls)) ev_feed_event(c->p->loop, &c->rio, EV_READ);
}

/* The buffer holds no whole request: read more, unless none can come. */
static void conn_wait_input(conn_t *c)
{
    if (c->eof)
        conn_close(c, "peer closed");
    else if (!c->starved)
        conn_arm_read(c);
}

/* Left unread until the memory pool has room again. */
static void conn_starve(conn_t *c)
{
    kiq_processor_t *p = c->p;
    ev_io_stop(p->loop, &c->rio);
    if (c->starved) return;
    /* its bytes wait unread: they count against the read timeout as if read */
    if (!c->partial_since_ns) c->partial_since_ns = kiq_clock_mono_ns();
    c->starved = true;
    c->next_starved = p->starved;
    p->starved = c;
    atomic_store_explicit(&p->nstarved, atomic_load_explicit(&p->nstarved, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Gives the input buffer back once it is empty: an idle connection holds
 * none. */
static void conn_drop_empty_input(conn_t *c)
{
    if (c->in_len || !c->in) return;
    if (spare_input_put(c->p, c->in, c->in_cap) != 0) free(c->in);
    c->in = NULL;
    if (c->p->cfg.pool) kiq_memory_pool_release(c->p->cfg.pool, c->in_cap);
    c->in_cap = 0;
}

/* Resizes the input buffer to cap (> 0) bytes, the pool's share with it.
 * 1, 0 when the pool has no room (the connection starves), -1 when the
 * connection was closed (out of memory). */
static int conn_resize_input(conn_t *c, size_t cap)
{
    kiq_memory_pool_t *pool = c->p->cfg.pool;
    size_t spare_cap = cap;
    uint8_t *spare = c->in ? NULL : spare_input_take(c->p, &spare_cap);
    if (spare) cap = spare_cap;
    if (cap > c->in_cap && pool && !kiq_memory_pool_reserve(pool, cap - c->in_cap, cap <= READ_CHUNK)) {
        if (spare && spare_input_put(c->p, spare, cap) != 0) free(spare);
        conn_starve(c);
        return 0;
    }
    uint8_t *n = spare ? spare : realloc(c->in, cap);
    if (!n) {
        if (cap > c->in_cap && pool) kiq_memory_pool_release(pool, cap - c->in_cap);
        if (cap < c->in_cap) return 1; /* keeping the larger one is fine */
        KIQ_ERROR("connection %s: out of memory for a %zu-byte input buffer", c->peer, cap);
        conn_close(c, NULL);
        return -1;
    }
    if (cap < c->in_cap && pool) kiq_memory_pool_release(pool, c->in_cap - cap);
    c->in = n;
    c->in_cap = cap;
    return 1;
}

static void conn_enqueue(conn_t *c)
{
    kiq_processor_t *p = c->p;
    c->queue = p->cfg.urgent_queue && p->cfg.urgent(p->cfg.admit_ctx, c->inflight) ? p->cfg.urgent_queue : p->cfg.queue;
    if (kiq_request_queue_try_push(c->queue, c->inflight)) {
        c->queued = true;
        return;
    }
    /* Queue full: keep the request and stay muted until a pop makes room. */
    if (!c->waiting) {
        c->waiting = true;
        c->next_waiting = p->waiting;
        p->waiting = c;
        atomic_store_explicit(&p->nmuted, atomic_load_explicit(&p->nmuted, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
}

/* The request for the whole frame of size bytes at the input buffer's
 * start, taken out of the buffer. A frame that is all of the buffer, or a
 * large one, takes the buffer itself (and its share of the memory pool),
 * so its bytes go from the socket to the segment write without a copy;
 * whatever followed it (less than READ_CHUNK, as the buffer grew toward
 * the frame) moves to a buffer of its own size. Other small frames are
 * copied out. NULL when out of memory. */
static kiq_request_t *frame_request(conn_t *c, size_t size)
{
    kiq_memory_pool_t *pool = c->p->cfg.pool;
    size_t need = 4 + size, rest = c->in_len - need;
    kiq_request_t *r;
    if (rest == 0 || (size >= READ_CHUNK && rest <= READ_CHUNK)) {
        uint8_t *next = NULL;
        if ((rest && !(next = malloc(rest))) || !(r = request_new(c->p, c->id, c->in + 4, size))) {
            free(next);
            return NULL;
        }
        if (rest) memcpy(next, c->in + need, rest);
        r->frame_mem = c->in;
        r->frame_cap = c->in_cap;
        if (pool) {
            r->pool = pool;
            r->pooled = c->in_cap;
            /* what followed was read already: it is counted whatever the pool holds */
            kiq_memory_pool_take(pool, rest);
        }
        c->in = next;
        c->in_cap = c->in_len = rest;
        return r;
    }
    uint8_t *frame = malloc(size ? size : 1);
    if (!frame || !(r = request_new(c->p, c->id, frame, size))) {
        free(frame);
        return NULL;
    }
    /* read already: it must be framed for the pool to drain at all */
    if (pool) {
        kiq_memory_pool_take(pool, size);
        r->pool = pool;
        r->pooled = size;
    }
    memcpy(frame, c->in + 4, size);
    memmove(c->in, c->in + need, rest);
    c->in_len = rest;
    return r;
}

/* A raw SASL token (after a SaslHandshake v0) as the SaslAuthenticate v0
 * request that carries it, so that it is handled as one; its answer goes
 * out raw (kiq_request_t.sasl_raw). */
static int as_sasl_authenticate(kiq_request_t *r)
{
    enum { HEADER = 2 + 2 + 4 + 2 }; /* api key, version, correlation id, a null client id */
    uint8_t *frame = malloc(HEADER + 4 + r->frame_len);
    if (!frame) return -1;
    kiq_request_own(r, frame);
    kiq_put_be16(frame, 36);
    kiq_put_be16(frame + 2, 0);
    kiq_put_be32(frame + 4, 0);
    kiq_put_be16(frame + 8, (uint16_t)-1);
    kiq_put_be32(frame + HEADER, (uint32_t)r->frame_len);
    memcpy(frame + HEADER + 4, r->frame, r->frame_len);
    r->frame = frame;
    r->frame_len = HEADER + 4 + r->frame_len;
    r->sasl_raw = true;
    return 0;
}

/* Frames one request out of the input buffer, if a whole one is there. */
static void conn_process_input(conn_t *c)
{
    kiq_processor_t *p = c->p;
    if (conn_busy(c)) return;
    if (c->in_len < 4) {
        conn_wait_input(c);
        return;
    }
    int32_t size = (int32_t)kiq_be32(c->in);
    if (size < 0 || (size_t)size > p->cfg.max_request_bytes) {
        KIQ_WARN_LIMITED("connection %s: frame size %d outside [0, %zu] (socket.request.max.bytes), closing",
                 c->peer, size, p->cfg.max_request_bytes);
        conn_close(c, NULL);
        return;
    }
    size_t need = 4 + (size_t)size;
    if (c->in_len < need) {
        conn_wait_input(c);
        return;
    }
    kiq_request_t *r = frame_request(c, (size_t)size);
    if (!r) {
        conn_close(c, "out of memory");
        return;
    }
    c->partial_since_ns = c->in_len ? kiq_clock_mono_ns() : 0;
    /* a buffer the frames taken out of it left mostly empty shrinks to what it holds */
    if (c->in_len && c->in_cap > MIN_READ && c->in_len < c->in_cap / 4 &&
        conn_resize_input(c, c->in_len > MIN_READ ? c->in_len : MIN_READ) < 0) {
        kiq_request_free(r);
        return;
    }
    r->t.received = kiq_clock_mono_ns();
    bump(&p->requests, 1);
    r->listener = p->cfg.listener;
    r->tls = p->cfg.tls != NULL;
    kiq_text_copy_cstr(r->peer, sizeof r->peer, c->peer);

    if (c->sasl && kiq_sasl_raw_token_next(c->sasl) && as_sasl_authenticate(r) != 0) {
        kiq_request_free(r);
        conn_close(c, "out of memory");
        return;
    }
    kiq_rd_t rd;
    kiq_rd_init(&rd, r->frame, r->frame_len);
    if (kiq_request_header_decode(&rd, &r->header) != 0) {
        KIQ_WARN_LIMITED("connection %s: malformed request header (api key %d, version %d) at offset %zu: %s; closing",
                 c->peer, r->header.api_key, r->header.api_version, kiq_rd_offset(&rd), rd.err);
        kiq_request_free(r);
        conn_close(c, NULL);
        return;
    }
    r->body_offset = kiq_rd_offset(&rd);
    if (p->cfg.admit(p->cfg.admit_ctx, r) != 0) {
        kiq_request_free(r);
        conn_close(c, NULL);
        return;
    }
    if (c->sasl) {
        /* as Kafka: anything but the handshake before authentication, or
         * after the session's lifetime (KIP-368), closes the connection */
        if (!kiq_sasl_allows(c->sasl, r->header.api_key, kiq_clock_mono_ms())) {
            KIQ_WARN_LIMITED("connection %s: %s %s; closing", c->peer, r->codec ? r->codec->name : "a request",
                             kiq_sasl_authenticated(c->sasl) ? "after its SASL session expired"
                                                              : "before SASL authentication");
            kiq_request_free(r);
            conn_close(c, NULL);
            return;
        }
        r->sasl = kiq_sasl_session_ref(c->sasl);
    }
    const char *who = c->sasl ? kiq_sasl_principal(c->sasl) : c->tls ? kiq_tls_principal(c->tls) : NULL;
    kiq_text_copy_cstr(r->principal, sizeof r->principal, who ? who : "User:ANONYMOUS");
    kiq_text_copy_cstr(r->host, sizeof r->host, c->ip);
    if (kiq_observers_want(p->cfg.observers, KIQ_POINT_RECEIVED)) {
        kiq_event_t e = kiq_event(KIQ_POINT_RECEIVED, p->cfg.broker);
        e.request = r;
        e.thread = p->cfg.id;
        e.bytes = size;
        kiq_observers_emit(p->cfg.observers, &e);
    }
    /* One request in flight per connection: nothing more is read until it
     * is done. The read watcher stays armed: a client that waits for its
     * answer sends nothing meanwhile, and stopping and starting the
     * watcher would cost an epoll_ctl per request (libev's lazy removal
     * makes the restart an ADD that fails with EEXIST). Input that does
     * come meanwhile mutes the connection in conn_read_cb. */
    c->inflight = r;
    conn_enqueue(c);
}

/* The size the full input buffer should grow to for the next read (see
 * MIN_READ); 0 when it should not: it holds a whole frame (frame it
 * first) or a size conn_process_input refuses, or bytes were read in this
 * callback (read_some) and the socket holds no more. Until then a read is
 * tried whatever the socket holds, to see an end of stream. */
static size_t input_want(conn_t *c, bool read_some)
{
    /* a new request's first bytes go into a spare buffer as they are,
     * without asking the socket how many there are (a small request is
     * then read whole; a larger one asks when it fills the buffer) */
    if (!c->in && !read_some && c->p->nspare_inputs > 0) return MIN_READ;
    size_t need = READ_CHUNK; /* until the frame's size is known */
    if (c->in_len >= 4) {
        int32_t size = (int32_t)kiq_be32(c->in);
        if (size < 0 || (size_t)size > c->p->cfg.max_request_bytes) return 0;
        need = 4 + (size_t)size;
        if (need <= c->in_len) return 0;
    }
    int held = 0;
    if (ioctl(c->fd, FIONREAD, &held) < 0 || held < 0) held = 0;
    if (c->tls) held += (int)kiq_tls_pending(c->tls);
    if (!held && read_some) return 0;
    size_t more = (size_t)held > MIN_READ ? (size_t)held : MIN_READ;
    if (c->in_len >= 4 && held && more < c->in_cap) more = c->in_cap;
    return c->in_len + more < need ? c->in_len + more : need;
}

static bool conn_flush(conn_t *c);

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    conn_t *c = w->data;
    if (c->write_wants_read) {
        /* a TLS write waited for this readiness; reading resumes after the response */
        c->write_wants_read = false;
        ev_io_stop(loop, &c->rio);
        conn_flush(c);
        return;
    }
    if (conn_busy(c)) {
        /* input (or an end of stream) behind the request being served:
         * muted now, read once the answer is out (conn_process_input) */
        ev_io_stop(loop, &c->rio);
        return;
    }
    bool read_some = false;
    for (;;) {
        if (c->in_len == c->in_cap) {
            size_t want = input_want(c, read_some);
            if (!want) break;
            int rc = conn_resize_input(c, want);
            if (rc < 0) return;
            if (rc == 0) break; /* starved: what is in may still frame */
        }
        bool other = false;
        size_t room = c->in_cap - c->in_len;
        ssize_t n = c->tls ? kiq_tls_read(c->tls, c->in + c->in_len, room, &other)
                           : read(c->fd, c->in + c->in_len, room);
        if (n > 0) {
            read_some = true;
            bump(&c->p->bytes_in, (uint64_t)n);
            c->last_active_ns = kiq_clock_mono_ns();
            if (c->in_len == 0) c->partial_since_ns = c->last_active_ns;
            c->in_len += (size_t)n;
            /* a short plaintext read emptied the socket: the read that
             * would only say EAGAIN is saved (the watcher, level-triggered,
             * reports whatever comes next, an end of stream included) */
            if (!c->tls && (size_t)n < room) break;
            continue;
        }
        if (n == 0) {
            /* Requests read before the close are still served, as Kafka
             * does: an acks=0 producer may close right after its last send. */
            c->eof = true;
            break;
        }
        if (errno == EINTR) continue;
        if (other) {
            /* the session must write (a handshake step) before it reads again */
            c->read_wants_write = true;
            ev_io_stop(loop, &c->rio);
            ev_io_start(loop, &c->wio);
            conn_drop_empty_input(c);
            return;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (c->tls && errno != ECONNRESET) KIQ_WARN_LIMITED("connection %s: %s; closing", c->peer, kiq_error_get());
        conn_close(c, strerror(errno));
        return;
    }
    conn_drop_empty_input(c);
    conn_process_input(c);
}

static void conn_finish_write(conn_t *c)
{
    c->out_req->t.sent = kiq_clock_mono_ns();
    if (kiq_observers_want(c->p->cfg.observers, KIQ_POINT_SENT)) {
        kiq_event_t e = kiq_event(KIQ_POINT_SENT, c->p->cfg.broker);
        e.request = c->out_req;
        e.thread = c->p->cfg.id;
        e.bytes = (int64_t)c->out_req->response_len;
        if (!c->out_req->response) e.flags = KIQ_EVENT_NO_RESPONSE;
        kiq_observers_emit(c->p->cfg.observers, &e);
    }
    kiq_request_log_timing(c->out_req);
    if (c->p->cfg.done) c->p->cfg.done(c->p->cfg.admit_ctx, c->out_req);
    bool close_after = c->out_req->close_after;
    int64_t throttle_ms = c->out_req->throttle_ms;
    request_done(c->p, c->out_req);
    c->out_req = NULL;
    c->out = NULL;
    c->parts = NULL;
    c->nparts = 0;
    if (close_after) {
        conn_close(c, "closed by the request handler");
        return;
    }
    if (throttle_ms > 0) {
        /* muted, as Kafka mutes a throttled channel; conn_unthrottle reads on */
        c->throttled = true;
        ev_timer_set(&c->throttle, (double)throttle_ms / 1000.0, 0);
        ev_timer_start(c->p->loop, &c->throttle);
        return;
    }
    /* bytes that came behind the request wait from now on */
    if (c->in_len) c->partial_since_ns = kiq_clock_mono_ns();
    conn_process_input(c);
}

static void conn_unthrottle(struct ev_loop *loop, ev_timer *w, int revents)
{
    conn_t *c = w->data;
    c->throttled = false;
    if (c->in_len) c->partial_since_ns = kiq_clock_mono_ns();
    conn_process_input(c);
}

static void sent(conn_t *c, ssize_t n)
{
    c->last_active_ns = kiq_clock_mono_ns();
    bump(&c->p->bytes_out, (uint64_t)n);
}

/* conn_send_some on a TLS session: file parts are read and encrypted a
 * record at a time (a part's bytes are read again, the same ones, when
 * the write must be retried). */
static ssize_t conn_send_tls(conn_t *c, size_t upto)
{
    bool other = false;
    ssize_t n;
    if (c->out_off < upto) {
        n = kiq_tls_write(c->tls, c->out + c->out_off, upto - c->out_off, &other);
        if (n > 0) c->out_off += (size_t)n;
    } else {
        const kiq_file_range_t *f = &c->parts[c->part].range;
        size_t want = f->length - c->part_off < TLS_CHUNK ? f->length - c->part_off : TLS_CHUNK;
        n = pread(f->fd, c->p->tls_buf, want, (off_t)(f->offset + c->part_off));
        if (n <= 0) return n;
        n = kiq_tls_write(c->tls, c->p->tls_buf, (size_t)n, &other);
        if (n > 0 && (c->part_off += (uint32_t)n) == f->length) {
            c->part++;
            c->part_off = 0;
        }
    }
    if (n > 0) sent(c, n);
    c->write_wants_read = n < 0 && other;
    return n;
}

/* Sends from where the response stands: the bytes up to the next file
 * part with send() (MSG_MORE when a part follows, so a small header and the
 * file data share segments), the part with sendfile(). Returns what the
 * call returned; 0 from sendfile means the file is shorter than its part
 * (the log was truncated after the fetch located it). */
static ssize_t conn_send_some(conn_t *c)
{
    size_t upto = c->part < c->nparts ? c->parts[c->part].at : c->out_len;
    if (c->tls) return conn_send_tls(c, upto);
    if (c->out_off < upto) {
        int flags = MSG_NOSIGNAL | (c->part < c->nparts ? MSG_MORE : 0);
        ssize_t n = send(c->fd, c->out + c->out_off, upto - c->out_off, flags);
        if (n > 0) {
            c->last_active_ns = kiq_clock_mono_ns();
            c->out_off += (size_t)n;
            bump(&c->p->bytes_out, (uint64_t)n);
        }
        return n;
    }
    const kiq_file_range_t *f = &c->parts[c->part].range;
    off_t pos = (off_t)(f->offset + c->part_off);
    ssize_t n = sendfile(c->fd, f->fd, &pos, f->length - c->part_off);
    if (n > 0) {
        c->last_active_ns = kiq_clock_mono_ns();
        bump(&c->p->bytes_out, (uint64_t)n);
        c->part_off += (uint32_t)n;
        if (c->part_off == f->length) {
            c->part++;
            c->part_off = 0;
        }
    }
    return n;
}

/* Returns false when the connection was closed. */
static bool conn_flush(conn_t *c)
{
    while (c->out_off < c->out_len || c->part < c->nparts) {
        ssize_t n = conn_send_some(c);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ev_io_start(c->p->loop, c->write_wants_read ? &c->rio : &c->wio);
            return true;
        }
        /* A response cut short cannot be framed any more: the client sees
         * the connection close and retries. */
        conn_close(c, n < 0 ? strerror(errno) : "nothing sent (a segment file truncated under a fetch?)");
        return false;
    }
    ev_io_stop(c->p->loop, &c->wio);
    conn_finish_write(c);
    return true;
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    conn_t *c = w->data;
    if (c->read_wants_write) {
        /* a TLS read (the handshake) waited for this readiness */
        c->read_wants_write = false;
        ev_io_stop(loop, &c->wio);
        conn_read_cb(loop, &c->rio, EV_READ);
        return;
    }
    conn_flush(c);
}

static void conn_respond(conn_t *c, kiq_request_t *r)
{
    c->inflight = NULL;
    c->queued = false;
    c->out_req = r;
    if (!r->response) {
        /* acks=0 produce, or a connection the handler wants dropped */
        conn_finish_write(c);
        return;
    }
    c->out = r->response;
    c->out_len = r->response_len;
    c->out_off = 0;
    c->parts = r->response_parts;
    c->nparts = r->response_nparts;
    c->part = 0;
    c->part_off = 0;
    conn_flush(c);
}

static void adopt_socket(kiq_processor_t *p, inbox_socket_t *s)
{
    conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(s->fd);
        if (p->cfg.quotas) kiq_connection_quotas_release(p->cfg.quotas, s->ip);
        return;
    }
    c->id = ++p->next_id;
    c->fd = s->fd;
    c->p = p;
    if ((p->cfg.tls && !(c->tls = kiq_tls_conn_new(p->cfg.tls, c->fd))) ||
        (p->cfg.sasl && !(c->sasl = kiq_sasl_session_new(p->cfg.sasl)))) {
        kiq_tls_conn_free(c->tls);
        close(s->fd);
        if (p->cfg.quotas) kiq_connection_quotas_release(p->cfg.quotas, s->ip);
        free(c);
        return;
    }
    snprintf(c->peer, sizeof c->peer, "%s", s->peer);
    snprintf(c->ip, sizeof c->ip, "%s", s->ip);
    c->last_active_ns = kiq_clock_mono_ns();
    ev_io_init(&c->rio, conn_read_cb, c->fd, EV_READ);
    ev_io_init(&c->wio, conn_write_cb, c->fd, EV_WRITE);
    ev_timer_init(&c->throttle, conn_unthrottle, 0, 0);
    c->rio.data = c->wio.data = c->throttle.data = c;
    c->hnext = p->table[c->id % p->table_size];
    p->table[c->id % p->table_size] = c;
    atomic_fetch_add(&p->nconns, 1);
    ev_io_start(p->loop, &c->rio);
}

static void retry_waiting(kiq_processor_t *p)
{
    conn_t *list = p->waiting;
    p->waiting = NULL;
    atomic_store_explicit(&p->nmuted, 0, memory_order_relaxed);
    while (list) {
        conn_t *c = list;
        list = c->next_waiting;
        c->waiting = false;
        conn_enqueue(c);
    }
}

/* The memory pool may have room: the starved connections read again (one
 * that still finds none starves again). */
static void retry_starved(kiq_processor_t *p)
{
    conn_t *list = p->starved;
    p->starved = NULL;
    atomic_store_explicit(&p->nstarved, 0, memory_order_relaxed);
    while (list) {
        conn_t *c = list;
        list = c->next_starved;
        c->starved = false;
        if (!conn_busy(c)) conn_arm_read(c);
    }
}

static void count(atomic_uint_fast64_t *v) { bump(v, 1); }

/* Closes connections past connections.max.idle.ms and those whose request
 * has not come whole within kafkaiq.request.read.timeout.ms of its first
 * byte (a slow or stalled sender would otherwise hold its buffer and slot
 * forever); and retries the starved, in case a wake-up was missed. */
static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    kiq_processor_t *p = w->data;
    int64_t now = kiq_clock_mono_ns();
    int64_t idle_ns = p->cfg.idle_ms * 1000000, read_ns = p->cfg.read_timeout_ms * 1000000;
    for (size_t i = 0; i < p->table_size; i++) {
        conn_t *next;
        for (conn_t *c = p->table[i]; c; c = next) {
            next = c->hnext;
            if (c->inflight || c->throttled) continue; /* its request is being served, or it waits muted */
            if (read_ns > 0 && (c->in_len || c->starved) && c->partial_since_ns &&
                now - c->partial_since_ns > read_ns) {
                KIQ_WARN_LIMITED("connection %s closed: %zu bytes of a request came in %lld ms without the rest "
                                 "(kafkaiq.request.read.timeout.ms)", c->peer, c->in_len,
                                 (long long)((now - c->partial_since_ns) / 1000000));
                count(&p->closed_slow);
                conn_close(c, NULL);
            } else if (idle_ns > 0 && now - c->last_active_ns > idle_ns) {
                count(&p->closed_idle);
                conn_close(c, "idle longer than connections.max.idle.ms");
            }
        }
    }
    if (p->starved) retry_starved(p);
}

static void wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
    kiq_processor_t *p = w->data;
    pthread_mutex_lock(&p->inbox_lock);
    inbox_socket_t *sockets = p->new_sockets;
    kiq_request_t *done = p->done_head;
    bool space = p->space_available, pool_space = p->pool_space, stopping = p->stopping;
    p->new_sockets = NULL;
    p->done_head = p->done_tail = NULL;
    p->space_available = false;
    p->pool_space = false;
    pthread_mutex_unlock(&p->inbox_lock);

    while (sockets) {
        inbox_socket_t *s = sockets;
        sockets = s->next;
        if (stopping) {
            close(s->fd);
            if (p->cfg.quotas) kiq_connection_quotas_release(p->cfg.quotas, s->ip);
        } else {
            adopt_socket(p, s);
        }
        free(s);
    }
    while (done) {
        kiq_request_t *r = done;
        done = r->next;
        r->next = NULL;
        conn_t *c = conn_find(p, r->conn_id);
        if (c && c->inflight == r) {
            r->t.response_dequeued = kiq_clock_mono_ns();
            conn_respond(c, r);
        } else {
            kiq_request_free(r); /* the connection went away meanwhile */
        }
    }
    if (space) retry_waiting(p);
    if (pool_space) retry_starved(p);
    if (stopping) ev_break(loop, EVBREAK_ALL);
}

static void poll_starts(struct ev_loop *loop, ev_prepare *w, int revents)
{
    kiq_processor_t *p = w->data;
    atomic_store_explicit(&p->poll_started, kiq_clock_mono_ns(), memory_order_relaxed);
}

static void poll_ends(struct ev_loop *loop, ev_check *w, int revents)
{
    kiq_processor_t *p = w->data;
    int64_t since = atomic_load_explicit(&p->poll_started, memory_order_relaxed);
    if (since) atomic_fetch_add_explicit(&p->idle_ns, kiq_clock_mono_ns() - since, memory_order_relaxed);
    atomic_store_explicit(&p->poll_started, 0, memory_order_relaxed);
}

/* Any thread: the time waited for events so far, the poll under way too
 * (an idle loop may wait in one poll for minutes). */
static int64_t idle_so_far(kiq_processor_t *p, int64_t now)
{
    int64_t since = atomic_load_explicit(&p->poll_started, memory_order_relaxed);
    int64_t idle = atomic_load_explicit(&p->idle_ns, memory_order_relaxed);
    return idle + (since && since < now ? now - since : 0);
}

static void *processor_main(void *arg)
{
    kiq_processor_t *p = arg;
    char name[24];
    snprintf(name, sizeof name, "processor-%d", p->cfg.id);
    kiq_say_thread_name(name);
    /* sendfile() has no MSG_NOSIGNAL: a peer gone mid-response must give
     * EPIPE, not kill a process that embeds the engine and kept SIGPIPE's
     * default. The signal stays pending on this thread, harmlessly. */
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);
    ev_run(p->loop, 0);
    /* Close what is left; requests still with I/O threads come back to a
     * missing connection and are freed in the final inbox drain. */
    for (size_t i = 0; i < p->table_size; i++)
        while (p->table[i]) conn_close(p->table[i], NULL);
    return NULL;
}

kiq_processor_t *kiq_processor_new(const kiq_processor_config_t *cfg)
{
    kiq_processor_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cfg = *cfg;
    p->table_size = 1024;
    p->table = calloc(p->table_size, sizeof *p->table);
    p->loop = ev_loop_new(EVFLAG_AUTO);
    if (cfg->tls) p->tls_buf = malloc(TLS_CHUNK);
    if (!p->table || !p->loop || (cfg->tls && !p->tls_buf)) {
        kiq_processor_free(p);
        kiq_error_set("processor %d: cannot create event loop", cfg->id);
        return NULL;
    }
    pthread_mutex_init(&p->inbox_lock, NULL);
    ev_async_init(&p->wake, wake_cb);
    p->wake.data = p;
    ev_async_start(p->loop, &p->wake);
    ev_prepare_init(&p->before_poll, poll_starts);
    p->before_poll.data = p;
    ev_prepare_start(p->loop, &p->before_poll);
    ev_check_init(&p->after_poll, poll_ends);
    p->after_poll.data = p;
    ev_check_start(p->loop, &p->after_poll);
    /* often enough for the shorter timeout to be kept to within a quarter */
    int64_t shortest = 4000;
    if (cfg->idle_ms > 0 && cfg->idle_ms < shortest) shortest = cfg->idle_ms;
    if (cfg->read_timeout_ms > 0 && cfg->read_timeout_ms < shortest) shortest = cfg->read_timeout_ms;
    double every = (double)shortest / 4000.0;
    if (every > 1.0) every = 1.0;
    if (every < 0.01) every = 0.01;
    ev_timer_init(&p->tick, tick_cb, every, every);
    p->tick.data = p;
    ev_timer_start(p->loop, &p->tick);
    atomic_init(&p->idle_ns, 0);
    atomic_init(&p->poll_started, 0);
    atomic_init(&p->nmuted, 0);
    atomic_init(&p->nstarved, 0);
    atomic_init(&p->closed_idle, 0);
    atomic_init(&p->closed_slow, 0);
    atomic_init(&p->requests, 0);
    atomic_init(&p->bytes_in, 0);
    atomic_init(&p->bytes_out, 0);
    return p;
}

double kiq_processor_idle_ratio(kiq_processor_t *p)
{
    int64_t now = kiq_clock_mono_ns(), up = now - p->started_ns;
    if (!p->started || up <= 0) return 1.0;
    double r = (double)idle_so_far(p, now) / (double)up;
    return r > 1 ? 1 : r;
}

int kiq_processor_start(kiq_processor_t *p)
{
    p->started_ns = kiq_clock_mono_ns();
    if (pthread_create(&p->thread, NULL, processor_main, p) != 0)
        return kiq_error_errno("processor %d: cannot start thread", p->cfg.id);
    p->started = true;
    return 0;
}

static void wake(kiq_processor_t *p) { ev_async_send(p->loop, &p->wake); }

void kiq_processor_stop(kiq_processor_t *p)
{
    if (!p || !p->started) return;
    pthread_mutex_lock(&p->inbox_lock);
    p->stopping = true;
    pthread_mutex_unlock(&p->inbox_lock);
    wake(p);
    pthread_join(p->thread, NULL);
    pthread_mutex_lock(&p->inbox_lock);
    p->started = false;
    pthread_mutex_unlock(&p->inbox_lock);
}

void kiq_processor_free(kiq_processor_t *p)
{
    if (!p) return;
    kiq_processor_stop(p);
    while (p->new_sockets) {
        inbox_socket_t *s = p->new_sockets;
        p->new_sockets = s->next;
        close(s->fd);
        free(s);
    }
    while (p->done_head) {
        kiq_request_t *r = p->done_head;
        p->done_head = r->next;
        kiq_request_free(r);
    }
    while (p->spare_requests) {
        kiq_request_t *r = p->spare_requests;
        p->spare_requests = r->next;
        kiq_request_free(r);
    }
    for (int i = 0; i < p->nspare_inputs; i++) free(p->spare_inputs[i].buf);
    if (p->loop) ev_loop_destroy(p->loop);
    free(p->tls_buf);
    pthread_mutex_destroy(&p->inbox_lock);
    free(p->table);
    free(p);
}

void kiq_processor_add_socket(kiq_processor_t *p, int fd, const char *peer, const char *ip)
{
    inbox_socket_t *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        if (p->cfg.quotas) kiq_connection_quotas_release(p->cfg.quotas, ip);
        return;
    }
    s->fd = fd;
    snprintf(s->peer, sizeof s->peer, "%s", peer);
    snprintf(s->ip, sizeof s->ip, "%s", ip);
    pthread_mutex_lock(&p->inbox_lock);
    s->next = p->new_sockets;
    p->new_sockets = s;
    pthread_mutex_unlock(&p->inbox_lock);
    wake(p);
}

void kiq_processor_complete(kiq_request_t *r)
{
    kiq_processor_t *p = r->processor;
    r->t.response_queued = kiq_clock_mono_ns();
    if (kiq_observers_want(p->cfg.observers, KIQ_POINT_RESPONSE_QUEUED)) {
        kiq_event_t e = kiq_event(KIQ_POINT_RESPONSE_QUEUED, p->cfg.broker);
        e.request = r;
        e.bytes = (int64_t)r->response_len;
        if (!r->response) e.flags = KIQ_EVENT_NO_RESPONSE;
        kiq_observers_emit(p->cfg.observers, &e);
    }
    r->next = NULL;
    pthread_mutex_lock(&p->inbox_lock);
    bool stopped = p->stopping && !p->started;
    if (!stopped) {
        if (p->done_tail)
            p->done_tail->next = r;
        else
            p->done_head = r;
        p->done_tail = r;
    }
    pthread_mutex_unlock(&p->inbox_lock);
    if (stopped)
        kiq_request_free(r);
    else
        wake(p);
}

void kiq_processor_queue_space(void *processor)
{
    kiq_processor_t *p = processor;
    pthread_mutex_lock(&p->inbox_lock);
    p->space_available = true;
    pthread_mutex_unlock(&p->inbox_lock);
    wake(p);
}

void kiq_processor_pool_space(void *processor)
{
    kiq_processor_t *p = processor;
    pthread_mutex_lock(&p->inbox_lock);
    p->pool_space = true;
    pthread_mutex_unlock(&p->inbox_lock);
    wake(p);
}

void kiq_processor_stats(kiq_processor_t *p, kiq_processor_stats_t *out)
{
    int64_t now = kiq_clock_mono_ns();
    *out = (kiq_processor_stats_t){
        .connections = atomic_load(&p->nconns),
        .muted = atomic_load_explicit(&p->nmuted, memory_order_relaxed),
        .starved = atomic_load_explicit(&p->nstarved, memory_order_relaxed),
        .closed_idle = atomic_load_explicit(&p->closed_idle, memory_order_relaxed),
        .closed_slow = atomic_load_explicit(&p->closed_slow, memory_order_relaxed),
        .requests = atomic_load_explicit(&p->requests, memory_order_relaxed),
        .bytes_in = atomic_load_explicit(&p->bytes_in, memory_order_relaxed),
        .bytes_out = atomic_load_explicit(&p->bytes_out, memory_order_relaxed),
        .idle_ns = p->started ? idle_so_far(p, now) : 0,
        .up_ns = p->started ? now - p->started_ns : 0,
    };
}
