#include "net/client.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "core/version.h"
#include "proto/errors.h"
#include "proto/header.h"
#include "proto/messages.h"
#include "security/peer_security.h"
#include "security/sasl_client.h"
#include "security/tls.h"

/* Broker ranges kept for api keys below this; Kafka's keys stay far below. */
enum { KEY_SLOTS = 256 };
/* Bytes a plaintext read takes in at once: a small response's size prefix
 * and frame come in one recv. */
enum { READ_AHEAD = 16384 };

/* Owned by the thread that connected it; only `shut` and the fd's
 * shutdown() are touched by others (kiq_client_shutdown). */
struct kiq_client_conn {
    pthread_mutex_t fd_lock; /* guards closing fd against a concurrent shutdown() */
    int fd;                  /* -1 once closed; written by the owner under fd_lock */
    kiq_tls_conn_t *tls;     /* the TLS session over fd; NULL: plaintext */
    atomic_bool shut;        /* kiq_client_shutdown was called */
    char peer[280];          /* "host:port" */
    char *client_id;         /* NULL: sent as a null string */
    int32_t correlation;     /* of the last request sent */
    int16_t broker_min[KEY_SLOTS], broker_max[KEY_SLOTS]; /* -1: not offered */
    uint8_t ahead[READ_AHEAD]; /* plaintext bytes received and not yet read */
    size_t ahead_at, ahead_len;
};

/* -1: no deadline */
static int64_t deadline_of(int timeout_ms) { return timeout_ms < 0 ? -1 : kiq_clock_mono_ms() + timeout_ms; }

static void close_fd(kiq_client_conn_t *c)
{
    pthread_mutex_lock(&c->fd_lock);
    kiq_tls_conn_free(c->tls);
    c->tls = NULL;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    pthread_mutex_unlock(&c->fd_lock);
}

/* Waits until fd is ready for events, the deadline passes or the connection
 * is shut down. 0, or -1 with the reason. */
static int wait_fd(kiq_client_conn_t *c, short events, int64_t deadline, const char *what)
{
    for (;;) {
        if (atomic_load(&c->shut)) return kiq_error_set("shut down while %s", what);
        int left = -1;
        if (deadline >= 0) {
            int64_t ms = deadline - kiq_clock_mono_ms();
            if (ms <= 0) return kiq_error_set("timed out %s", what);
            left = ms > INT_MAX ? INT_MAX : (int)ms;
        }
        struct pollfd p = {.fd = c->fd, .events = events};
        int n = poll(&p, 1, left);
        if (n < 0 && errno != EINTR) return kiq_error_errno("poll while %s", what);
        /* errors and hang-ups surface in the send() or recv() that follows */
        if (n > 0) return 0;
    }
}

/* The reason a socket call failed: a shutdown from another thread makes the
 * kernel report EPIPE or end of stream, which would hide the real cause. */
static int io_failed(kiq_client_conn_t *c, const char *what, bool eof)
{
    if (atomic_load(&c->shut)) return kiq_error_set("shut down while %s", what);
    if (eof) return kiq_error_set("connection closed by the broker while %s", what);
    if (c->tls && errno == EPROTO) {
        char why[300];
        snprintf(why, sizeof why, "%s", kiq_error_get()); /* OpenSSL's reason */
        return kiq_error_set("%s: %s", what, why);
    }
    return kiq_error_errno("%s", what);
}

static int write_all(kiq_client_conn_t *c, const uint8_t *p, size_t n, int64_t deadline)
{
    while (n > 0) {
        if (atomic_load(&c->shut)) return kiq_error_set("shut down while sending the request");
        bool other = false; /* TLS: the socket must be readable first */
        ssize_t k = c->tls ? kiq_tls_write(c->tls, p, n, &other) : send(c->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(c, other ? POLLIN : POLLOUT, deadline, "sending the request") != 0) return -1;
        } else if (k < 0 && errno != EINTR) {
            return io_failed(c, "sending the request", false);
        }
    }
    return 0;
}

static int read_exact(kiq_client_conn_t *c, uint8_t *p, size_t n, int64_t deadline)
{
    size_t have = c->ahead_len < n ? c->ahead_len : n;
    memcpy(p, c->ahead + c->ahead_at, have);
    c->ahead_at += have;
    c->ahead_len -= have;
    p += have;
    n -= have;
    while (n > 0) {
        if (atomic_load(&c->shut)) return kiq_error_set("shut down while waiting for the response");
        bool other = false; /* TLS: the socket must be writable first */
        ssize_t k = c->tls ? kiq_tls_read(c->tls, p, n, &other) : recv(c->fd, p, n, 0);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k == 0) {
            return io_failed(c, "waiting for the response", true);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (wait_fd(c, other ? POLLOUT : POLLIN, deadline, "waiting for the response") != 0) return -1;
        } else if (errno != EINTR) {
            return io_failed(c, "waiting for the response", false);
        }
    }
    return 0;
}

/* Encodes header and body into one size-prefixed frame and sends it under
 * the next correlation id. */
static int send_request(kiq_client_conn_t *c, const kiq_api_codec_t *codec, int16_t version,
                        const void *request, int64_t deadline)
{
    c->correlation = c->correlation == INT32_MAX ? 1 : c->correlation + 1;
    kiq_request_header_t h = {
        .api_key = codec->key,
        .api_version = version,
        .correlation_id = c->correlation,
        .client_id = c->client_id ? KIQ_STR(c->client_id) : KIQ_STR_NULL,
        .version = (int8_t)kiq_request_header_version(codec->key, version),
    };
    kiq_wr_t w;
    kiq_wr_init(&w);
    kiq_wr_i32(&w, 0);
    kiq_request_header_encode(&w, &h);
    int rc = codec->request_encode(&w, version, request);
    if (rc != 0 || w.err) {
        rc = kiq_error_set("out of memory encoding the request");
    } else if (w.nparts > 0) {
        rc = kiq_error_set("records in files cannot be sent by the client");
    } else if (w.len - 4 > INT32_MAX) {
        rc = kiq_error_set("request of %zu bytes is too large", w.len - 4);
    } else {
        kiq_wr_patch_i32(&w, 0, (int32_t)(w.len - 4));
        rc = write_all(c, w.buf, w.len, deadline);
    }
    kiq_wr_free(&w);
    return rc;
}

/* Reads the response frame into arena (decoded values point into it), checks
 * its correlation id and leaves r at the start of the body. */
static int read_response(kiq_client_conn_t *c, const kiq_api_codec_t *codec, int16_t version,
                         int64_t deadline, kiq_arena_t *arena, kiq_rd_t *r)
{
    uint8_t size_be[4];
    /* the answer is rarely there the moment the request is sent: waiting
     * first saves a recv that would only say EAGAIN (a TLS session may
     * hold decrypted bytes the socket does not show) */
    if (!c->tls && c->ahead_len == 0) {
        if (wait_fd(c, POLLIN, deadline, "waiting for the response") != 0) return -1;
        ssize_t k = recv(c->fd, c->ahead, sizeof c->ahead, 0);
        if (k == 0) return io_failed(c, "waiting for the response", true);
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return io_failed(c, "waiting for the response", false);
        c->ahead_at = 0;
        c->ahead_len = k > 0 ? (size_t)k : 0;
    }
    if (read_exact(c, size_be, sizeof size_be, deadline) != 0) return -1;
    int32_t size = (int32_t)kiq_be32(size_be);
    if (size < 4 || size > KIQ_CLIENT_MAX_FRAME)
        return kiq_error_set("response frame of %d bytes (at most %d)", size, KIQ_CLIENT_MAX_FRAME);
    uint8_t *frame = kiq_arena_alloc_raw(arena, (size_t)size); /* the read fills it; zeroing cost a follower 3 % */
    if (read_exact(c, frame, (size_t)size, deadline) != 0) return -1;
    kiq_rd_init(r, frame, (size_t)size);
    int32_t correlation = kiq_rd_i32(r);
    if (correlation != c->correlation)
        return kiq_error_set("response has correlation id %d, expected %d", correlation, c->correlation);
    if (kiq_response_header_version(codec->key, version) >= 1) {
        /* the response header defines no tags we use */
        uint32_t count = kiq_rd_uvarint(r);
        for (uint32_t i = 0; i < count && !r->err; i++) {
            kiq_rd_uvarint(r);
            kiq_rd_raw(r, kiq_rd_uvarint(r));
        }
        if (r->err) return kiq_error_set("bad response header: %s", r->err);
    }
    return 0;
}

static int decode_body(const kiq_api_codec_t *codec, int16_t version, kiq_rd_t *r, kiq_arena_t *arena,
                       void *response)
{
    if (codec->response_decode(r, version, arena, response) != 0)
        return kiq_error_set("bad response at byte %zu: %s", kiq_rd_offset(r), r->err);
    if (kiq_rd_left(r) != 0)
        return kiq_error_set("%zu bytes left after the response", kiq_rd_left(r));
    return 0;
}

/* Turns the reason an operation failed into one naming peer, API and
 * version, and closes the connection: a request may be half sent or its
 * response half read, so the stream can no longer be trusted. */
static int fail(kiq_client_conn_t *c, const kiq_api_codec_t *codec, int16_t version)
{
    char why[400];
    snprintf(why, sizeof why, "%s", kiq_error_get());
    close_fd(c);
    if (codec && version >= 0) return kiq_error_set("%s %s v%d: %s", c->peer, codec->name, version, why);
    if (codec) return kiq_error_set("%s %s: %s", c->peer, codec->name, why);
    return kiq_error_set("%s: %s", c->peer, why);
}

int16_t kiq_client_version(const kiq_client_conn_t *c, int16_t api_key)
{
    const kiq_api_codec_t *codec = kiq_api_codec(api_key);
    if (!codec || api_key < 0 || api_key >= KEY_SLOTS || c->broker_max[api_key] < 0) return -1;
    int16_t lo = codec->min_version > c->broker_min[api_key] ? codec->min_version : c->broker_min[api_key];
    int16_t hi = codec->max_version < c->broker_max[api_key] ? codec->max_version : c->broker_max[api_key];
    return hi >= lo ? hi : -1;
}

bool kiq_client_alive(const kiq_client_conn_t *c)
{
    return c && c->fd >= 0 && !atomic_load(&c->shut);
}

const char *kiq_client_peer(const kiq_client_conn_t *c) { return c->peer; }

int kiq_client_request(kiq_client_conn_t *c, int16_t api_key, int16_t version, const void *request,
                       kiq_arena_t *arena, void *response, int timeout_ms)
{
    int64_t deadline = deadline_of(timeout_ms);
    const kiq_api_codec_t *codec = kiq_api_codec(api_key);
    if (!codec) {
        kiq_error_set("unknown api key %d", api_key);
        return fail(c, NULL, 0);
    }
    if (version < 0) {
        version = kiq_client_version(c, api_key);
        if (version < 0) {
            kiq_error_set("the broker offers no version in our range %d-%d", codec->min_version,
                          codec->max_version);
            return fail(c, codec, version);
        }
    } else if (version < codec->min_version || version > codec->max_version) {
        kiq_error_set("version not in our range %d-%d", codec->min_version, codec->max_version);
        return fail(c, codec, version);
    }
    if (c->fd < 0) {
        kiq_error_set("connection %s", atomic_load(&c->shut) ? "shut down" : "closed");
        return fail(c, codec, version);
    }
    if (send_request(c, codec, version, request, deadline) != 0) return fail(c, codec, version);
    if (api_key == KIQ_API_PRODUCE && ((const kiq_produce_request_t *)request)->acks == 0) {
        codec->response_init(response); /* the broker answers acks=0 with nothing */
        return 0;
    }
    kiq_rd_t r;
    if (read_response(c, codec, version, deadline, arena, &r) != 0 ||
        decode_body(codec, version, &r, arena, response) != 0)
        return fail(c, codec, version);
    return 0;
}

/* ApiVersions at v3, or at what the broker offers when it is older: it then
 * answers in v0 with UNSUPPORTED_VERSION and its own ApiVersions range. */
static int negotiate(kiq_client_conn_t *c, int64_t deadline)
{
    const kiq_api_codec_t *codec = kiq_api_codec(KIQ_API_API_VERSIONS);
    kiq_api_versions_request_t req;
    kiq_api_versions_request_init(&req);
    req.client_software_name = KIQ_STR("kafkaiq");
    req.client_software_version = KIQ_STR(KIQ_VERSION);
    int16_t version = codec->max_version;
    kiq_arena_t a;
    kiq_arena_init(&a);
    int rc = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        kiq_api_versions_response_t resp;
        kiq_rd_t r;
        if (send_request(c, codec, version, &req, deadline) != 0 ||
            read_response(c, codec, version, deadline, &a, &r) != 0)
            break;
        kiq_rd_t body = r;
        if (decode_body(codec, version, &r, &a, &resp) != 0 ||
            resp.error_code == KIQ_ERR_UNSUPPORTED_VERSION) {
            r = body;
            if (kiq_api_versions_response_decode(&r, 0, &a, &resp) != 0) {
                kiq_error_set("bad response: %s", r.err);
                break;
            }
        }
        if (resp.error_code == KIQ_ERR_UNSUPPORTED_VERSION && attempt == 0) {
            int16_t offered = -1;
            for (int32_t i = 0; i < resp.api_keys_n; i++)
                if (resp.api_keys[i].api_key == KIQ_API_API_VERSIONS) offered = resp.api_keys[i].max_version;
            if (offered >= codec->min_version && offered < version) {
                version = offered;
                continue;
            }
        }
        if (resp.error_code != KIQ_ERR_NONE) {
            kiq_error_set("error %d", resp.error_code);
            break;
        }
        for (int32_t i = 0; i < resp.api_keys_n; i++) {
            const kiq_api_versions_response_api_keys_t *k = &resp.api_keys[i];
            if (k->api_key < 0 || k->api_key >= KEY_SLOTS || k->min_version < 0 ||
                k->max_version < k->min_version)
                continue;
            c->broker_min[k->api_key] = k->min_version;
            c->broker_max[k->api_key] = k->max_version;
        }
        rc = 0;
        break;
    }
    kiq_arena_reset(&a);
    if (rc != 0) {
        char why[400];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        kiq_error_set("ApiVersions v%d: %s", version, why);
    }
    return rc;
}

/* One request and its response inside the connection's setup. */
static int setup_call(kiq_client_conn_t *c, int16_t api_key, int16_t version, const void *request, kiq_arena_t *a,
                      void *response, int64_t deadline)
{
    const kiq_api_codec_t *codec = kiq_api_codec(api_key);
    kiq_rd_t r;
    if (send_request(c, codec, version, request, deadline) != 0 ||
        read_response(c, codec, version, deadline, a, &r) != 0 || decode_body(codec, version, &r, a, response) != 0) {
        char why[400];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        return kiq_error_set("%s v%d: %s", codec->name, version, why);
    }
    return 0;
}

/* SaslHandshake, then SaslAuthenticate with each token of the mechanism
 * until the server accepts (and, for SCRAM, has proved itself): Kafka's
 * order for a SASL listener, before any other request but ApiVersions. */
static int authenticate(kiq_client_conn_t *c, const kiq_peer_security_t *sec, int64_t deadline)
{
    int16_t hv = kiq_client_version(c, KIQ_API_SASL_HANDSHAKE), av = kiq_client_version(c, KIQ_API_SASL_AUTHENTICATE);
    if (hv < 1 || av < 0) return kiq_error_set("the peer offers no SaslHandshake v1 and SaslAuthenticate (not a SASL listener?)");
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_sasl_client_t sc;
    int rc = kiq_sasl_client_init(&sc, sec->mechanism, sec->user, sec->password);
    kiq_sasl_handshake_request_t hreq;
    kiq_sasl_handshake_request_init(&hreq);
    hreq.mechanism = KIQ_STR(sec->mechanism);
    kiq_sasl_handshake_response_t hresp;
    if (rc == 0) rc = setup_call(c, KIQ_API_SASL_HANDSHAKE, hv, &hreq, &a, &hresp, deadline);
    if (rc == 0 && hresp.error_code != KIQ_ERR_NONE)
        rc = kiq_error_set("SaslHandshake: %s is not enabled there (error %d)", sec->mechanism, hresp.error_code);
    const uint8_t *in = NULL;
    size_t in_len = 0;
    while (rc == 0) {
        uint8_t *token;
        size_t token_len;
        int step = kiq_sasl_client_step(&sc, in, in_len, &token, &token_len);
        if (step != 0) {
            rc = step == 1 ? 0 : -1;
            break;
        }
        kiq_sasl_authenticate_request_t areq;
        kiq_sasl_authenticate_request_init(&areq);
        areq.auth_bytes = (kiq_bytes_t){token, (int32_t)token_len};
        kiq_sasl_authenticate_response_t aresp;
        rc = setup_call(c, KIQ_API_SASL_AUTHENTICATE, av, &areq, &a, &aresp, deadline);
        OPENSSL_cleanse(token, token_len);
        free(token);
        if (rc == 0 && aresp.error_code != KIQ_ERR_NONE)
            rc = kiq_error_set("SaslAuthenticate as %s: %.*s (error %d)", sec->user,
                               aresp.error_message.p ? (int)aresp.error_message.len : 0,
                               aresp.error_message.p ? aresp.error_message.p : "", aresp.error_code);
        in = aresp.auth_bytes.p;
        in_len = aresp.auth_bytes.p ? (size_t)aresp.auth_bytes.len : 0;
    }
    kiq_sasl_client_clear(&sc);
    kiq_arena_reset(&a);
    return rc;
}

/* Tries each address host resolves to; the socket stays non-blocking so
 * every wait has a deadline. */
static int open_socket(kiq_client_conn_t *c, const char *host, int port, int64_t deadline)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *list = NULL;
    int gai = getaddrinfo(host, service, &hints, &list);
    if (gai != 0) return kiq_error_set("cannot resolve %s: %s", host, gai_strerror(gai));
    kiq_error_set("no address for %s", host);
    int rc = -1;
    for (struct addrinfo *ai = list; ai && rc != 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            kiq_error_errno("socket");
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            rc = 0;
        } else if (errno != EINPROGRESS) {
            kiq_error_set("%s", strerror(errno));
            close_fd(c);
        } else if (wait_fd(c, POLLOUT, deadline, "connecting") != 0) {
            close_fd(c);
            break; /* the deadline is spent for every other address too */
        } else {
            int err = 0;
            socklen_t len = sizeof err;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
            if (err == 0) {
                rc = 0;
            } else {
                kiq_error_set("%s", strerror(err));
                close_fd(c);
            }
        }
    }
    freeaddrinfo(list);
    return rc;
}

kiq_client_conn_t *kiq_client_connect(const char *host, int port, int timeout_ms, const char *client_id,
                                      const kiq_peer_security_t *security)
{
    int64_t deadline = deadline_of(timeout_ms);
    if (!host || !*host || port <= 0 || port > 65535) {
        kiq_error_set("connect to %s:%d: bad address", host ? host : "(null)", port);
        return NULL;
    }
    kiq_client_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        kiq_error_set("connect to %s:%d: out of memory", host, port);
        return NULL;
    }
    pthread_mutex_init(&c->fd_lock, NULL);
    c->fd = -1;
    atomic_init(&c->shut, false);
    snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
    for (int i = 0; i < KEY_SLOTS; i++) c->broker_min[i] = c->broker_max[i] = -1;
    if (client_id && !(c->client_id = strdup(client_id))) {
        kiq_client_close(c);
        kiq_error_set("connect to %s:%d: out of memory", host, port);
        return NULL;
    }
    int rc = open_socket(c, host, port, deadline);
    if (rc == 0 && security && security->tls && !(c->tls = kiq_tls_conn_connect(security->tls, c->fd, host))) rc = -1;
    if (rc == 0) rc = negotiate(c, deadline);
    if (rc == 0 && security && security->mechanism[0]) rc = authenticate(c, security, deadline);
    if (rc != 0) {
        char why[400];
        snprintf(why, sizeof why, "%s", kiq_error_get());
        kiq_error_set("connect to %s: %s", c->peer, why);
        kiq_client_close(c);
        return NULL;
    }
    KIQ_DEBUG("client: connected to %s%s%s", c->peer, c->tls ? " over TLS" : "",
              security && security->mechanism[0] ? ", signed in" : "");
    return c;
}

void kiq_client_shutdown(kiq_client_conn_t *c)
{
    atomic_store(&c->shut, true);
    pthread_mutex_lock(&c->fd_lock);
    if (c->fd >= 0) shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&c->fd_lock);
}

void kiq_client_close(kiq_client_conn_t *c)
{
    if (!c) return;
    close_fd(c);
    pthread_mutex_destroy(&c->fd_lock);
    free(c->client_id);
    free(c);
}
