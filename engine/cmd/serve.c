/* kafkaiq serve: one broker in the foreground until SIGTERM or SIGINT, or
 * with --brokers N a whole cluster in this process; once every broker
 * serves, one JSON line on stdout says where (and --ready-file gets the
 * same line), so a launcher in any language can start it on free ports. */
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cmd/serve.h"
#include "config/config.h"
#include "config/listeners.h"
#include "core/error.h"
#include "core/say.h"
#include "http/http_server.h"
#include "include/kafkaiq.h"
#include "lua/hooks.h"
#include "net/free_port.h"
#include "server/broker_set.h"

/* Each connection and each segment holds descriptors; the usual soft limit
 * of 1024 is too low for a broker, so take what the hard limit allows. */
void kiq_cmd_raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Fetch responses are large, short-lived buffers. glibc would map and unmap
 * each one, and every fresh page then costs a fault; keeping them in the heap
 * lets the memory be reused warm. */
static void tune_malloc(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
}

/* Sets name=value on c unless the user set it. */
static int set_default(kiq_config_t *c, enum kiq_config_id id, const char *value)
{
    bool is_default;
    kiq_config_text(c, id, &is_default);
    return is_default ? kiq_config_set(c, kiq_config_defs[id].name, value) : 0;
}

/* An in-process cluster: n brokers and, with --controllers, a separate
 * quorum of that many controller-only nodes; without, three of the
 * brokers (one when there are fewer than three) are combined nodes that
 * also vote. */
typedef struct layout {
    int brokers, controllers; /* controllers: 0 for combined nodes */
} layout_t;

static int nodes_of(layout_t l) { return l.brokers + l.controllers; }
static int voters_of(layout_t l) { return l.controllers ? l.controllers : l.brokers >= 3 ? 3 : 1; }
/* Node i's voter index, -1 when it does not vote: brokers 0 .. voters-1
 * when combined, else the controllers, which come after the brokers. */
static int voter_index(layout_t l, int i)
{
    int v = l.controllers ? i - l.brokers : i;
    return v >= 0 && v < voters_of(l) ? v : -1;
}

/* Node i of an in-process cluster: broker i (a combined node when it
 * votes) or controller i - brokers. Its client listener on the client
 * port + i (and the HTTP listener's), a control-plane listener on the
 * client port + 100 + i, its own directory under each log dir. With
 * client port 0 every listener takes a free port, the voters' control
 * ports picked before any node starts (net/free_port.h: voter_ports), as
 * every node's controller.quorum.voters names them. */
static kiq_config_t *cluster_member(const kiq_config_t *base, int i, layout_t l, const int *voter_ports)
{
    kiq_listener_t ls[KIQ_MAX_LISTENERS];
    const kiq_listener_t *data, *control;
    int nl;
    if (kiq_listeners_parse(kiq_config_str(base, KIQ_CFG_LISTENERS), ls, KIQ_MAX_LISTENERS, &nl) != 0 ||
        kiq_listeners_pick(base, ls, nl, true, &data, &control) != 0)
        return NULL;
    const char *host = *data->host ? data->host : "127.0.0.1";
    kiq_config_t *c = kiq_config_copy(base);
    if (!c) return NULL;
    char v[1024], dirs[4096] = "";
    int rc = 0;
    snprintf(v, sizeof v, "%d", i);
    rc |= kiq_config_set(c, "broker.id", v);
    bool free_ports = data->port == 0;
    int nvoters = voters_of(l), vi = voter_index(l, i);
    bool is_broker = i < l.brokers;
    rc |= kiq_config_set(c, "process.roles", !is_broker ? "controller" : vi >= 0 ? "broker,controller" : "broker");
    rc |= kiq_config_set(c, "control.plane.listener.name", "CONTROLLER");
    int control_port = free_ports ? (vi >= 0 ? voter_ports[vi] : 0) : data->port + 100 + i;
    if (is_broker)
        snprintf(v, sizeof v, "PLAINTEXT://%s:%d,CONTROLLER://%s:%d", host, free_ports ? 0 : data->port + i, host,
                 control_port);
    else
        snprintf(v, sizeof v, "CONTROLLER://%s:%d", host, control_port);
    rc |= kiq_config_set(c, "listeners", v);
    v[0] = 0;
    for (int j = 0; j < nvoters; j++) {
        int id = l.controllers ? l.brokers + j : j;
        size_t used = strlen(v);
        snprintf(v + used, sizeof v - used, "%s%d@%s:%d", j ? "," : "", id, host,
                 free_ports ? voter_ports[j] : data->port + 100 + id);
    }
    rc |= kiq_config_set(c, "controller.quorum.voters", v);
    const char *src = kiq_config_str(base, KIQ_CFG_LOG_DIRS);
    for (const char *p = src; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t used = strlen(dirs);
        snprintf(dirs + used, sizeof dirs - used, "%s%.*s/%s-%d", used ? "," : "", (int)len, p,
                 is_broker ? "broker" : "controller", i);
        p = end ? end + 1 : p + len;
    }
    rc |= kiq_config_set(c, "log.dirs", dirs);
    /* each node's HTTP listener on the configured port + i (0: a free one each) */
    const char *http = kiq_config_str(base, KIQ_CFG_HTTP_LISTENER);
    const char *colon = strrchr(http, ':');
    if (*http && colon) {
        int port = atoi(colon + 1);
        snprintf(v, sizeof v, "%.*s:%d", (int)(colon - http), http, port ? port + i : 0);
        rc |= kiq_config_set(c, "kafkaiq.http.listener", v);
    }
    snprintf(v, sizeof v, "%d", l.brokers < 3 ? l.brokers : 3);
    rc |= set_default(c, KIQ_CFG_DEFAULT_REPLICATION_FACTOR, v);
    rc |= set_default(c, KIQ_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR, v);
    rc |= kiq_config_share_cores(c, l.brokers);
    if (rc != 0 || kiq_config_validate(c) != 0) {
        kiq_config_free(c);
        return NULL;
    }
    return c;
}

/* {"pid", "bootstrap", "brokers": [{"id", "host", "port", "control_port",
 * "http"}], "controllers": [{"id", "host", "control_port", "http"}],
 * "http"}: brokers first, controller-only nodes apart (they serve no
 * client; the list is empty with combined nodes); "http" the first
 * broker's HTTP address, "" without one. */
static char *ready_line(kiq_broker_t **nodes, int n, int nbrokers)
{
    json_t *lists[2] = {json_array(), json_array()}, *j = json_object();
    char bootstrap[64 * 300] = "", addr[300];
    for (int i = 0; i < n; i++) {
        const char *host = kiq_broker_host(nodes[i]);
        json_t *e = json_object();
        int http = kiq_http_port(nodes[i]);
        json_object_set_new(e, "id", json_integer(i));
        json_object_set_new(e, "host", json_string(host));
        if (i < nbrokers) {
            size_t used = strlen(bootstrap);
            snprintf(bootstrap + used, sizeof bootstrap - used, "%s%s:%d", i ? "," : "", host,
                     kiq_broker_port(nodes[i]));
            json_object_set_new(e, "port", json_integer(kiq_broker_port(nodes[i])));
        }
        if (kiq_broker_control_port(nodes[i]) >= 0)
            json_object_set_new(e, "control_port", json_integer(kiq_broker_control_port(nodes[i])));
        snprintf(addr, sizeof addr, "%s:%d", host, http);
        json_object_set_new(e, "http", json_string(http > 0 ? addr : ""));
        json_array_append_new(lists[i >= nbrokers], e);
    }
    json_object_set_new(j, "pid", json_integer(getpid()));
    json_object_set_new(j, "bootstrap", json_string(bootstrap));
    json_object_set(j, "http", json_object_get(json_array_get(lists[0], 0), "http"));
    json_object_set_new(j, "brokers", lists[0]);
    json_object_set_new(j, "controllers", lists[1]);
    char *line = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return line;
}

/* Until every broker serves (in a cluster: unfenced, so a topic can have
 * all of them as replicas at once), at most READY_WAIT_MS. */
#define READY_WAIT_MS 60000
static int wait_ready(kiq_broker_t **brokers, int n)
{
    for (int waited = 0;; waited++) {
        int i = 0;
        while (i < n && kiq_broker_ready(brokers[i])) i++;
        if (i == n) return 0;
        const char *failed = kiq_broker_failed(brokers[i]);
        if (failed) return kiq_error_set("broker %d: %s", i, failed);
        if (waited >= READY_WAIT_MS) return kiq_error_set("broker %d not serving after %d ms", i, READY_WAIT_MS);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

/* The ready line on stdout, and written whole to path (a reader never sees
 * half of it: written beside it, then renamed). */
static int announce(kiq_broker_t **brokers, int n, int nbrokers, const char *path)
{
    char *line = ready_line(brokers, n, nbrokers);
    if (!line) return kiq_error_set("out of memory");
    printf("%s\n", line);
    fflush(stdout);
    int rc = 0;
    if (path) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
            rc = kiq_error_errno("cannot write the ready file %s", path);
    }
    free(line);
    return rc;
}

int kiq_cmd_serve(int argc, char **argv)
{
    kiq_config_t *cfg = kiq_config_new();
    if (!cfg) return 1;
    int rc = 1, nbrokers = 0, ncontrollers = 0;
    const char *ready_file = NULL;
    kiq_broker_t **brokers = NULL;
    kiq_broker_set_t *process = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) {
            ready_file = argv[++i];
        } else if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc) {
            nbrokers = atoi(argv[++i]);
            if (nbrokers < 1 || nbrokers > 64) {
                fprintf(stderr, "kafkaiq: --brokers takes 1 to 64\n");
                goto out;
            }
        } else if (strcmp(argv[i], "--controllers") == 0 && i + 1 < argc) {
            ncontrollers = atoi(argv[++i]);
            if (ncontrollers < 1 || ncontrollers > KIQ_MAX_VOTERS) {
                fprintf(stderr, "kafkaiq: --controllers takes 1 to %d\n", KIQ_MAX_VOTERS);
                goto out;
            }
        } else if (strcmp(argv[i], "--override") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "kafkaiq: --override needs key=value\n");
                goto out;
            }
            if (kiq_config_override(cfg, argv[++i]) != 0) goto bad_config;
        } else if (strncmp(argv[i], "--override=", 11) == 0) {
            if (kiq_config_override(cfg, argv[i] + 11) != 0) goto bad_config;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "kafkaiq: unknown option %s (see kafkaiq help)\n", argv[i]);
            goto out;
        } else if (kiq_config_load_file(cfg, argv[i]) != 0) {
            goto bad_config;
        }
    }
    if (kiq_config_validate(cfg) != 0) goto bad_config;
    kiq_say_set_level(kiq_say_level_parse(kiq_config_str(cfg, KIQ_CFG_LOG_LEVEL)));

    /* Signals are taken by this thread alone: block them before any broker
     * thread starts so every thread inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    kiq_cmd_raise_fd_limit();
    tune_malloc();
    if (ncontrollers && !nbrokers) nbrokers = 1;
    layout_t l = {nbrokers, ncontrollers};
    int n = nbrokers ? nodes_of(l) : 1;
    brokers = calloc((size_t)n, sizeof *brokers);
    if (!brokers) goto out;
    if (nbrokers && !(process = kiq_broker_set_new())) {
        KIQ_ERROR("%s", kiq_error_get());
        goto out;
    }
    int voter_ports[KIQ_MAX_VOTERS] = {0};
    for (int i = 0; nbrokers && i < voters_of(l); i++) {
        /* distinct ones: a port just released may come back at once */
        for (int tries = 0, seen = 1; tries < 10 && seen; tries++) {
            voter_ports[i] = kiq_free_port();
            seen = voter_ports[i] <= 0;
            for (int j = 0; j < i; j++) seen |= voter_ports[j] == voter_ports[i];
        }
        if (voter_ports[i] < 0) {
            KIQ_ERROR("%s", kiq_error_get());
            goto stop;
        }
    }
    /* the voters first, so the brokers find a quorum */
    for (int k = 0; k < n; k++) {
        int i = l.controllers ? (k < l.controllers ? l.brokers + k : k - l.controllers) : k;
        kiq_config_t *bc = nbrokers ? cluster_member(cfg, i, l, voter_ports) : cfg;
        if (!bc) {
            KIQ_ERROR("invalid configuration for node %d: %s", i, kiq_error_get());
            goto stop;
        }
        brokers[i] = kiq_broker_new(bc);
        if (bc != cfg) kiq_config_free(bc);
        /* fault rules and Lua interceptors, as the control API offers them;
         * in the set, so the control API can stop and start each */
        if (!brokers[i] || kiq_hooks_attach(brokers[i]) != 0 || (process && kiq_broker_set_add(process, brokers[i]) != 0) ||
            kiq_broker_start(brokers[i]) != 0) {
            KIQ_ERROR("cannot start node %d: %s", i, kiq_error_get());
            goto stop;
        }
    }
    if (wait_ready(brokers, n) != 0 || announce(brokers, n, nbrokers ? nbrokers : 1, ready_file) != 0) {
        KIQ_ERROR("%s", kiq_error_get());
        goto stop;
    }
    /* a signal, or a broker that cannot go on (it says why) */
    for (;;) {
        struct timespec tick = {0, 200 * 1000000};
        int sig = sigtimedwait(&set, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            KIQ_INFO("%s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            rc = 0;
            break;
        }
        const char *failed = NULL;
        int32_t failed_id = 0;
        if (process)
            failed = kiq_broker_set_failed(process, &failed_id);
        else
            failed = kiq_broker_failed(brokers[0]);
        if (failed) {
            KIQ_ERROR("exiting: broker %d: %s", (int)failed_id, failed);
            break;
        }
    }
stop:
    kiq_broker_set_free(process); /* no operation on a broker from here on */
    /* the voters go last, so the others still reach the controller */
    for (int pass = 0; pass < 2; pass++)
        for (int i = n - 1; i >= 0; i--)
            if ((voter_index(l, i) >= 0) == (pass == 1)) kiq_broker_free(brokers[i]);
    goto out;
bad_config:
    KIQ_ERROR("invalid configuration: %s", kiq_error_get());
out:
    free(brokers);
    kiq_config_free(cfg);
    return rc;
}

