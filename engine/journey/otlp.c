#include "journey/otlp.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"

#define QUEUE_CAP 256      /* journeys waiting for the sender */
#define POST_MAX 64        /* traces in one POST */
#define SENDER_ROUND_MS 200
#define IO_TIMEOUT_S 2     /* connect, send and answer each; the sender alone waits */

/* OTLP's span kinds (opentelemetry-proto trace.proto). */
enum { KIND_INTERNAL = 1, KIND_SERVER = 2 };

struct kiq_otlp {
    char host[256], port[8], path[512]; /* the receiver, from the endpoint */
    int32_t broker;
    pthread_mutex_t mu; /* guards the queue */
    kiq_journey_t *queue; /* a ring of QUEUE_CAP, head the oldest */
    size_t head, count;
    kiq_journey_t *batch; /* the sender's: POST_MAX journeys taken from the queue */
    kiq_worker_t *sender;
    atomic_uint_fast64_t exported, dropped, failed;
};

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* n bytes from 2n lower-case hex digits; false when they are not, or all zero. */
static bool from_hex(const char *s, uint8_t *out, size_t n)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
        any = any || out[i];
    }
    return any;
}

bool kiq_otlp_traceparent(const char *v, size_t len, uint8_t trace_id[16], uint8_t span_id[8])
{
    /* version 00 is 55 characters; a later version may add fields after them */
    if (len < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return false;
    if (hex_digit(v[0]) < 0 || hex_digit(v[1]) < 0 || (v[0] == 'f' && v[1] == 'f')) return false;
    if (v[0] == '0' && v[1] == '0' && len != 55) return false;
    return from_hex(v + 3, trace_id, 16) && from_hex(v + 36, span_id, 8) && hex_digit(v[53]) >= 0 &&
           hex_digit(v[54]) >= 0;
}

/* ---- the trace of a journey ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static void hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

static void put_u64(uint8_t *out, uint64_t v)
{
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* The span id of the journey's span k (0: the SERVER span), never zero. */
static void span_id(uint64_t seed, int k, char out[17])
{
    uint8_t b[8];
    uint64_t v = mix(seed ^ mix((uint64_t)k + 1));
    put_u64(b, v ? v : 1);
    hex(b, 8, out);
}

/* The POST's body as it is written: JSON by hand, for a trace per batch
 * at thousands a second costs a tree of objects too much. */
typedef struct out {
    char *p;
    size_t n, cap;
    bool failed; /* out of memory: the body is dropped */
} out_t;

static void put(out_t *o, const char *s, size_t n)
{
    if (o->failed) return;
    if (o->n + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 64 << 10;
        while (o->n + n + 1 > cap) cap *= 2;
        char *p = realloc(o->p, cap);
        if (!p) {
            o->failed = true;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
    o->p[o->n] = '\0';
}

static void puts_(out_t *o, const char *s) { put(o, s, strlen(s)); }

static void putf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out_t *o, const char *fmt, ...)
{
    char tmp[256]; /* short pieces: numbers and their keys */
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0) put(o, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* s as a JSON string, quoted and escaped. */
static void put_str(out_t *o, const char *s)
{
    put(o, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        put(o, run, (size_t)(s - run));
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(o, esc, 2);
        } else {
            putf(o, "\\u%04x", c);
        }
        run = s + 1;
    }
    put(o, run, (size_t)(s - run));
    put(o, "\"", 1);
}

/* A span's attributes as they are written: the separator before the next. */
typedef struct attrs {
    out_t *o;
    bool any;
} attrs_t;

static void attr_key(attrs_t *a, const char *prefix, const char *key)
{
    puts_(a->o, a->any ? ",{\"key\":\"" : "{\"key\":\"");
    puts_(a->o, prefix);
    puts_(a->o, key); /* the engine's names: nothing to escape */
    puts_(a->o, "\",\"value\":");
    a->any = true;
}

static void attr_str(attrs_t *a, const char *key, const char *v)
{
    attr_key(a, "", key);
    puts_(a->o, "{\"stringValue\":");
    put_str(a->o, v);
    puts_(a->o, "}}");
}

static void attr_int(attrs_t *a, const char *key, int64_t v)
{
    attr_key(a, "", key);
    putf(a->o, "{\"intValue\":\"%lld\"}}", (long long)v);
}

/* A stage's fields (kiq_journey_stage_fields) as kafkaiq.* attributes. */
static void field_number(void *ctx, const char *name, double v)
{
    attrs_t *a = ctx;
    attr_key(a, "kafkaiq.", name);
    if (v == (double)(int64_t)v)
        putf(a->o, "{\"intValue\":\"%lld\"}}", (long long)v);
    else
        putf(a->o, "{\"doubleValue\":%.17g}}", v);
}

static void field_string(void *ctx, const char *name, const char *v)
{
    attrs_t *a = ctx;
    attr_key(a, "kafkaiq.", name);
    puts_(a->o, "{\"stringValue\":");
    put_str(a->o, v);
    puts_(a->o, "}}");
}

static void field_boolean(void *ctx, const char *name, bool v)
{
    attrs_t *a = ctx;
    attr_key(a, "kafkaiq.", name);
    puts_(a->o, v ? "{\"boolValue\":true}}" : "{\"boolValue\":false}}");
}

/* A span's head, up to its attributes' list, which the caller fills and
 * closes with "]}". */
static void span_open(out_t *o, bool *first, const char *trace, const char *id, const char *parent, const char *name,
                      int kind, int64_t start, int64_t end)
{
    puts_(o, *first ? "{\"traceId\":\"" : ",{\"traceId\":\"");
    *first = false;
    puts_(o, trace);
    puts_(o, "\",\"spanId\":\"");
    puts_(o, id);
    if (parent) {
        puts_(o, "\",\"parentSpanId\":\"");
        puts_(o, parent);
    }
    puts_(o, "\",\"name\":");
    put_str(o, name);
    putf(o, ",\"kind\":%d,\"startTimeUnixNano\":\"%lld\"", kind, (long long)start);
    putf(o, ",\"endTimeUnixNano\":\"%lld\",\"attributes\":[", (long long)(end < start ? start : end));
}

/* The journey's spans: the SERVER span of the produce, and a span per
 * stage under it. */
static void journey_spans(const kiq_journey_t *jr, out_t *o, bool *first)
{
    if (jr->nstages <= 0) return;
    uint64_t seed = mix(mix((uint64_t)jr->partition) ^ (uint64_t)jr->first_offset);
    for (const char *p = jr->topic; *p; p++) seed = mix(seed ^ (uint8_t)*p);
    seed = mix(seed ^ (uint64_t)jr->stages[0].wall_ns);
    uint8_t tid[16];
    if (jr->otel_linked) {
        memcpy(tid, jr->otel_trace, 16);
    } else {
        put_u64(tid, mix(seed ^ 1));
        put_u64(tid + 8, mix(seed ^ 2));
    }
    char trace[33], root[17], parent[17], id[17];
    hex(tid, 16, trace);
    hex(jr->otel_parent, 8, parent);
    span_id(seed, 0, root);
    const kiq_journey_stage_t *head = &jr->stages[0], *last = &jr->stages[jr->nstages - 1];
    int64_t records = -1;
    const char *client = "";
    for (int i = 0; i < jr->nstages; i++) {
        if (jr->stages[i].point == KIQ_POINT_VALIDATED) records = jr->stages[i].records;
        if (jr->stages[i].point == KIQ_POINT_RECEIVED) client = jr->stages[i].who;
    }
    char partition[16], name[KIQ_JOURNEY_TOPIC + 16];
    snprintf(partition, sizeof partition, "%d", jr->partition);
    snprintf(name, sizeof name, "produce %s", jr->topic);
    span_open(o, first, trace, root, jr->otel_linked ? parent : NULL, name, KIND_SERVER, head->wall_ns, last->wall_ns);
    attrs_t a = {o, false};
    attr_str(&a, "messaging.system", "kafka");
    attr_str(&a, "messaging.operation.type", "send");
    attr_str(&a, "messaging.operation.name", "produce");
    attr_str(&a, "messaging.destination.name", jr->topic);
    attr_str(&a, "messaging.destination.partition.id", partition);
    attr_int(&a, "messaging.kafka.destination.partition", jr->partition);
    attr_int(&a, "messaging.kafka.offset", jr->first_offset);
    if (records > 0) attr_int(&a, "messaging.batch.message_count", records);
    if (client[0]) attr_str(&a, "messaging.client.id", client);
    attr_int(&a, "kafkaiq.last_offset", jr->last_offset);
    puts_(o, "]}");
    for (int i = 0; i < jr->nstages; i++) {
        const kiq_journey_stage_t *s = &jr->stages[i];
        span_id(seed, i + 1, id);
        /* a stage's span is its wait: from the stage before to it */
        int64_t start = i > 0 ? jr->stages[i - 1].wall_ns : s->wall_ns;
        span_open(o, first, trace, id, root, kiq_journey_stage_name(s), KIND_INTERNAL, start, s->wall_ns);
        attrs_t sa = {o, false};
        kiq_journey_fields_t f = {field_number, field_string, field_boolean, &sa};
        kiq_journey_stage_fields(jr, i, &f);
        puts_(o, "]}");
    }
}

/* The POST's body for n journeys (malloc'd), NULL when out of memory. */
static char *traces_json(const kiq_otlp_t *k, const kiq_journey_t *batch, size_t n)
{
    out_t o = {0};
    puts_(&o, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":"
              "{\"stringValue\":\"kafkaiq\"}},{\"key\":\"service.instance.id\",\"value\":{\"stringValue\":");
    putf(&o, "\"broker-%d\"}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"kafkaiq.journey\"},\"spans\":[", k->broker);
    bool first = true;
    for (size_t i = 0; i < n; i++) journey_spans(&batch[i], &o, &first);
    puts_(&o, "]}]}]}");
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

/* ---- the POST ---- */

static bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* POSTs body to the receiver: its HTTP status, or -1 (the reason in the
 * error slot). */
static int post(const kiq_otlp_t *o, const char *body)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(o->host, o->port, &hints, &ai);
    if (rc != 0) return kiq_error_set("OTLP endpoint %s:%s: %s", o->host, o->port, gai_strerror(rc));
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        struct timeval tv = {IO_TIMEOUT_S, 0};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* bounds connect too */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) return kiq_error_errno("OTLP endpoint %s:%s: cannot connect", o->host, o->port);
    size_t len = strlen(body);
    char head[1024];
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                      "Connection: close\r\nUser-Agent: kafkaiq\r\n\r\n",
                      o->path, o->host, o->port, len);
    if (!send_all(fd, head, (size_t)hn) || !send_all(fd, body, len)) {
        close(fd);
        return kiq_error_errno("OTLP endpoint %s:%s: cannot send", o->host, o->port);
    }
    /* the status line is all that is needed; the answer is read to the close (or a bound) */
    char answer[4096];
    size_t got = 0;
    while (got < sizeof answer - 1) {
        ssize_t k = recv(fd, answer + got, sizeof answer - 1 - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    answer[got] = '\0';
    int status;
    if (sscanf(answer, "HTTP/%*d.%*d %d", &status) != 1)
        return kiq_error_set("OTLP endpoint %s:%s: no HTTP answer", o->host, o->port);
    return status;
}

/* ---- the sender ---- */

/* Sends the queue, POST_MAX traces a POST; false when a POST failed. */
static bool send_queue(kiq_otlp_t *o)
{
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&o->mu);
        while (n < POST_MAX && o->count > 0) {
            const kiq_journey_t *q = &o->queue[o->head];
            memcpy(&o->batch[n++], q, kiq_journey_size(q));
            o->head = (o->head + 1) % QUEUE_CAP;
            o->count--;
        }
        pthread_mutex_unlock(&o->mu);
        if (n == 0) return true;
        char *body = traces_json(o, o->batch, n);
        int status = body ? post(o, body) : kiq_error_set("out of memory");
        free(body);
        if (status >= 200 && status < 300) {
            atomic_fetch_add_explicit(&o->exported, n, memory_order_relaxed);
            continue;
        }
        atomic_fetch_add_explicit(&o->failed, n, memory_order_relaxed);
        if (status > 0)
            KIQ_WARN_LIMITED("OTLP export to %s:%s%s: HTTP %d", o->host, o->port, o->path, status);
        else
            KIQ_WARN_LIMITED("%s", kiq_error_get());
        return false;
    }
}

static int64_t sender_round(void *ctx)
{
    send_queue(ctx);
    return SENDER_ROUND_MS;
}

/* host, port and path of "http://host[:port][/prefix]". */
static int parse_endpoint(kiq_otlp_t *o, const char *endpoint)
{
    const char *scheme = "http://";
    if (strncmp(endpoint, scheme, strlen(scheme)) != 0)
        return kiq_error_set("kafkaiq.otlp.endpoint %s: http://HOST[:PORT][/PATH] expected (https is not supported)",
                             endpoint);
    const char *h = endpoint + strlen(scheme), *slash = strchr(h, '/');
    size_t hlen = slash ? (size_t)(slash - h) : strlen(h);
    const char *colon = memchr(h, ':', hlen);
    size_t name = colon ? (size_t)(colon - h) : hlen, plen = colon ? hlen - name - 1 : 0;
    if (name == 0 || name >= sizeof o->host || (colon && (plen == 0 || plen >= sizeof o->port)))
        return kiq_error_set("kafkaiq.otlp.endpoint %s: no host[:port] in it", endpoint);
    memcpy(o->host, h, name);
    o->host[name] = '\0';
    if (colon) {
        memcpy(o->port, colon + 1, plen);
        o->port[plen] = '\0';
        for (size_t i = 0; i < plen; i++)
            if (o->port[i] < '0' || o->port[i] > '9') return kiq_error_set("kafkaiq.otlp.endpoint %s: bad port", endpoint);
    } else {
        strcpy(o->port, "4318"); /* OTLP/HTTP's */
    }
    const char *prefix = slash ? slash : "";
    size_t pre = strlen(prefix);
    while (pre > 0 && prefix[pre - 1] == '/') pre--;
    if (pre + sizeof "/v1/traces" > sizeof o->path || strpbrk(prefix, " \r\n"))
        return kiq_error_set("kafkaiq.otlp.endpoint %s: bad path", endpoint);
    snprintf(o->path, sizeof o->path, "%.*s/v1/traces", (int)pre, prefix);
    return 0;
}

kiq_otlp_t *kiq_otlp_open(const char *endpoint, int32_t broker)
{
    kiq_otlp_t *o = calloc(1, sizeof *o);
    if (!o || !(o->queue = calloc(QUEUE_CAP, sizeof *o->queue)) || !(o->batch = calloc(POST_MAX, sizeof *o->batch))) {
        kiq_error_set("out of memory");
        goto fail;
    }
    if (parse_endpoint(o, endpoint) != 0) goto fail;
    o->broker = broker;
    pthread_mutex_init(&o->mu, NULL);
    atomic_init(&o->exported, 0);
    atomic_init(&o->dropped, 0);
    atomic_init(&o->failed, 0);
    kiq_worker_config_t wc = {.name = "otlp", .round = sender_round, .ctx = o, .first_delay_ms = SENDER_ROUND_MS};
    if (!(o->sender = kiq_worker_start(&wc))) {
        pthread_mutex_destroy(&o->mu);
        goto fail;
    }
    return o;
fail:
    if (o) {
        free(o->batch);
        free(o->queue);
        free(o);
    }
    return NULL;
}

void kiq_otlp_close(kiq_otlp_t *o)
{
    if (!o) return;
    kiq_worker_stop(o->sender);
    send_queue(o);
    pthread_mutex_destroy(&o->mu);
    free(o->batch);
    free(o->queue);
    free(o);
}

bool kiq_otlp_offer(kiq_otlp_t *o, const kiq_journey_t *jr)
{
    pthread_mutex_lock(&o->mu);
    bool room = o->count < QUEUE_CAP;
    if (room) {
        memcpy(&o->queue[(o->head + o->count) % QUEUE_CAP], jr, kiq_journey_size(jr));
        o->count++;
    }
    bool poke = o->count == QUEUE_CAP / 4;
    pthread_mutex_unlock(&o->mu);
    if (!room) atomic_fetch_add_explicit(&o->dropped, 1, memory_order_relaxed);
    if (poke) kiq_worker_poke(o->sender);
    return room;
}

void kiq_otlp_stats(kiq_otlp_t *o, kiq_otlp_stats_t *out)
{
    *out = (kiq_otlp_stats_t){
        .exported = atomic_load_explicit(&o->exported, memory_order_relaxed),
        .dropped = atomic_load_explicit(&o->dropped, memory_order_relaxed),
        .failed = atomic_load_explicit(&o->failed, memory_order_relaxed),
    };
}
