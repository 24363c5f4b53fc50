/* The kafkaiq command: `kafkaiq serve` (engine/cmd/serve.c) runs brokers
 * in the foreground; `kafkaiq run` a Lua script with the engine embedded;
 * `kafkaiq journey` prints a batch's journey from the brokers' HTTP
 * listeners; `kafkaiq verify` checks data directories offline. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <lualib.h>
#include <time.h>
#include <unistd.h>

#include "cmd/journey.h"
#include "cmd/serve.h"
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
            "usage: kafkaiq serve [--brokers N [--controllers N]] [--ready-file PATH] [server.properties] [--override key=value]...\n"
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
    kiq_cmd_raise_fd_limit();
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
    if (strcmp(argv[1], "serve") == 0) return kiq_cmd_serve(argc - 2, argv + 2);
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
