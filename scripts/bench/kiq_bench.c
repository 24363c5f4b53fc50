/* kiq_bench: produce and consume throughput against any Kafka-protocol
 * address (KafkaIQ, librdkafka's mock cluster, Apache Kafka), with librdkafka.
 *
 * For each message size (100 B and 1 KiB) it notes every partition's high
 * watermark, produces COUNT messages (linger.ms 5, batch.size 1 MiB, no
 * compression, acks as asked), then reads back from the noted offsets with an
 * assign()ed consumer (no group) and prints messages/s and MB/s (10^6 bytes of
 * payload) for both phases. Starting from the noted offsets lets reruns share
 * a topic. A server that keeps less than was produced (the mock cluster keeps
 * 5 MiB per partition) is read from its low watermark; the figures say how
 * many messages were read.
 *
 * A count of 0 skips that size. --batch-messages caps the records in one
 * batch (librdkafka's batch.num.messages, default 100000): 1 makes a batch
 * per record, as a broker keeping per-batch state sees its worst case.
 *
 * --rate N instead sends N records/s for --seconds S (after a second of
 * warm-up, printed as its own row), each in a request of its own (linger.ms
 * 0, one record per batch, one request in flight), while an assign()ed
 * consumer in another thread reads them back; each record carries its send
 * time (CLOCK_MONOTONIC, one host), so the row adds the end-to-end latency's
 * p50 and p99 in ms, producer send to consumer receipt.
 *
 * --producers LIST (say 1,4,8) instead runs, for each count in the list and
 * for acks=1 then acks=all, that many producer threads at once (a client
 * each), together producing --count-large 1 KiB records (shared out
 * evenly); the row is the sum. Every row moves the same bytes, so rows
 * differ by the producers alone: on a VM whose page cache slows past a
 * few hundred MB, a row per producer count grew with the count and its
 * throughput fell for the volume, not the producers.
 *
 * usage: kiq_bench --bootstrap HOST:PORT [--topic NAME] [--partitions N]
 *                  [--replication-factor N] [--count-small N] [--count-large N] [--acks 0|1|all]
 *                  [--batch-messages N] [--label NAME] [--no-header]
 *                  [--rate N [--seconds S] [--size B]] [--producers LIST]
 */
#define _GNU_SOURCE
#include <librdkafka/rdkafka.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARTITIONS 256
#define OP_TIMEOUT_MS 10000
#define STALL_LIMIT_S 30.0 /* a phase making no progress this long gives up */

/* Settings from the command line; owned by main's thread (the only one of ours). */
struct bench_opts {
    const char *bootstrap;
    const char *topic;
    const char *acks;
    const char *label;
    int partitions;
    int replication_factor; /* of the topic it creates */
    long count_small;
    long count_large;
    const char *batch_messages;
    int header;
    int no_consume; /* produce only: for profiles of the produce path */
    const char *extra[16]; /* -X KEY=VALUE: more client configs (say security.protocol=ssl) */
    int nextra;
    long rate; /* records/s of the fixed-rate run; 0: the throughput runs */
    long seconds;
    long size; /* record size of the fixed-rate run */
    const char *producers; /* comma-separated producer counts of the scaling run */
};

/* Result of one phase. */
struct phase_result {
    long msgs;
    long long bytes;
    double seconds;
    long errors;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000 * 1000 };
    nanosleep(&ts, NULL);
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kiq_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void conf_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
    char err[512];
    if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK)
        die("config %s=%s: %s", key, value, err);
}

/* The -X configs onto conf. */
static void conf_extra(rd_kafka_conf_t *conf, const struct bench_opts *o)
{
    for (int i = 0; i < o->nextra; i++) {
        char key[256];
        const char *eq = strchr(o->extra[i], '=');
        if (!eq || eq == o->extra[i] || (size_t)(eq - o->extra[i]) >= sizeof key)
            die("-X %s: KEY=VALUE expected", o->extra[i]);
        memcpy(key, o->extra[i], (size_t)(eq - o->extra[i]));
        key[eq - o->extra[i]] = '\0';
        conf_set(conf, key, eq + 1);
    }
}

static rd_kafka_t *client_new(rd_kafka_type_t type, rd_kafka_conf_t *conf)
{
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (!rk)
        die("rd_kafka_new: %s", err);
    return rk;
}

/* Delivery reports count into the phase result passed as the opaque. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct phase_result *r = opaque;
    (void)rk;
    if (m->err) {
        if (r->errors++ == 0)
            fprintf(stderr, "kiq_bench: delivery failed: %s\n", rd_kafka_err2str(m->err));
    } else {
        r->msgs++;
        r->bytes += (long long)m->len;
    }
}

/* The throughput producer's settings; linger is the fixed-rate run's 0 or 5 ms. */
static rd_kafka_conf_t *producer_conf(const struct bench_opts *o, struct phase_result *r, const char *linger)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", o->bootstrap);
    conf_set(conf, "acks", o->acks);
    conf_set(conf, "linger.ms", linger);
    conf_set(conf, "batch.size", "1048576");
    conf_set(conf, "batch.num.messages", o->batch_messages);
    conf_set(conf, "compression.type", "none");
    conf_set(conf, "queue.buffering.max.messages", "2000000");
    conf_set(conf, "queue.buffering.max.kbytes", "1048576");
    conf_set(conf, "message.timeout.ms", "120000");
    conf_extra(conf, o);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, r);
    return conf;
}

static rd_kafka_t *producer_new(const struct bench_opts *o, struct phase_result *r)
{
    return client_new(RD_KAFKA_PRODUCER, producer_conf(o, r, "5"));
}

/* Creates the topic; an existing topic, or a server that cannot create topics
 * (it will auto-create on first use), is not an error. */
static void topic_create(rd_kafka_t *rk, const struct bench_opts *o)
{
    char err[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(o->topic, o->partitions, o->replication_factor, err, sizeof err);
    if (!nt)
        die("NewTopic: %s", err);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(ao, OP_TIMEOUT_MS, err, sizeof err);
    rd_kafka_AdminOptions_set_operation_timeout(ao, OP_TIMEOUT_MS, err, sizeof err);
    rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, OP_TIMEOUT_MS + 5000);
    if (!ev) {
        fprintf(stderr, "kiq_bench: CreateTopics: no answer; relying on auto-creation\n");
    } else {
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n)
                                                 : NULL;
        rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
        if (!e && n == 1)
            e = rd_kafka_topic_result_error(tr[0]);
        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            fprintf(stderr, "kiq_bench: CreateTopics %s: %s; relying on auto-creation\n",
                    o->topic, rd_kafka_err2str(e));
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

/* Whether the topic exists, asking for all topics so nothing gets auto-created. */
static int topic_exists(rd_kafka_t *rk, const char *topic)
{
    const struct rd_kafka_metadata *md;
    int found = 0;
    if (rd_kafka_metadata(rk, 1, NULL, &md, OP_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return 0;
    for (int i = 0; i < md->topic_cnt; i++)
        if (!strcmp(md->topics[i].topic, topic) && !md->topics[i].err)
            found = 1;
    rd_kafka_metadata_destroy(md);
    return found;
}

/* Partition count of the topic from metadata, waiting for it to appear. */
static int topic_partitions(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    double deadline = now_s() + OP_TIMEOUT_MS / 1000.0;
    int n = 0;
    while (n == 0 && now_s() < deadline) {
        const struct rd_kafka_metadata *md;
        if (rd_kafka_metadata(rk, 0, rkt, &md, OP_TIMEOUT_MS) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (md->topic_cnt == 1 && !md->topics[0].err)
                n = md->topics[0].partition_cnt;
            rd_kafka_metadata_destroy(md);
        }
        if (n == 0)
            sleep_ms(200);
    }
    rd_kafka_topic_destroy(rkt);
    if (n == 0)
        die("topic %s did not appear in metadata", topic);
    if (n > MAX_PARTITIONS)
        die("topic %s has %d partitions; at most %d supported", topic, n, MAX_PARTITIONS);
    return n;
}

/* In a cluster a new topic's leaders learn they lead a moment after
 * CreateTopics answers: until then they answer with retriable errors. */
static int watermark_retriable(rd_kafka_resp_err_t e)
{
    return e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
           e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION || e == RD_KAFKA_RESP_ERR__TIMED_OUT;
}

static void watermarks(rd_kafka_t *rk, const char *topic, int nparts, int64_t *lo, int64_t *hi)
{
    double deadline = now_s() + OP_TIMEOUT_MS / 1000.0;
    for (int p = 0; p < nparts; p++) {
        rd_kafka_resp_err_t e;
        while ((e = rd_kafka_query_watermark_offsets(rk, topic, p, &lo[p], &hi[p], OP_TIMEOUT_MS)) &&
               watermark_retriable(e) && now_s() < deadline)
            sleep_ms(50);
        if (e)
            die("watermarks of %s [%d]: %s", topic, p, rd_kafka_err2str(e));
    }
}

static struct phase_result produce_phase(const struct bench_opts *o, rd_kafka_t *rk,
                                         struct phase_result *dr, long count, size_t size)
{
    char *payload = malloc(size);
    if (!payload)
        die("out of memory");
    for (size_t i = 0; i < size; i++)
        payload[i] = (char)('a' + (i * 7 + i / 13) % 26);
    memset(dr, 0, sizeof *dr);

    double start = now_s();
    for (long i = 0; i < count; i++) {
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_VALUE(payload, size),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                die("produce: %s", rd_kafka_err2str(e));
            rd_kafka_poll(rk, 1);
        }
        if ((i & 1023) == 0)
            rd_kafka_poll(rk, 0);
    }
    long last = -1;
    double last_progress = now_s();
    while (rd_kafka_outq_len(rk) > 0) {
        rd_kafka_poll(rk, 100);
        long done = dr->msgs + dr->errors;
        if (done != last) {
            last = done;
            last_progress = now_s();
        } else if (now_s() - last_progress > STALL_LIMIT_S) {
            fprintf(stderr, "kiq_bench: produce stalled with %d messages unacknowledged\n",
                    rd_kafka_outq_len(rk));
            break;
        }
    }
    struct phase_result r = *dr;
    r.seconds = now_s() - start;
    free(payload);
    return r;
}

/* An assign()ed consumer's settings; wait_ms is how long a fetch may wait. */
static rd_kafka_conf_t *consumer_conf(const struct bench_opts *o, const char *wait_ms)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    conf_set(conf, "bootstrap.servers", o->bootstrap);
    /* librdkafka's assign() needs a group id; nothing is ever committed to it. */
    conf_set(conf, "group.id", "kiq-bench");
    conf_set(conf, "enable.auto.commit", "false");
    conf_set(conf, "enable.partition.eof", "false");
    conf_set(conf, "fetch.max.bytes", "52428800");
    conf_set(conf, "max.partition.fetch.bytes", "10485760");
    conf_set(conf, "fetch.wait.max.ms", wait_ms);
    conf_extra(conf, o);
    conf_set(conf, "queued.min.messages", "1000000");
    return conf;
}

static struct phase_result consume_phase(const struct bench_opts *o, int nparts,
                                         const int64_t *from, const int64_t *to)
{
    rd_kafka_t *rk = client_new(RD_KAFKA_CONSUMER, consumer_conf(o, "100"));
    rd_kafka_poll_set_consumer(rk);

    rd_kafka_topic_partition_list_t *tpl = rd_kafka_topic_partition_list_new(nparts);
    long want = 0;
    int open_parts = 0;
    for (int p = 0; p < nparts; p++) {
        if (to[p] <= from[p])
            continue;
        rd_kafka_topic_partition_list_add(tpl, o->topic, p)->offset = from[p];
        want += (long)(to[p] - from[p]);
        open_parts++;
    }
    struct phase_result r = { 0 };
    double start = now_s(), last_progress = start, last_msg = start;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, tpl);
    if (e)
        die("assign: %s", rd_kafka_err2str(e));

    int64_t next[MAX_PARTITIONS];
    for (int p = 0; p < nparts; p++)
        next[p] = from[p];
    while (open_parts > 0) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m) {
            if (now_s() - last_progress > STALL_LIMIT_S) {
                fprintf(stderr, "kiq_bench: consume stalled after %ld of %ld messages\n",
                        r.msgs, want);
                break;
            }
            continue;
        }
        if (m->err) {
            if (r.errors++ == 0)
                fprintf(stderr, "kiq_bench: consume error: %s\n", rd_kafka_message_errstr(m));
        } else if (m->partition >= 0 && m->partition < nparts && m->offset >= next[m->partition]) {
            r.msgs++;
            r.bytes += (long long)m->len;
            next[m->partition] = m->offset + 1;
            if (next[m->partition] == to[m->partition])
                open_parts--;
            last_msg = last_progress = now_s();
        }
        rd_kafka_message_destroy(m);
    }
    r.seconds = last_msg - start;
    rd_kafka_topic_partition_list_destroy(tpl);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return r;
}

static void print_row(const struct bench_opts *o, size_t size, const char *phase,
                      const struct phase_result *r, long asked)
{
    double s = r->seconds > 0 ? r->seconds : 1e-9;
    printf("%-12s %6zu %-8s %10ld %9.2f %12.0f %9.1f", o->label, size, phase, r->msgs, r->seconds,
           r->msgs / s, r->bytes / s / 1e6);
    if (r->msgs != asked)
        printf("   (of %ld)", asked);
    if (r->errors)
        printf("   %ld errors", r->errors);
    putchar('\n');
    fflush(stdout);
}

static void run_size(const struct bench_opts *o, rd_kafka_t *prod, struct phase_result *dr,
                     int nparts, long count, size_t size)
{
    int64_t lo[MAX_PARTITIONS], before[MAX_PARTITIONS], after[MAX_PARTITIONS];
    watermarks(prod, o->topic, nparts, lo, before);
    struct phase_result pr = produce_phase(o, prod, dr, count, size);
    print_row(o, size, "produce", &pr, count);
    if (o->no_consume)
        return;

    /* Read what the server holds of this run: from the noted high watermark,
     * or from the low one if the server dropped the start already. */
    long held = 0;
    watermarks(prod, o->topic, nparts, lo, after);
    for (int p = 0; p < nparts; p++) {
        if (lo[p] > before[p])
            before[p] = lo[p];
        if (after[p] > before[p])
            held += (long)(after[p] - before[p]);
    }
    struct phase_result cr = consume_phase(o, nparts, before, after);
    print_row(o, size, "consume", &cr, held);
}

/* The fixed-rate run's state shared by the producing thread (main) and the
 * consumer thread; the fields are atomics or written before the thread starts. */
struct rate_run {
    rd_kafka_t *consumer;
    atomic_int stop;
    atomic_int phase;        /* records of another phase (a late warm-up one) are not counted */
    atomic_long received;    /* records of the current phase read back */
    int64_t *lat_ns;         /* latencies of the current phase; consumer thread writes, main reads after */
    long cap;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A record's first 12 bytes: its send time (ns) and its phase. */
#define RATE_STAMP 12

static void *rate_consumer(void *arg)
{
    struct rate_run *rr = arg;
    while (!atomic_load(&rr->stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rr->consumer, 50);
        if (!m)
            continue;
        if (!m->err && m->len >= RATE_STAMP) {
            int64_t sent;
            int32_t phase;
            memcpy(&sent, m->payload, sizeof sent);
            memcpy(&phase, (const char *)m->payload + sizeof sent, sizeof phase);
            if (phase == atomic_load(&rr->phase)) {
                long i = atomic_load(&rr->received);
                if (i < rr->cap)
                    rr->lat_ns[i] = now_ns() - sent;
                atomic_store(&rr->received, i + 1);
            }
        }
        rd_kafka_message_destroy(m);
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sends rate * seconds records paced on an absolute schedule, waits until
 * the consumer has read them back, and prints the row with p50/p99. */
static void rate_phase(const struct bench_opts *o, rd_kafka_t *prod, struct phase_result *dr,
                       struct rate_run *rr, int phase, const char *name, long seconds)
{
    long count = o->rate * seconds;
    size_t size = (size_t)o->size;
    char *payload = calloc(1, size);
    if (!payload)
        die("out of memory");
    memset(dr, 0, sizeof *dr);
    atomic_store(&rr->phase, phase);
    atomic_store(&rr->received, 0);
    int64_t start = now_ns();
    for (long i = 0; i < count; i++) {
        int64_t due = start + (int64_t)((double)i * 1e9 / (double)o->rate);
        struct timespec ts = { due / 1000000000, due % 1000000000 };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
            ;
        int64_t sent = now_ns();
        int32_t ph = phase;
        memcpy(payload, &sent, sizeof sent);
        memcpy(payload + sizeof sent, &ph, sizeof ph);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            prod, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_VALUE(payload, size),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (e)
            die("produce: %s", rd_kafka_err2str(e));
        rd_kafka_poll(prod, 0);
    }
    rd_kafka_flush(prod, OP_TIMEOUT_MS);
    double deadline = now_s() + STALL_LIMIT_S;
    while (atomic_load(&rr->received) < dr->msgs && now_s() < deadline)
        sleep_ms(1);
    struct phase_result r = { .msgs = atomic_load(&rr->received), .errors = dr->errors };
    r.bytes = (long long)r.msgs * (long long)size;
    r.seconds = (now_ns() - start) / 1e9;
    if (r.msgs < dr->msgs)
        fprintf(stderr, "kiq_bench: %s: read back %ld of %ld delivered records\n", name, r.msgs, dr->msgs);
    long n = r.msgs < rr->cap ? r.msgs : rr->cap;
    double p50 = 0, p99 = 0;
    if (n > 0) {
        qsort(rr->lat_ns, (size_t)n, sizeof rr->lat_ns[0], cmp_i64);
        p50 = rr->lat_ns[(n - 1) / 2] / 1e6;
        p99 = rr->lat_ns[(n - 1) * 99 / 100] / 1e6;
    }
    double s = r.seconds > 0 ? r.seconds : 1e-9;
    printf("%-12s %6zu %-8s %10ld %9.2f %12.0f %9.1f %8.3f %8.3f", o->label, size, name, r.msgs,
           r.seconds, r.msgs / s, r.bytes / s / 1e6, p50, p99);
    if (r.msgs != count)
        printf("   (of %ld)", count);
    if (r.errors)
        printf("   %ld errors", r.errors);
    putchar('\n');
    fflush(stdout);
    free(payload);
}

static void run_rate(const struct bench_opts *o, int nparts)
{
    struct phase_result dr;
    rd_kafka_conf_t *conf = producer_conf(o, &dr, "0");
    conf_set(conf, "batch.num.messages", "1");
    conf_set(conf, "max.in.flight.requests.per.connection", "1");
    rd_kafka_t *prod = client_new(RD_KAFKA_PRODUCER, conf);

    struct rate_run rr = { .cap = o->rate * (o->seconds > 1 ? o->seconds : 1) };
    rr.lat_ns = malloc((size_t)rr.cap * sizeof rr.lat_ns[0]);
    if (!rr.lat_ns)
        die("out of memory");
    int64_t lo[MAX_PARTITIONS], hi[MAX_PARTITIONS];
    watermarks(prod, o->topic, nparts, lo, hi);
    rr.consumer = client_new(RD_KAFKA_CONSUMER, consumer_conf(o, "500"));
    rd_kafka_poll_set_consumer(rr.consumer);
    rd_kafka_topic_partition_list_t *tpl = rd_kafka_topic_partition_list_new(nparts);
    for (int p = 0; p < nparts; p++)
        rd_kafka_topic_partition_list_add(tpl, o->topic, p)->offset = hi[p];
    rd_kafka_resp_err_t e = rd_kafka_assign(rr.consumer, tpl);
    if (e)
        die("assign: %s", rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(tpl);
    pthread_t t;
    if (pthread_create(&t, NULL, rate_consumer, &rr))
        die("pthread_create failed");

    rate_phase(o, prod, &dr, &rr, 1, "warmup", 1);
    rate_phase(o, prod, &dr, &rr, 2, "rate", o->seconds);

    atomic_store(&rr.stop, 1);
    pthread_join(t, NULL);
    rd_kafka_consumer_close(rr.consumer);
    rd_kafka_destroy(rr.consumer);
    rd_kafka_destroy(prod);
    free(rr.lat_ns);
}

/* One producer thread of the scaling run: its own client, started together. */
struct scale_worker {
    const struct bench_opts *o;
    pthread_barrier_t *ready;
    rd_kafka_t *prod;
    long count; /* its share of the records */
    struct phase_result dr, result;
};

static void *scale_produce(void *arg)
{
    struct scale_worker *w = arg;
    pthread_barrier_wait(w->ready);
    w->result = produce_phase(w->o, w->prod, &w->dr, w->count, 1024);
    return NULL;
}

static void run_scaling(const struct bench_opts *o)
{
    static const char *const acks[] = { "1", "all" };
    const char *p = o->producers;
    while (*p) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > 64 || (*end && *end != ','))
            die("--producers wants counts from 1 to 64 separated by commas, not '%s'", o->producers);
        p = *end ? end + 1 : end;
        for (size_t a = 0; a < sizeof acks / sizeof acks[0]; a++) {
            struct bench_opts wo = *o;
            wo.acks = acks[a];
            struct scale_worker w[64];
            pthread_t t[64];
            pthread_barrier_t ready;
            pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
            for (long i = 0; i < n; i++) {
                w[i] = (struct scale_worker){ .o = &wo, .ready = &ready,
                                              .count = o->count_large / n + (i < o->count_large % n) };
                w[i].prod = producer_new(&wo, &w[i].dr);
                /* connected and knowing the leaders before the clock starts */
                topic_partitions(w[i].prod, o->topic);
                if (pthread_create(&t[i], NULL, scale_produce, &w[i]))
                    die("pthread_create failed");
            }
            double start = now_s();
            pthread_barrier_wait(&ready);
            struct phase_result sum = { 0 };
            for (long i = 0; i < n; i++) {
                pthread_join(t[i], NULL);
                sum.msgs += w[i].result.msgs;
                sum.bytes += w[i].result.bytes;
                sum.errors += w[i].result.errors;
            }
            sum.seconds = now_s() - start;
            char phase[32];
            snprintf(phase, sizeof phase, "x%ld-acks%s", n, acks[a]);
            wo.label = o->label;
            print_row(&wo, 1024, phase, &sum, o->count_large);
            for (long i = 0; i < n; i++)
                rd_kafka_destroy(w[i].prod);
            pthread_barrier_destroy(&ready);
        }
    }
}

static long parse_count(const char *s, const char *opt, long least)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || n < least)
        die("%s wants a number of at least %ld, not '%s'", opt, least, s);
    return n;
}

static void usage(void)
{
    fputs("usage: kiq_bench --bootstrap HOST:PORT [--topic NAME] [--partitions N] [--replication-factor N]\n"
          "                 [--count-small N] [--count-large N] [--acks 0|1|all]\n"
          "                 [--batch-messages N] [--label NAME] [--no-header] [--no-consume]\n"
          "                 [--rate N [--seconds S] [--size B]] [--producers LIST] [-X KEY=VALUE]...\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    struct bench_opts o = {
        .topic = "kiq-bench",
        .acks = "1",
        .label = "target",
        .partitions = 3,
        .replication_factor = 1,
        .count_small = 1000000,
        .count_large = 300000,
        .batch_messages = "100000",
        .header = 1,
        .seconds = 10,
        .size = 100,
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-header")) {
            o.header = 0;
            continue;
        }
        if (!strcmp(a, "--no-consume")) {
            o.no_consume = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--bootstrap"))
            o.bootstrap = v;
        else if (!strcmp(a, "--topic"))
            o.topic = v;
        else if (!strcmp(a, "--partitions"))
            o.partitions = (int)parse_count(v, a, 1);
        else if (!strcmp(a, "--replication-factor"))
            o.replication_factor = (int)parse_count(v, a, 1);
        else if (!strcmp(a, "--count-small"))
            o.count_small = parse_count(v, a, 0);
        else if (!strcmp(a, "--count-large"))
            o.count_large = parse_count(v, a, 0);
        else if (!strcmp(a, "--batch-messages")) {
            parse_count(v, a, 1);
            o.batch_messages = v;
        }
        else if (!strcmp(a, "--rate"))
            o.rate = parse_count(v, a, 1);
        else if (!strcmp(a, "--seconds"))
            o.seconds = parse_count(v, a, 1);
        else if (!strcmp(a, "--size"))
            o.size = parse_count(v, a, RATE_STAMP);
        else if (!strcmp(a, "--producers"))
            o.producers = v;
        else if (!strcmp(a, "--acks"))
            o.acks = v;
        else if (!strcmp(a, "--label"))
            o.label = v;
        else if (!strcmp(a, "-X") && o.nextra < (int)(sizeof o.extra / sizeof o.extra[0]))
            o.extra[o.nextra++] = v;
        else
            usage();
    }
    if (!o.bootstrap)
        usage();
    if (strcmp(o.acks, "0") && strcmp(o.acks, "1") && strcmp(o.acks, "all") &&
        strcmp(o.acks, "-1"))
        die("--acks wants 0, 1 or all");
    if (o.partitions > MAX_PARTITIONS)
        die("--partitions: at most %d", MAX_PARTITIONS);

    struct phase_result dr;
    rd_kafka_t *prod = producer_new(&o, &dr);
    if (!topic_exists(prod, o.topic))
        topic_create(prod, &o);
    int nparts = topic_partitions(prod, o.topic);

    if (o.rate) {
        if (o.header) {
            printf("# topic %s, %d partitions, acks=%s, %ld records/s of %ld B for %ld s, one record a "
                   "request, linger.ms=0, one in flight; p50/p99 ms = producer send to consumer receipt\n",
                   o.topic, nparts, o.acks, o.rate, o.size, o.seconds);
            printf("%-12s %6s %-8s %10s %9s %12s %9s %8s %8s\n", "target", "bytes", "phase", "messages",
                   "seconds", "msg/s", "MB/s", "p50 ms", "p99 ms");
        }
        run_rate(&o, nparts);
        rd_kafka_destroy(prod);
        return 0;
    }
    if (o.header) {
        printf("# topic %s, %d partitions, acks=%s, linger.ms=5, batch.size=1MiB, "
               "batch.num.messages=%s, compression none; MB = 10^6 payload bytes\n",
               o.topic, nparts, o.producers ? "1 then all" : o.acks, o.batch_messages);
        printf("%-12s %6s %-8s %10s %9s %12s %9s\n", "target", "bytes", "phase", "messages",
               "seconds", "msg/s", "MB/s");
    }
    if (o.producers) {
        run_scaling(&o);
        rd_kafka_destroy(prod);
        return 0;
    }
    if (o.count_small)
        run_size(&o, prod, &dr, nparts, o.count_small, 100);
    if (o.count_large)
        run_size(&o, prod, &dr, nparts, o.count_large, 1024);

    rd_kafka_flush(prod, OP_TIMEOUT_MS);
    rd_kafka_destroy(prod);
    return 0;
}
