/* librdkafka's share consumer (KIP-932, a preview in 2.15), for the interop
 * tests: built by tests/interop/test_rdkafka_share.py against the librdkafka
 * @confluentinc/kafka-javascript 1.10.1 bundles (2.15.1). One scenario per
 * run, its result one JSON object on stdout; a failure to run is exit 1.
 * Every consumer acknowledges explicitly (share.acknowledgement.mode
 * explicit), so each record's fate is the program's choice.
 *
 * usage: rdkafka_share BOOTSTRAP SCENARIO GROUP TOPIC ARGS...
 *   consume GROUP TOPIC N   two consumers polling in turn, accepting all,
 *                           until N distinct records came or a deadline:
 *                           {"deliveries", "distinct", "per_consumer": [a, b],
 *                            "max_delivery_count"}
 *   expire GROUP TOPIC      one consumer takes records and acknowledges none
 *                           (it stops polling, so nothing is sent); a second
 *                           polls until they come to it again:
 *                           {"held", "redelivered", "delivery_counts": [...],
 *                            "first_offset"}
 *   limit GROUP TOPIC L N   one consumer releases every record it gets, until
 *                           each of N was delivered L times, then polls 3 s more:
 *                           {"records", "deliveries", "max_delivery_count",
 *                            "after_limit"}
 *
 * KIQ_RDKAFKA_DEBUG=contexts sets librdkafka's debug. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#define DEADLINE_MS 60000
#define POLL_MS 200
#define MAX_OFFSETS 100000

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "rdkafka_share: %s: %s\n", what, detail);
    exit(1);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static rd_kafka_share_t *consumer(const char *bootstrap, const char *group, const char *topic, const char *id)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *debug = getenv("KIQ_RDKAFKA_DEBUG");
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "client.id", id, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "share.acknowledgement.mode", "explicit", err, sizeof err) != RD_KAFKA_CONF_OK ||
        (debug && *debug && rd_kafka_conf_set(conf, "debug", debug, err, sizeof err) != RD_KAFKA_CONF_OK))
        die("config", err);
    rd_kafka_share_t *c = rd_kafka_share_consumer_new(conf, err, sizeof err);
    if (!c) die("rd_kafka_share_consumer_new", err);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_share_subscribe(c, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e) die("rd_kafka_share_subscribe", rd_kafka_err2str(e));
    return c;
}

static void finish(rd_kafka_share_t *c)
{
    rd_kafka_error_t *e = rd_kafka_share_consumer_close(c);
    if (e) {
        fprintf(stderr, "rdkafka_share: close: %s\n", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    e = rd_kafka_share_destroy(c);
    if (e) rd_kafka_error_destroy(e);
}

/* One poll of c; each data record's offset and delivery count go to fn, whose
 * answer is its acknowledgement (0: none). Returns the records seen. */
typedef rd_kafka_share_AcknowledgeType_t (*seen_fn)(int32_t partition, int64_t offset, int16_t deliveries, void *ctx);
static int poll_once(rd_kafka_share_t *c, seen_fn fn, void *ctx)
{
    rd_kafka_messages_t *batch = NULL;
    rd_kafka_error_t *e = rd_kafka_share_poll(c, POLL_MS, &batch);
    if (e) {
        fprintf(stderr, "rdkafka_share: poll: %s\n", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        rd_kafka_messages_destroy(batch);
        return 0;
    }
    int n = 0;
    size_t cnt = rd_kafka_messages_count(batch);
    for (size_t i = 0; i < cnt; i++) {
        rd_kafka_message_t *m = rd_kafka_messages_get(batch, i);
        if (m->err) {
            fprintf(stderr, "rdkafka_share: record error: %s\n", rd_kafka_err2str(m->err));
            continue;
        }
        n++;
        rd_kafka_share_AcknowledgeType_t t = fn(m->partition, m->offset, rd_kafka_message_delivery_count(m), ctx);
        if (t && rd_kafka_share_acknowledge_type(c, m, t)) die("acknowledge", "refused");
    }
    rd_kafka_messages_destroy(batch);
    return n;
}

/* The records seen: per partition (at most 8) and offset, how often and the
 * highest delivery count. */
typedef struct {
    int *times[8];
    int16_t *count[8];
    int distinct, deliveries, max_count;
    rd_kafka_share_AcknowledgeType_t answer;
} tally_t;

static rd_kafka_share_AcknowledgeType_t tally(int32_t p, int64_t off, int16_t deliveries, void *ctx)
{
    tally_t *t = ctx;
    if (p < 0 || p >= 8 || off < 0 || off >= MAX_OFFSETS) die("record", "partition or offset out of range");
    if (!t->times[p]) {
        t->times[p] = calloc(MAX_OFFSETS, sizeof(int));
        t->count[p] = calloc(MAX_OFFSETS, sizeof(int16_t));
    }
    if (t->times[p][off]++ == 0) t->distinct++;
    t->deliveries++;
    if (deliveries > t->count[p][off]) t->count[p][off] = deliveries;
    if (deliveries > t->max_count) t->max_count = deliveries;
    return t->answer;
}

static int consume(const char *bootstrap, const char *group, const char *topic, int n)
{
    rd_kafka_share_t *c[2] = {consumer(bootstrap, group, topic, "share-a"),
                              consumer(bootstrap, group, topic, "share-b")};
    tally_t t = {.answer = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT};
    int per[2] = {0, 0};
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (t.distinct < n && now_ms() < deadline)
        for (int i = 0; i < 2; i++) per[i] += poll_once(c[i], tally, &t);
    /* the last acceptances go out with the close */
    finish(c[0]);
    finish(c[1]);
    printf("{\"deliveries\": %d, \"distinct\": %d, \"per_consumer\": [%d, %d], \"max_delivery_count\": %d}\n",
           t.deliveries, t.distinct, per[0], per[1], t.max_count);
    return 0;
}

/* Held by the first consumer: the offsets it took, in order. */
typedef struct {
    int64_t offsets[1024];
    int n;
} held_t;

static rd_kafka_share_AcknowledgeType_t hold(int32_t p, int64_t off, int16_t deliveries, void *ctx)
{
    held_t *h = ctx;
    if (h->n < 1024) h->offsets[h->n++] = off;
    return 0;
}

typedef struct {
    const held_t *held;
    int16_t counts[1024];
    int redelivered;
} again_t;

static rd_kafka_share_AcknowledgeType_t again(int32_t p, int64_t off, int16_t deliveries, void *ctx)
{
    again_t *a = ctx;
    for (int i = 0; i < a->held->n; i++)
        if (a->held->offsets[i] == off && a->counts[i] == 0) {
            a->counts[i] = deliveries;
            a->redelivered++;
        }
    return RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT;
}

static int expire(const char *bootstrap, const char *group, const char *topic)
{
    rd_kafka_share_t *holder = consumer(bootstrap, group, topic, "share-holder");
    held_t h = {.n = 0};
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (h.n == 0 && now_ms() < deadline) poll_once(holder, hold, &h);
    if (h.n == 0) die("expire", "the holder got no records");
    /* the holder polls no more: its records stay acquired, unacknowledged,
     * until their lock runs out */
    rd_kafka_share_t *other = consumer(bootstrap, group, topic, "share-other");
    again_t a = {.held = &h};
    while (a.redelivered < h.n && now_ms() < deadline) poll_once(other, again, &a);
    finish(other);
    rd_kafka_share_destroy_flags(holder, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    printf("{\"held\": %d, \"redelivered\": %d, \"first_offset\": %" PRId64 ", \"delivery_counts\": [", h.n,
           a.redelivered, h.offsets[0]);
    for (int i = 0; i < h.n; i++) printf("%s%d", i ? ", " : "", a.counts[i]);
    printf("]}\n");
    return 0;
}

static int limit(const char *bootstrap, const char *group, const char *topic, int l, int n)
{
    rd_kafka_share_t *c = consumer(bootstrap, group, topic, "share-releaser");
    tally_t t = {.answer = RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_RELEASE};
    int64_t deadline = now_ms() + DEADLINE_MS;
    while (t.deliveries < n * l && now_ms() < deadline) poll_once(c, tally, &t);
    int before = t.deliveries;
    /* the last releases go out with the next poll; then nothing may come */
    int64_t quiet = now_ms() + 3000;
    while (now_ms() < quiet) poll_once(c, tally, &t);
    finish(c);
    printf("{\"records\": %d, \"deliveries\": %d, \"max_delivery_count\": %d, \"after_limit\": %d}\n", t.distinct,
           before, t.max_count, t.deliveries - before);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) die("usage", "rdkafka_share BOOTSTRAP consume|expire|limit GROUP TOPIC [L] [N]");
    const char *bootstrap = argv[1], *scenario = argv[2], *group = argv[3], *topic = argv[4];
    if (!strcmp(scenario, "consume") && argc >= 6) return consume(bootstrap, group, topic, atoi(argv[5]));
    if (!strcmp(scenario, "expire")) return expire(bootstrap, group, topic);
    if (!strcmp(scenario, "limit") && argc >= 7) return limit(bootstrap, group, topic, atoi(argv[5]), atoi(argv[6]));
    die("unknown scenario", scenario);
    return 1;
}
