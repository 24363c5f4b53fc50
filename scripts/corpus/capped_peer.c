/* A one-broker peer for scripts/capture_corpus.sh whose ApiVersions answer
 * caps some APIs' versions, so that a current client sends the older
 * versions it would send an older broker (KafkaIQ accepts them as well).
 * It is librdkafka's mock cluster, built against the librdkafka a Node
 * module bundles.
 *
 * usage: capped_peer KEY:MAX...
 * prints the bootstrap address, then serves until stdin closes. */
#include <stdio.h>
#include <stdlib.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

int main(int argc, char **argv)
{
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, rd_kafka_conf_new(), err, sizeof err);
    if (!rk) {
        fprintf(stderr, "capped_peer: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
    if (!mc) {
        fprintf(stderr, "capped_peer: cannot start the mock cluster\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        int key, max;
        if (sscanf(argv[i], "%d:%d", &key, &max) != 2 ||
            rd_kafka_mock_set_apiversion(mc, (int16_t)key, 0, (int16_t)max) != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "capped_peer: cannot cap %s (KEY:MAX)\n", argv[i]);
            return 1;
        }
    }
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    while (getchar() != EOF) {
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}
