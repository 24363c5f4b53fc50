/* The kafkaiq command. `kafkaiq serve [server.properties] [--override k=v]…`
 * runs one broker in the foreground until SIGTERM or SIGINT, or with
 * `--brokers N` a whole cluster of N brokers in this process; `kafkaiq
 * journey` prints a batch's journey from the brokers' HTTP listeners. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <lauxlib.h>
#include <malloc.h>
#include <limits.h>
#include <lua.h>
#include <lualib.h>
#include <time.h>
#include <unistd.h>

#include "cmd/journey.h"
#include "config/listeners.h"
#include "config/topic_config.h"
#include "core/error.h"
#include "core/say.h"
#include "include/kafkaiq.h"
#include "log/data_loss.h"
#include "log/log_verify.h"
#include "lua/module.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kafkaiq serve [--brokers N] [server.properties] [--override key=value]...\n"
            "       kafkaiq run [--seed N] script.lua [args]...\n"
            "       kafkaiq journey --http HOST:PORT[,...] TOPIC PARTITION OFFSET | --trace ID\n"
            "       kafkaiq verify DIR...   check a data directory's log files offline\n"
            "       kafkaiq verify --acknowledge PARTITION_DIR...   clear a partition's recorded data loss\n"
            "       kafkaiq version\n"
            "       kafkaiq configs     list broker and topic configs with defaults\n");
}

/* Broker configs, then topic configs with the default a topic gets from
 * the broker's defaults. */
static int list_configs(void)
{
    for (int i = 0; i < KIQ_CFG__COUNT; i++)
        printf("%-30s %-28s %s\n", kiq_config_defs[i].name, kiq_config_defs[i].default_value,
               kiq_config_defs[i].doc);
    kiq_config_t *c = kiq_config_new();
    if (!c) return fprintf(stderr, "kafkaiq: %s\n", kiq_error_get()), 1;
    printf("\ntopic configs (CreateTopics, AlterConfigs):\n");
    for (int i = 0; i < kiq_topic_config_count; i++) {
        char buf[32];
        int source;
        const char *dflt = kiq_topic_config_default(c, i, buf, sizeof buf, &source);
        printf("%-40s %-20s %s\n", kiq_topic_config_defs[i].name, dflt, kiq_topic_config_defs[i].doc);
    }
    kiq_config_free(c);
    return 0;
}

/* Each connection and each segment holds descriptors; the usual soft limit
 * of 1024 is too low for a broker, so take what the hard limit allows. */
static void raise_fd_limit(void)
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

/* Broker i of an in-process cluster of n: the client listener's port + i
 * (and the HTTP listener's), a control-plane listener on the client port
 * + 100 + i, its own directory under each log dir, the controller on
 * broker 0. */
static kiq_config_t *cluster_member(const kiq_config_t *base, int i, int n)
{
    kiq_listener_t ls[KIQ_MAX_LISTENERS];
    const kiq_listener_t *data, *control;
    int nl;
    if (kiq_listeners_parse(kiq_config_str(base, KIQ_CFG_LISTENERS), ls, KIQ_MAX_LISTENERS, &nl) != 0 ||
        kiq_listeners_pick(base, ls, nl, &data, &control) != 0)
        return NULL;
    if (data->port == 0) return kiq_error_set("--brokers needs a fixed client port in listeners"), NULL;
    const char *host = *data->host ? data->host : "127.0.0.1";
    kiq_config_t *c = kiq_config_copy(base);
    if (!c) return NULL;
    char v[1024], dirs[4096] = "";
    int rc = 0;
    snprintf(v, sizeof v, "%d", i);
    rc |= kiq_config_set(c, "broker.id", v);
    snprintf(v, sizeof v, "PLAINTEXT://%s:%d,CONTROLLER://%s:%d", host, data->port + i, host, data->port + 100 + i);
    rc |= kiq_config_set(c, "listeners", v);
    rc |= kiq_config_set(c, "control.plane.listener.name", "CONTROLLER");
    snprintf(v, sizeof v, "0@%s:%d", host, data->port + 100);
    rc |= kiq_config_set(c, "controller.quorum.voters", v);
    const char *src = kiq_config_str(base, KIQ_CFG_LOG_DIRS);
    for (const char *p = src; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t used = strlen(dirs);
        snprintf(dirs + used, sizeof dirs - used, "%s%.*s/broker-%d", used ? "," : "", (int)len, p, i);
        p = end ? end + 1 : p + len;
    }
    rc |= kiq_config_set(c, "log.dirs", dirs);
    /* each broker's HTTP listener on the configured port + i (0: a free one each) */
    const char *http = kiq_config_str(base, KIQ_CFG_HTTP_LISTENER);
    const char *colon = strrchr(http, ':');
    if (*http && colon) {
        int port = atoi(colon + 1);
        snprintf(v, sizeof v, "%.*s:%d", (int)(colon - http), http, port ? port + i : 0);
        rc |= kiq_config_set(c, "kafkaiq.http.listener", v);
    }
    snprintf(v, sizeof v, "%d", n < 3 ? n : 3);
    rc |= set_default(c, KIQ_CFG_DEFAULT_REPLICATION_FACTOR, v);
    rc |= set_default(c, KIQ_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR, v);
    if (rc != 0 || kiq_config_validate(c) != 0) {
        kiq_config_free(c);
        return NULL;
    }
    return c;
}

static int serve(int argc, char **argv)
{
    kiq_config_t *cfg = kiq_config_new();
    if (!cfg) return 1;
    int rc = 1, nbrokers = 0;
    kiq_broker_t **brokers = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc) {
            nbrokers = atoi(argv[++i]);
            if (nbrokers < 1 || nbrokers > 64) {
                fprintf(stderr, "kafkaiq: --brokers takes 1 to 64\n");
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
            fprintf(stderr, "kafkaiq: unknown option %s\n", argv[i]);
            usage(stderr);
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

    raise_fd_limit();
    tune_malloc();
    int n = nbrokers ? nbrokers : 1;
    brokers = calloc((size_t)n, sizeof *brokers);
    if (!brokers) goto out;
    for (int i = 0; i < n; i++) {
        kiq_config_t *bc = nbrokers ? cluster_member(cfg, i, n) : cfg;
        if (!bc) {
            KIQ_ERROR("invalid configuration for broker %d: %s", i, kiq_error_get());
            goto stop;
        }
        brokers[i] = kiq_broker_new(bc);
        if (bc != cfg) kiq_config_free(bc);
        if (!brokers[i] || kiq_broker_start(brokers[i]) != 0) {
            KIQ_ERROR("cannot start broker %d: %s", i, kiq_error_get());
            goto stop;
        }
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
        for (int i = 0; i < n && !failed; i++) failed = kiq_broker_failed(brokers[i]);
        if (failed) {
            KIQ_ERROR("exiting: %s", failed);
            break;
        }
    }
stop:
    /* the controller (broker 0) goes last, so the others still reach it */
    for (int i = n - 1; i >= 0; i--) kiq_broker_free(brokers[i]);
    goto out;
bad_config:
    KIQ_ERROR("invalid configuration: %s", kiq_error_get());
out:
    free(brokers);
    kiq_config_free(cfg);
    return rc;
}

static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    lua_getglobal(L, "debug");
    lua_getfield(L, -1, "traceback");
    lua_pushstring(L, msg ? msg : "(error object is not a string)");
    lua_pushinteger(L, 2);
    lua_call(L, 2, 1);
    return 1;
}

/* Lua modules are looked for next to the command first: <bin>/../lua for a
 * build tree, <bin>/../share/lua/5.1 for an installed tree. */
static void set_module_path(lua_State *L)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = '\0';
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/../lua/?.lua;%s/../lua/?/init.lua;%s/../share/lua/5.1/?.lua;%s", exe, exe,
                    exe, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);
}

/* kafkaiq run [--seed N] script.lua [args]: runs a script with the engine
 * embedded (kafkaiq.core preloaded). The seed, printed at start, is given to
 * scenarios through package.loaded["kafkaiq.runtime"] so a run replays. */
/* kafkaiq verify --acknowledge PARTITION_DIR...: an operator has dealt
 * with each partition's recorded data loss (log/data_loss.h); the record
 * goes, and a running broker stops showing it within a second. Exit 1
 * when a directory had none, 2 when one cannot be changed. */
static int acknowledge(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: kafkaiq verify --acknowledge PARTITION_DIR...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        kiq_data_loss_t loss;
        int marked = kiq_data_loss_load(argv[i], &loss);
        if (marked == 0) {
            printf("%s: no data loss recorded\n", argv[i]);
            if (rc == 0) rc = 1;
            continue;
        }
        if (kiq_data_loss_acknowledge(argv[i]) != 0) {
            fprintf(stderr, "kafkaiq verify: %s\n", kiq_error_get());
            rc = 2;
            continue;
        }
        if (marked > 0)
            printf("%s: acknowledged the data loss of offsets %" PRId64 "..%" PRId64 ": %s (%d finding(s))\n",
                   argv[i], loss.from, loss.to - 1, loss.why, loss.findings);
        else
            printf("%s: acknowledged an unreadable data loss record\n", argv[i]);
    }
    return rc;
}

/* kafkaiq verify DIR...: checks the log files under each DIR offline;
 * exit 1 when any is damaged (or lost data not yet acknowledged), 2 when a
 * DIR cannot be read. */
static int verify(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "--acknowledge") == 0) return acknowledge(argc - 1, argv + 1);
    if (argc < 1) {
        fprintf(stderr, "usage: kafkaiq verify DIR...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        kiq_log_verify_report_t rep;
        if (kiq_log_verify(argv[i], stdout, &rep) != 0) {
            fprintf(stderr, "kafkaiq verify: %s\n", kiq_error_get());
            rc = 2;
            continue;
        }
        printf("%s: %d partitions, %d segments, %lld batches checked: %d damaged, %d warnings\n", argv[i],
               rep.partitions, rep.segments, (long long)rep.batches, rep.damaged, rep.warnings);
        if (rep.damaged && rc == 0) rc = 1;
    }
    return rc;
}

static int run_script(int argc, char **argv)
{
    long long seed = (long long)time(NULL) ^ (long long)getpid();
    int i = 0;
    if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
        char *end;
        seed = strtoll(argv[i + 1], &end, 10);
        if (*end) {
            fprintf(stderr, "kafkaiq run: --seed needs a number\n");
            return 2;
        }
        i += 2;
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    lua_State *L = luaL_newstate();
    if (!L) return 1;
    luaL_openlibs(L);
    set_module_path(L);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, luaopen_kafkaiq_core);
    lua_setfield(L, -2, "kafkaiq.core");
    lua_getfield(L, -2, "loaded");
    lua_createtable(L, 0, 2);
    lua_pushnumber(L, (lua_Number)seed);
    lua_setfield(L, -2, "seed");
    lua_pushstring(L, argv[i]);
    lua_setfield(L, -2, "script");
    lua_setfield(L, -2, "kafkaiq.runtime");
    lua_pop(L, 3);
    /* arg[0] is the script, arg[1..] its arguments, as with luajit */
    lua_createtable(L, argc - i, 1);
    for (int j = i; j < argc; j++) {
        lua_pushstring(L, argv[j]);
        lua_rawseti(L, -2, j - i);
    }
    lua_setglobal(L, "arg");
    fprintf(stderr, "kafkaiq run %s (seed %lld)\n", argv[i], seed);
    lua_pushcfunction(L, traceback);
    int rc = luaL_loadfile(L, argv[i]);
    if (rc == 0) {
        for (int j = i + 1; j < argc; j++) lua_pushstring(L, argv[j]);
        rc = lua_pcall(L, argc - i - 1, 0, -(argc - i + 1));
    }
    if (rc != 0) fprintf(stderr, "kafkaiq run: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "serve") == 0) return serve(argc - 2, argv + 2);
    if (strcmp(argv[1], "run") == 0) return run_script(argc - 2, argv + 2);
    if (strcmp(argv[1], "journey") == 0) return kiq_cmd_journey(argc - 2, argv + 2);
    if (strcmp(argv[1], "version") == 0) return printf("kafkaiq %s\n", KIQ_VERSION) < 0;
    if (strcmp(argv[1], "configs") == 0) return list_configs();
    if (strcmp(argv[1], "verify") == 0) return verify(argc - 2, argv + 2);
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "kafkaiq: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
