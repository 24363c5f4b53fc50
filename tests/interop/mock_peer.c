/* librdkafka's mock cluster as a process of its own, for pointing real
 * clients at a peer other than KafkaIQ: tests/interop/test_lua_client.py
 * (three brokers, so partitions have different leaders) and
 * scripts/capture_corpus.sh (one broker whose ApiVersions answer caps some
 * APIs' versions, so a current client sends the older ones it would send an
 * older broker). Built against whichever librdkafka the caller links.
 *
 * usage: mock_peer [-b BROKERS] [-t TOPIC:PARTITIONS] [-c KEY:MAX]...
 * prints the bootstrap servers, then serves until SIGTERM or SIGINT. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MAX_CAPS 32

static int usage(void)
{
    fprintf(stderr, "usage: mock_peer [-b BROKERS] [-t TOPIC:PARTITIONS] [-c KEY:MAX]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    int brokers = 1, partitions = 0, ncaps = 0, caps[MAX_CAPS][2];
    const char *topic = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "b:t:c:")) != -1) {
        char *colon = optarg ? strrchr(optarg, ':') : NULL;
        if (opt == 'b' && (brokers = atoi(optarg)) > 0) continue;
        if (opt == 't' && colon && (partitions = atoi(colon + 1)) > 0) {
            *colon = '\0';
            topic = optarg;
            continue;
        }
        if (opt == 'c' && ncaps < MAX_CAPS && sscanf(optarg, "%d:%d", &caps[ncaps][0], &caps[ncaps][1]) == 2) {
            ncaps++;
            continue;
        }
        return usage();
    }
    if (optind != argc) return usage();

    /* blocked before librdkafka starts its threads, so sigwait takes them */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
    if (!rk) {
        fprintf(stderr, "mock_peer: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
    if (!mc) {
        fprintf(stderr, "mock_peer: cannot start the mock cluster\n");
        return 1;
    }
    if (topic && rd_kafka_mock_topic_create(mc, topic, partitions, brokers) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "mock_peer: cannot create topic %s\n", topic);
        return 1;
    }
    for (int i = 0; i < ncaps; i++) {
        if (rd_kafka_mock_set_apiversion(mc, (int16_t)caps[i][0], 0, (int16_t)caps[i][1]) !=
            RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "mock_peer: cannot cap api %d at v%d\n", caps[i][0], caps[i][1]);
            return 1;
        }
    }
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
