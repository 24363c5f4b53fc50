#include "http/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/error.h"
#include "core/say.h"
#include "http/views.h"
#include "http/wait.h"

#define IDLE_TIMEOUT_S 10
#define MEMORY_PER_CONNECTION (32 * 1024) /* bounds a request's headers */
#define MAX_BODY (64 * 1024)                 /* a control request's JSON */

/* What a plain GET keeps as its state: a marker. */
static char no_body;

/* A control request's state, the polling thread's: a POST's body being
 * received, or a GET /api/wait suspended until its condition is decided. */
typedef struct upload {
    kiq_http_waiter_t *waiter;
    size_t len;
    bool too_big;
    char data[MAX_BODY + 1];
} upload_t;

/* One open connection, in the listener's list; the polling thread's. */
typedef struct http_conn {
    struct http_conn *prev, *next;
    int fd;
    bool answering; /* a response is queued and not yet sent */
    bool closing;   /* shut down to make room; MHD closes it next */
} http_conn_t;

/* The listener; the broker service's context. The daemon and the
 * connection list are the polling thread's (every libmicrohttpd callback
 * runs there); port and closed are read by any thread. */
typedef struct http_listener {
    char host[256];
    int port; /* configured */
    kiq_broker_t *broker;
    struct MHD_Daemon *daemon;
    atomic_int bound; /* -1 while not listening */
    unsigned max_connections; /* kafkaiq.http.max.connections */
    /* open connections, least recently active first; `closing` of them shut down to make room */
    http_conn_t *oldest, *newest;
    unsigned open, closing;
    atomic_uint_fast64_t closed; /* idle connections closed to make room */
    kiq_metrics_t *metrics; /* the broker's, where its figures are */
    kiq_http_waits_t *waits; /* GET /api/wait's, from start to stop */
    char token[256]; /* kafkaiq.http.token; empty: none. Fixed at attach */
    /* kafkaiq.http.basic as the Authorization header that carries it
     * ("Basic " and user:password in base64); empty: none. Fixed at attach */
    char basic[360];
    char *tls_cert, *tls_key; /* PEM texts for HTTPS, read at attach; NULL: plain HTTP */
} http_listener_t;

/* The listeners of this process that are listening, so the page of one
 * broker finds the others of its cluster (serve --brokers N, Lua
 * clusters). */
#define MAX_PEERS 64
static struct {
    pthread_mutex_t mu; /* guards the rest */
    struct {
        const http_listener_t *h;
        int32_t broker;
        char cluster_id[23];
    } e[MAX_PEERS];
    int n;
} peers = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void peers_add(const http_listener_t *h, const kiq_broker_t *b)
{
    pthread_mutex_lock(&peers.mu);
    if (peers.n < MAX_PEERS) {
        peers.e[peers.n].h = h;
        peers.e[peers.n].broker = b->node_id;
        snprintf(peers.e[peers.n].cluster_id, sizeof peers.e[peers.n].cluster_id, "%s", b->cluster_id);
        peers.n++;
    }
    pthread_mutex_unlock(&peers.mu);
}

static void peers_remove(const http_listener_t *h)
{
    pthread_mutex_lock(&peers.mu);
    for (int i = 0; i < peers.n; i++)
        if (peers.e[i].h == h) peers.e[i--] = peers.e[--peers.n];
    pthread_mutex_unlock(&peers.mu);
}

/* {"brokers": [{"broker": id, "http": "host:port"}]}: this process's
 * listening brokers of b's cluster. */
static void peers_view(const kiq_broker_t *b, kiq_http_view_t *v)
{
    json_t *list = json_array();
    pthread_mutex_lock(&peers.mu);
    for (int i = 0; i < peers.n; i++) {
        if (strcmp(peers.e[i].cluster_id, b->cluster_id) != 0) continue;
        const http_listener_t *h = peers.e[i].h;
        char address[300];
        snprintf(address, sizeof address, "%s:%d", *h->host ? h->host : "127.0.0.1", atomic_load(&h->bound));
        json_array_append_new(list, json_pack("{s:i, s:s}", "broker", peers.e[i].broker, "http", address));
    }
    pthread_mutex_unlock(&peers.mu);
    kiq_http_take_json(v, 200, json_pack("{s:o}", "brokers", list));
}

static void conn_unlink(http_listener_t *h, http_conn_t *hc)
{
    *(hc->prev ? &hc->prev->next : &h->oldest) = hc->next;
    *(hc->next ? &hc->next->prev : &h->newest) = hc->prev;
    hc->prev = hc->next = NULL;
}

/* hc was active just now: it goes last in the list. */
static void conn_touch(http_listener_t *h, http_conn_t *hc)
{
    if (h->newest == hc) return;
    if (hc->prev || h->oldest == hc) conn_unlink(h, hc);
    hc->prev = h->newest;
    *(h->newest ? &h->newest->next : &h->oldest) = hc;
    h->newest = hc;
}

static http_conn_t *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* The listener is full: the connection idle longest (not fresh, the one
 * that just came) is shut down, and libmicrohttpd closes it on its next
 * turn, so a scrape gets in however many sockets sit idle. One being
 * answered is left to finish. */
static void make_room(http_listener_t *h, http_conn_t *fresh)
{
    for (http_conn_t *hc = h->oldest; hc; hc = hc->next) {
        if (hc == fresh || hc->answering || hc->closing || hc->fd < 0) continue;
        if (shutdown(hc->fd, SHUT_RDWR) != 0) continue;
        hc->closing = true;
        h->closing++;
        atomic_fetch_add_explicit(&h->closed, 1, memory_order_relaxed);
        KIQ_WARN_LIMITED("http: %u connections open (kafkaiq.http.max.connections): closed the longest idle",
                         h->open);
        return;
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
    http_listener_t *h = cls;
    http_conn_t *hc = *socket_context;
    if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!hc) return;
        conn_unlink(h, hc);
        h->open--;
        if (hc->closing) h->closing--;
        free(hc);
        return;
    }
    if (!(hc = calloc(1, sizeof *hc))) return; /* not counted, never chosen to close */
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    hc->fd = info ? info->connect_fd : -1;
    *socket_context = hc;
    conn_touch(h, hc);
    h->open++;
    if (h->open - h->closing >= h->max_connections) make_room(h, hc);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode why)
{
    http_listener_t *h = cls;
    upload_t *up = *state != &no_body ? *state : NULL;
    if (up && up->waiter) kiq_http_waiter_drop(h->waits, up->waiter);
    free(up);
    *state = NULL;
    http_conn_t *hc = conn_of(c);
    if (!hc) return;
    hc->answering = false;
    conn_touch(cls, hc);
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n') msg[--n] = '\0';
    KIQ_DEBUG("http: %s", msg);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    /* one broker's page polls its cluster's other listeners */
    MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result answer_view(struct MHD_Connection *c, kiq_http_view_t *v)
{
    return answer(c, v->status, v->type, v->body, v->len);
}

/* A built-in file: never freed, never changed. */
static enum MHD_Result answer_asset(struct MHD_Connection *c, const kiq_http_asset_t *a)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(*a->len, (void *)a->body, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", a->type);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ok;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static bool from_loopback(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (!sa) return false;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    return sa->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* Whether s is want (a configured credential, non-empty), in constant time. */
static bool same_secret(const char *s, const char *want)
{
    size_t n = strlen(want);
    return *want && strlen(s) == n && CRYPTO_memcmp(s, want, n) == 0;
}

/* Whether c may use the control API: with a token or a basic credential
 * configured, a request that carries one of them (from any address), else
 * a loopback client. Refused: v holds the answer (401 when a credential is
 * asked for, 403 for a client not on loopback). */
static bool authorized(const http_listener_t *h, struct MHD_Connection *c, kiq_http_view_t *v)
{
    if (!h->token[0] && !h->basic[0]) {
        if (from_loopback(c)) return true;
        kiq_http_error(v, MHD_HTTP_FORBIDDEN, "the control API answers loopback clients only");
        return false;
    }
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth && ((strncmp(auth, "Bearer ", 7) == 0 && same_secret(auth + 7, h->token)) || same_secret(auth, h->basic)))
        return true;
    kiq_http_error(v, MHD_HTTP_UNAUTHORIZED, auth ? (h->basic[0] ? "the control API's credential is wrong"
                                                                 : "the control API's token is wrong")
                                                  : !h->basic[0] ? "the control API asks for a token (Authorization: Bearer TOKEN)"
                                                  : !h->token[0] ? "the control API asks for a user and password (Authorization: Basic)"
                                                  : "the control API asks for a token (Bearer) or a user and password (Basic)");
    return false;
}

/* A refusal from authorized(): a 401 names the scheme it asks for. */
static enum MHD_Result answer_refusal(const http_listener_t *h, struct MHD_Connection *c, kiq_http_view_t *v)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(v->len, v->body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(v->body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", v->type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (v->status == MHD_HTTP_UNAUTHORIZED && h->token[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"kafkaiq\"");
    if (v->status == MHD_HTTP_UNAUTHORIZED && h->basic[0])
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"kafkaiq\", charset=\"UTF-8\"");
    enum MHD_Result ok = MHD_queue_response(c, v->status, r);
    MHD_destroy_response(r);
    return ok;
}

/* The control API, once authorized: bodies as JSON (a page from another
 * origin cannot send that without a preflight, which is refused). */
static void control(kiq_broker_t *b, struct MHD_Connection *c, const char *url, const char *method, upload_t *up,
                    kiq_http_view_t *v)
{
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (up && up->too_big)
        kiq_http_error(v, MHD_HTTP_CONTENT_TOO_LARGE, "a control request's body is at most 64 KiB");
    else if (strcmp(method, "POST") == 0 && (!type || strncmp(type, "application/json", 16) != 0))
        kiq_http_error(v, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "the control API takes Content-Type: application/json");
    else
        kiq_http_control(b, method, url, up ? up->data : NULL, v);
}

static enum MHD_Result route(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                             const char *version, const char *upload, size_t *upload_size, void **state)
{
    http_listener_t *h = cls;
    kiq_broker_t *b = h->broker;
    http_conn_t *hc = conn_of(c);
    if (hc) conn_touch(h, hc);
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool wait = get && strcmp(url, "/api/wait") == 0;
    /* the first call is for the headers alone; a POST's body is kept */
    if (!*state) {
        *state = strcmp(method, "POST") == 0 || wait ? calloc(1, sizeof(upload_t)) : &no_body;
        return *state ? MHD_YES : MHD_NO;
    }
    upload_t *up = *state == &no_body ? NULL : *state;
    if (*upload_size) {
        if (up && !up->too_big && *upload_size <= MAX_BODY - up->len) {
            memcpy(up->data + up->len, upload, *upload_size);
            up->len += *upload_size;
        } else if (up) {
            up->too_big = true;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (hc) hc->answering = true; /* until on_completed */
    kiq_http_view_t v;
    if (wait && up->waiter) { /* resumed: decided */
        kiq_http_waiter_answer(h->waits, up->waiter, &v);
        up->waiter = NULL;
        return answer_view(c, &v);
    }
    if (wait) {
        if (!authorized(h, c, &v)) return answer_refusal(h, c, &v);
        if (!kiq_http_wait_begin(h->waits, c, &up->waiter, &v))
            return MHD_YES; /* suspended until decided */
        return answer_view(c, &v);
    }
    const kiq_http_asset_t *asset = kiq_http_asset(url);
    if (get && asset) return answer_asset(c, asset);
    if (kiq_http_control_path(url) && !authorized(h, c, &v))
        return answer_refusal(h, c, &v);
    if (kiq_http_control_path(url))
        control(b, c, url, method, up, &v);
    else if (!get)
        kiq_http_error(&v, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served here");
    else if (strcmp(url, "/metrics") == 0)
        kiq_http_metrics(b, &v);
    else if (strcmp(url, "/api/metrics") == 0)
        kiq_http_metrics_json(b, &v);
    else if (strcmp(url, "/api/state") == 0)
        kiq_http_state(b, &v);
    else if (strcmp(url, "/api/journey") == 0)
        kiq_http_journey(b, arg(c, "topic"), arg(c, "partition"), arg(c, "offset"), arg(c, "trace"),
                         arg(c, "latest") != NULL, &v);
    else if (strcmp(url, "/api/clients") == 0)
        kiq_http_clients(b, arg(c, "client_id"), &v);
    else if (strcmp(url, "/api/peers") == 0)
        peers_view(b, &v);
    else
        kiq_http_error(&v, MHD_HTTP_NOT_FOUND, "no such path");
    return answer_view(c, &v);
}

static int start(void *ctx, kiq_broker_t *b)
{
    http_listener_t *h = ctx;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)h->port)};
    if (inet_pton(AF_INET, *h->host ? h->host : "127.0.0.1", &addr.sin_addr) != 1)
        return kiq_error_set("kafkaiq.http.listener: %s is not an IPv4 address", h->host);
    h->broker = b;
    h->max_connections = (unsigned)kiq_config_int(b->config, KIQ_CFG_HTTP_MAX_CONNECTIONS);
    /* No limit per address: a scraper shares its address with whatever
     * else runs on its host. Past the limit new connections wait in the
     * backlog, but make_room keeps a place free unless all are answering. */
    if (!(h->waits = kiq_http_waits_new(b))) return -1;
    struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key},
                                   {MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert},
                                   {MHD_OPTION_END, 0, NULL}};
    if (!h->tls_cert) tls[0].option = MHD_OPTION_END;
    h->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME | (h->tls_cert ? MHD_USE_TLS : 0),
        (uint16_t)h->port, NULL, NULL, route, h, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, h->max_connections,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)MEMORY_PER_CONNECTION, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL, MHD_OPTION_END);
    if (!h->daemon) {
        kiq_error_errno("kafkaiq.http.listener: cannot listen on %s:%d", h->host, h->port);
        kiq_http_waits_free(h->waits);
        h->waits = NULL;
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    int port = info ? info->port : h->port;
    atomic_store(&h->bound, port);
    if (h->port == 0) h->port = port; /* a restart comes back on the same port */
    peers_add(h, b);
    KIQ_INFO("[KafkaIQ broker %d] HTTP on %s://%s:%d/ (metrics at /metrics)", b->node_id, h->tls_cert ? "https" : "http",
             h->host, port);
    return 0;
}

static void stop(void *ctx, kiq_broker_t *b)
{
    http_listener_t *h = ctx;
    if (!h->daemon) return;
    peers_remove(h);
    atomic_store(&h->bound, -1);
    kiq_http_waits_stop(h->waits); /* libmicrohttpd stops with no connection suspended */
    MHD_stop_daemon(h->daemon);
    h->daemon = NULL;
    kiq_http_waits_free(h->waits);
    h->waits = NULL;
}

/* Its own figures, in the broker's metrics registry from attach to free. */
static void listener_metrics(void *src, kiq_metric_out_t *o)
{
    http_listener_t *h = src;
    kiq_metric_family(o, "kafkaiq_connections_closed_total", KIQ_METRIC_COUNTER,
                      "connections the broker closed, by the limit that did it");
    kiq_metric_sample(o, "", (double)atomic_load_explicit(&h->closed, memory_order_relaxed), "limit",
                      "kafkaiq.http.max.connections", NULL);
}

static void listener_free(void *ctx)
{
    http_listener_t *h = ctx;
    stop(ctx, NULL);
    kiq_metrics_remove(h->metrics, h);
    free(h->tls_cert);
    free(h->tls_key);
    free(ctx);
}

/* A whole file as a string (malloc'd); NULL with the reason. */
static char *read_text(const char *path, const char *what)
{
    FILE *f = fopen(path, "rb");
    if (!f) return kiq_error_errno("%s: cannot open %s", what, path), NULL;
    char *text = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *grown = realloc(text, cap = cap ? cap * 2 : 8192);
            if (!grown) {
                free(text);
                fclose(f);
                return kiq_error_set("out of memory"), NULL;
            }
            text = grown;
        }
        size_t k = fread(text + n, 1, 4096, f);
        n += k;
        if (k < 4096) break;
    }
    fclose(f);
    text[n] = '\0';
    return text;
}

/* HTTPS when kafkaiq.http.ssl.certificate.location is set: the
 * certificate and key texts, read once. 0, or -1 with the reason. */
static int tls_load(http_listener_t *h, const kiq_config_t *c)
{
    const char *cert = kiq_config_str(c, KIQ_CFG_HTTP_SSL_CERTIFICATE_LOCATION);
    const char *key = kiq_config_str(c, KIQ_CFG_HTTP_SSL_KEY_LOCATION);
    if (!*cert && !*key) return 0;
    if (!*cert || !*key)
        return kiq_error_set("kafkaiq.http.ssl.certificate.location and kafkaiq.http.ssl.key.location go together");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return kiq_error_set("kafkaiq.http.ssl.*: this libmicrohttpd is built without TLS");
    if (!(h->tls_cert = read_text(cert, "kafkaiq.http.ssl.certificate.location")) ||
        !(h->tls_key = read_text(key, "kafkaiq.http.ssl.key.location")))
        return -1;
    return 0;
}

int kiq_http_attach(kiq_broker_t *b)
{
    const char *spec = kiq_config_str(b->config, KIQ_CFG_HTTP_LISTENER);
    if (!*spec) return 0;
    http_listener_t *h = calloc(1, sizeof *h);
    if (!h) return kiq_error_set("out of memory");
    const char *colon = strrchr(spec, ':');
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || end == colon + 1 || *end || port < 0 || port > 65535 || colon - spec >= (long)sizeof h->host) {
        free(h);
        return kiq_error_set("kafkaiq.http.listener: HOST:PORT expected, not '%s'", spec);
    }
    memcpy(h->host, spec, (size_t)(colon - spec));
    h->port = (int)port;
    const char *token = kiq_config_str(b->config, KIQ_CFG_HTTP_TOKEN);
    if (strlen(token) >= sizeof h->token) {
        free(h);
        return kiq_error_set("kafkaiq.http.token: at most %zu characters", sizeof h->token - 1);
    }
    snprintf(h->token, sizeof h->token, "%s", token);
    /* user:password, as a browser or curl -u sends it */
    const char *basic = kiq_config_str(b->config, KIQ_CFG_HTTP_BASIC);
    size_t bl = strlen(basic);
    if (bl && (!strchr(basic, ':') || 6 + 4 * ((bl + 2) / 3) >= sizeof h->basic)) {
        free(h);
        return kiq_error_set("kafkaiq.http.basic: USER:PASSWORD expected, at most %zu characters",
                             (sizeof h->basic - 7) / 4 * 3);
    }
    if (bl) {
        memcpy(h->basic, "Basic ", 6);
        EVP_EncodeBlock((unsigned char *)h->basic + 6, (const unsigned char *)basic, (int)bl);
    }
    if (tls_load(h, b->config) != 0) {
        free(h->tls_cert);
        free(h->tls_key);
        free(h);
        return -1;
    }
    atomic_init(&h->bound, -1);
    atomic_init(&h->closed, 0);
    h->metrics = b->metrics;
    if (kiq_metrics_add(h->metrics, listener_metrics, h) != 0) {
        free(h);
        return kiq_error_set("out of memory");
    }
    kiq_broker_service_t s = {"http", start, stop, listener_free, h};
    if (kiq_broker_add_service(b, &s) != 0) {
        kiq_metrics_remove(h->metrics, h);
        free(h);
        return -1;
    }
    return 0;
}

static http_listener_t *listener_of(const kiq_broker_t *b)
{
    for (int i = 0; i < b->nservices; i++)
        if (b->services[i].start == start) return b->services[i].ctx;
    return NULL;
}

int kiq_http_port(const kiq_broker_t *b)
{
    http_listener_t *h = listener_of(b);
    return h ? atomic_load(&h->bound) : -1;
}
