/* The kafkaiq command. `kafkaiq serve [server.properties] [--override k=v]…`
 * runs one broker in the foreground until SIGTERM or SIGINT. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/error.h"
#include "core/log.h"
#include "include/kafkaiq.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kafkaiq serve [server.properties] [--override key=value]...\n"
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

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "serve") == 0) return serve(argc - 2, argv + 2);
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
