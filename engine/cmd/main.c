/* The kafkaiq command. `kafkaiq serve [server.properties] [--override k=v]…`
 * runs one broker in the foreground until SIGTERM or SIGINT. */
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

#include "core/error.h"
#include "core/log.h"
#include "include/kafkaiq.h"
#include "lua/module.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kafkaiq serve [server.properties] [--override key=value]...\n"
            "       kafkaiq run [--seed N] script.lua [args]...\n"
            "       kafkaiq version\n"
            "       kafkaiq configs     list broker configs with defaults\n");
}

static int list_configs(void)
{
    for (int i = 0; i < KIQ_CFG__COUNT; i++)
        printf("%-30s %-28s %s\n", kiq_config_defs[i].name, kiq_config_defs[i].default_value,
               kiq_config_defs[i].doc);
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

static int serve(int argc, char **argv)
{
    kiq_config_t *cfg = kiq_config_new();
    if (!cfg) return 1;
    int rc = 1;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--override") == 0) {
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
    kiq_log_set_level(kiq_log_level_parse(kiq_config_str(cfg, KIQ_CFG_LOG_LEVEL)));

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
    kiq_broker_t *b = kiq_broker_new(cfg);
    if (!b || kiq_broker_start(b) != 0) {
        KIQ_ERROR("cannot start the broker: %s", kiq_error_get());
        kiq_broker_free(b);
        goto out;
    }
    int sig;
    sigwait(&set, &sig);
    KIQ_INFO("%s received, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    kiq_broker_free(b);
    rc = 0;
    goto out;
bad_config:
    KIQ_ERROR("invalid configuration: %s", kiq_error_get());
out:
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
    if (strcmp(argv[1], "version") == 0) return printf("kafkaiq %s\n", KIQ_VERSION) < 0;
    if (strcmp(argv[1], "configs") == 0) return list_configs();
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "kafkaiq: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
