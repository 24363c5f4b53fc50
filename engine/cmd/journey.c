/* `kafkaiq journey --http HOST:PORT[,HOST:PORT...] TOPIC PARTITION OFFSET`
 * (or `--trace ID` instead of the three): asks each broker's HTTP listener
 * for its part of the batch's journey (/api/journey), merges the parts by
 * time (the monotonic clock when they come from one process, the wall
 * clock when from several) and prints one line per stage, with
 * milliseconds from its receipt and why it waited when the broker says,
 * the way the seed draws a record's path, then the leader's verdict (stuck
 * before the high watermark, and for whom, or committed). Exit 0 when a
 * journey was found, 1 when none was, 2 for bad arguments. */
#include "cmd/journey.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HTTP_TIMEOUT_MS 5000
#define MAX_BROKERS 64

/* GET path from host:port; the body of a 200 answer (malloc'd) or NULL
 * with *status set (0: no answer at all, the reason in why). */
static char *http_get(const char *address, const char *path, int *status, char *why, size_t whylen)
{
    *status = 0;
    char host[256];
    const char *colon = strrchr(address, ':');
    if (!colon || colon == address || (size_t)(colon - address) >= sizeof host) {
        snprintf(why, whylen, "%s: HOST:PORT expected", address);
        return NULL;
    }
    memcpy(host, address, (size_t)(colon - address));
    host[colon - address] = '\0';
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) {
        snprintf(why, whylen, "%s: cannot resolve", address);
        return NULL;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        snprintf(why, whylen, "%s: %s", address, strerror(errno));
        freeaddrinfo(ai);
        if (fd >= 0) close(fd);
        return NULL;
    }
    freeaddrinfo(ai);
    char req[2048];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n", path, address);
    if (n < 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n) {
        snprintf(why, whylen, "%s: cannot send the request", address);
        close(fd);
        return NULL;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap + 1);
    for (;;) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (!buf || poll(&pfd, 1, HTTP_TIMEOUT_MS) <= 0) break;
        if (len == cap) {
            char *m = realloc(buf, 2 * cap + 1);
            if (!m) break;
            buf = m;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r <= 0) break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf) return NULL;
    buf[len] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    if (sscanf(buf, "HTTP/%*d.%*d %d", status) != 1 || !body) {
        snprintf(why, whylen, "%s: not an HTTP answer", address);
        *status = 0;
        free(buf);
        return NULL;
    }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

/* One broker's part, parsed; NULL when it has none (or did not answer). */
static json_t *part_of(const char *address, const char *query)
{
    char path[1024], why[512];
    snprintf(path, sizeof path, "/api/journey?%s", query);
    int status;
    char *body = http_get(address, path, &status, why, sizeof why);
    if (!body) {
        fprintf(stderr, "kafkaiq journey: %s\n", why);
        return NULL;
    }
    json_error_t err;
    json_t *j = json_loads(body, 0, &err);
    free(body);
    if (status != 200) {
        json_decref(j);
        return NULL;
    }
    if (!j) fprintf(stderr, "kafkaiq journey: %s: bad JSON: %s\n", address, err.text);
    return j;
}

/* A query string value with what URLs need escaped. */
static void escape(char *out, size_t n, const char *s)
{
    size_t k = 0;
    for (; *s && k + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~", c))
            out[k++] = (char)c;
        else
            k += (size_t)snprintf(out + k, n - k, "%%%02X", c);
    }
    out[k] = '\0';
}

static json_int_t num(const json_t *s, const char *k) { return json_integer_value(json_object_get(s, k)); }
static const char *str(const json_t *s, const char *k)
{
    const char *v = json_string_value(json_object_get(s, k));
    return v ? v : "?";
}
static bool has(const json_t *s, const char *k) { return json_object_get(s, k) != NULL; }

/* The clock the stages are merged by: t_ns when the parts come from one
 * process (one monotonic clock), wall_us when from several. */
static const char *time_key = "t_ns";

static int by_time(const void *a, const void *b)
{
    json_int_t x = num(*(json_t *const *)a, time_key), y = num(*(json_t *const *)b, time_key);
    return (x > y) - (x < y);
}

int kiq_cmd_journey(int argc, char **argv)
{
    const char *http = NULL, *trace = NULL;
    const char *pos[3];
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--http") && i + 1 < argc) http = argv[++i];
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace = argv[++i];
        else if (npos < 3 && argv[i][0] != '-') pos[npos++] = argv[i];
        else {
            fprintf(stderr, "kafkaiq journey: unexpected '%s'\n", argv[i]);
            npos = -1;
            break;
        }
    }
    if (!http || (trace ? npos != 0 : npos != 3)) {
        fprintf(stderr, "usage: kafkaiq journey --http HOST:PORT[,HOST:PORT...] TOPIC PARTITION OFFSET\n"
                        "       kafkaiq journey --http HOST:PORT[,HOST:PORT...] --trace ID\n");
        return 2;
    }
    char *list = strdup(http), *addresses[MAX_BROKERS];
    int naddr = 0;
    for (char *tok = strtok(list, ","); tok && naddr < MAX_BROKERS; tok = strtok(NULL, ",")) addresses[naddr++] = tok;
    char query[1024], esc[512];
    if (trace) {
        /* the leader's part knows the trace; the others the batch's offsets */
        escape(esc, sizeof esc, trace);
        snprintf(query, sizeof query, "trace=%s", esc);
        json_t *found = NULL;
        for (int i = 0; i < naddr && !found; i++) found = part_of(addresses[i], query);
        if (!found) {
            fprintf(stderr, "kafkaiq journey: no broker keeps a journey for trace %s\n", trace);
            free(list);
            return 1;
        }
        escape(esc, sizeof esc, str(found, "topic"));
        snprintf(query, sizeof query, "topic=%s&partition=%lld&offset=%lld", esc, (long long)num(found, "partition"),
                 (long long)num(found, "first_offset"));
        json_decref(found);
    } else {
        escape(esc, sizeof esc, pos[0]);
        snprintf(query, sizeof query, "topic=%s&partition=%s&offset=%s", esc, pos[1], pos[2]);
    }
    json_t *parts[MAX_BROKERS], *head = NULL, *verdict = NULL;
    size_t nstages = 0;
    int nparts = 0;
    const char *process = NULL;
    for (int i = 0; i < naddr; i++) {
        json_t *p = part_of(addresses[i], query);
        if (!p) continue;
        parts[nparts++] = p;
        if (process && strcmp(process, str(p, "process")) != 0) time_key = "wall_us";
        process = str(p, "process");
        nstages += json_array_size(json_object_get(p, "stages"));
        json_t *first = json_array_get(json_object_get(p, "stages"), 0);
        if (!head || (first && !strcmp(str(first, "stage"), "received"))) head = p;
        /* the leader's part says where the batch stands */
        if (json_object_get(p, "verdict")) verdict = json_object_get(p, "verdict");
    }
    free(list);
    if (!head) {
        fprintf(stderr, "kafkaiq journey: no broker keeps a journey for %s\n", query);
        return 1;
    }
    json_t **stages = calloc(nstages ? nstages : 1, sizeof *stages);
    size_t k = 0;
    for (int i = 0; i < nparts; i++) {
        json_t *a = json_object_get(parts[i], "stages");
        for (size_t s = 0; s < json_array_size(a); s++) stages[k++] = json_array_get(a, s);
    }
    qsort(stages, k, sizeof *stages, by_time);
    printf("journey of %s-%lld, offsets %lld..%lld", str(head, "topic"), (long long)num(head, "partition"),
           (long long)num(head, "first_offset"), (long long)num(head, "last_offset"));
    if (has(head, "trace")) printf(" (trace %s)", str(head, "trace"));
    bool wall = strcmp(time_key, "wall_us") == 0;
    printf(", from %d broker%s%s\n", nparts, nparts == 1 ? "" : "s", wall ? " in several processes (wall clock)" : "");
    json_int_t t0 = k ? num(stages[0], time_key) : 0;
    /* each stage comes worded by its broker (its text), and why it waited */
    for (size_t i = 0; i < k; i++) {
        double ms = (double)(num(stages[i], time_key) - t0) / (wall ? 1e3 : 1e6);
        printf("%+9.3f ms  %s\n", ms, str(stages[i], "text"));
        if (has(stages[i], "why")) printf("%12s why: %s\n", "", str(stages[i], "why"));
    }
    if (verdict) printf("verdict: %s\n", str(verdict, "text"));
    free(stages);
    for (int i = 0; i < nparts; i++) json_decref(parts[i]);
    return 0;
}
