/* /metrics: Kafka's metrics in Prometheus text format under the names
 * dashboards built on the jmx_exporter already use (kafka_<domain>_<type>
 * _<name>, lower case; rates become _total counters, request times
 * quantiles), and KafkaIQ's own under kafkaiq_. Read at each scrape from
 * the broker's counters, histograms and partitions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "core/arena.h"
#include "core/clock.h"
#include "http/http_server.h"
#include "http/views.h"
#include "net/peer_channel.h"
#include "proto/errors.h"
#include "replica/partition_replica.h"
#include "replica/replica_manager.h"

static void help(FILE *f, const char *name, const char *type, const char *text)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* A label value with Prometheus's escapes. */
static void label(FILE *f, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"') fputc('\\', f);
        if (*v == '\n') {
            fputs("\\n", f);
            continue;
        }
        fputc(*v, f);
    }
}

static const struct {
    const char *name;
    enum kiq_request_stage stage;
    const char *text;
} request_times[] = {
    {"kafka_network_requestmetrics_requestqueuetimems", KIQ_STAGE_QUEUE, "ms waiting for an I/O thread"},
    {"kafka_network_requestmetrics_localtimems", KIQ_STAGE_LOCAL, "ms in the handler"},
    {"kafka_network_requestmetrics_remotetimems", KIQ_STAGE_REMOTE, "ms parked (acks=all, fetch waits)"},
    {"kafka_network_requestmetrics_responsequeuetimems", KIQ_STAGE_RESPONSE_QUEUE, "ms waiting for the processor"},
    {"kafka_network_requestmetrics_responsesendtimems", KIQ_STAGE_SEND, "ms writing the response"},
    {"kafka_network_requestmetrics_totaltimems", KIQ_STAGE_TOTAL, "ms from receipt to the last byte sent"},
};

static void request_metrics(kiq_broker_t *b, FILE *f)
{
    static const double qs[] = {0.5, 0.75, 0.95, 0.99, 0.999};
    static const char *const qnames[] = {"0.5", "0.75", "0.95", "0.99", "0.999"};
    for (size_t m = 0; m < sizeof request_times / sizeof request_times[0]; m++) {
        help(f, request_times[m].name, "summary", request_times[m].text);
        for (size_t i = 0; i < kiq_api_codec_count; i++) {
            kiq_histogram_t *h = kiq_request_stats_times(&b->stats, kiq_api_codecs[i].key, request_times[m].stage);
            if (!h) continue;
            uint64_t n = 0;
            for (size_t q = 0; q < sizeof qs / sizeof qs[0]; q++)
                fprintf(f, "%s{request=\"%s\",quantile=\"%s\"} %.3f\n", request_times[m].name, kiq_api_codecs[i].name,
                        qnames[q], kiq_histogram_quantile_ms(h, qs[q], &n));
            int64_t ns[KIQ_STAGE__COUNT];
            kiq_request_stats_get(&b->stats, kiq_api_codecs[i].key, ns);
            fprintf(f, "%s_sum{request=\"%s\"} %.3f\n%s_count{request=\"%s\"} %llu\n", request_times[m].name,
                    kiq_api_codecs[i].name, (double)ns[request_times[m].stage] / 1e6, request_times[m].name,
                    kiq_api_codecs[i].name, (unsigned long long)n);
        }
    }
    help(f, "kafka_network_requestmetrics_requests_total", "counter", "requests served");
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        int64_t ns[KIQ_STAGE__COUNT];
        uint64_t n = kiq_request_stats_get(&b->stats, kiq_api_codecs[i].key, ns);
        if (n) fprintf(f, "kafka_network_requestmetrics_requests_total{request=\"%s\"} %llu\n", kiq_api_codecs[i].name,
                       (unsigned long long)n);
    }
    help(f, "kafka_network_requestmetrics_errors_total", "counter",
         "error codes in responses (each partition's and topic's too), NONE included");
    for (size_t i = 0; i < kiq_api_codec_count; i++)
        for (int code = -1; code < KIQ_STATS_MAX_ERROR - 1; code++) {
            uint64_t n = kiq_request_stats_errors(&b->stats, kiq_api_codecs[i].key, code);
            if (n) fprintf(f, "kafka_network_requestmetrics_errors_total{request=\"%s\",error=\"%s\"} %llu\n",
                           kiq_api_codecs[i].name, kiq_error_name(code), (unsigned long long)n);
        }
    help(f, "kafkaiq_trailing_requests_total", "counter", "requests with bytes after their last field, served");
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        uint64_t bytes, n = kiq_request_stats_get_trailing(&b->stats, kiq_api_codecs[i].key, &bytes);
        if (n) fprintf(f, "kafkaiq_trailing_requests_total{request=\"%s\"} %llu\n", kiq_api_codecs[i].name,
                       (unsigned long long)n);
    }
}

static void topic_metrics(kiq_broker_t *b, FILE *f)
{
    kiq_topic_count_t *t;
    int n = kiq_topic_counts_snapshot(b->topic_counts, &t);
    if (n < 0) return;
    static const struct {
        const char *name, *text;
        size_t off;
    } counters[] = {
        {"kafka_server_brokertopicmetrics_messagesin_total", "messages produced", offsetof(kiq_topic_count_t, messages_in)},
        {"kafka_server_brokertopicmetrics_bytesin_total", "bytes produced", offsetof(kiq_topic_count_t, bytes_in)},
        {"kafka_server_brokertopicmetrics_bytesout_total", "bytes fetched by consumers", offsetof(kiq_topic_count_t, bytes_out)},
    };
    for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
        help(f, counters[c].name, "counter", counters[c].text);
        uint64_t all = 0;
        for (int i = 0; i < n; i++) {
            uint64_t v = *(const uint64_t *)((const char *)&t[i] + counters[c].off);
            all += v;
            fprintf(f, "%s{topic=\"", counters[c].name);
            label(f, t[i].topic);
            fprintf(f, "\"} %llu\n", (unsigned long long)v);
        }
        fprintf(f, "%s %llu\n", counters[c].name, (unsigned long long)all);
    }
    free(t);
}

/* The effective min.insync.replicas of a topic. */
static int64_t min_insync(kiq_broker_t *b, kiq_topic_t *topic)
{
    kiq_topic_configs_t tc = {0};
    bool have = kiq_topic_configs_snapshot(topic, &tc) == 0;
    char buf[32];
    int source;
    const char *v = kiq_topic_config_effective(b->config, have ? &tc : NULL, kiq_topic_config_find("min.insync.replicas", 19),
                                               buf, sizeof buf, &source);
    int64_t n = v ? strtoll(v, NULL, 10) : 1;
    kiq_topic_configs_clear(&tc);
    return n;
}

static void partition_metrics(kiq_broker_t *b, FILE *f)
{
    int count = 0;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    int partitions = 0, leaders = 0, under = 0, under_min = 0, at_min = 0, offline = 0;
    char *log_lines = NULL;
    size_t log_len = 0;
    FILE *logs = open_memstream(&log_lines, &log_len);
    kiq_replica_view_t *v = malloc(sizeof *v);
    for (int i = 0; v && logs && i < count; i++) {
        int64_t need = min_insync(b, list[i]);
        int32_t n = list[i]->npartitions;
        for (int32_t p = 0; p < n; p++) {
            kiq_partition_t *part = list[i]->partitions[p];
            kiq_partition_log_t *log = part->log;
            if (!log || !part->replica) continue;
            partitions++;
            if (kiq_partition_log_offline(log)) offline++;
            kiq_partition_replica_view(part->replica, v);
            if (v->role == KIQ_REPLICA_LEADER) {
                leaders++;
                under += v->nisr < v->nreplicas;
                under_min += v->nisr < need;
                at_min += v->nisr == need;
            }
            static const char *const names[] = {"kafka_log_log_size", "kafka_log_log_logendoffset",
                                                "kafka_log_log_logstartoffset", "kafka_log_log_numlogsegments"};
            int64_t values[] = {(int64_t)kiq_partition_log_size(log), kiq_partition_log_end_offset(log),
                                kiq_partition_log_start_offset(log), kiq_partition_log_segments(log, NULL, 0)};
            for (int k = 0; k < 4; k++) {
                fprintf(logs, "%s{topic=\"", names[k]);
                label(logs, list[i]->name);
                fprintf(logs, "\",partition=\"%d\"} %lld\n", p, (long long)values[k]);
            }
        }
    }
    free(v);
    kiq_topics_list_free(list, count);
    if (logs) fclose(logs);
    static const struct {
        const char *name, *text;
    } gauges[] = {
        {"kafka_server_replicamanager_partitioncount", "partitions with a replica here"},
        {"kafka_server_replicamanager_leadercount", "partitions led here"},
        {"kafka_server_replicamanager_underreplicatedpartitions", "led here with an ISR smaller than the replica set"},
        {"kafka_server_replicamanager_underminisrpartitioncount", "led here with an ISR below min.insync.replicas"},
        {"kafka_server_replicamanager_atminisrpartitioncount", "led here with an ISR at min.insync.replicas"},
        {"kafka_server_replicamanager_offlinereplicacount", "replicas here in an offline log directory"},
    };
    int values[] = {partitions, leaders, under, under_min, at_min, offline};
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
        help(f, gauges[g].name, "gauge", gauges[g].text);
        fprintf(f, "%s %d\n", gauges[g].name, values[g]);
    }
    uint64_t shrinks = 0, expands = 0;
    if (b->replicas) kiq_replica_manager_isr_changes(b->replicas, &shrinks, &expands);
    help(f, "kafka_server_replicamanager_isrshrinks_total", "counter", "ISR shrinks of partitions led here");
    fprintf(f, "kafka_server_replicamanager_isrshrinks_total %llu\n", (unsigned long long)shrinks);
    help(f, "kafka_server_replicamanager_isrexpands_total", "counter", "ISR expansions of partitions led here");
    fprintf(f, "kafka_server_replicamanager_isrexpands_total %llu\n", (unsigned long long)expands);
    help(f, "kafka_server_replicafetchermanager_maxlag", "gauge", "largest follower lag behind a leader, in offsets");
    fprintf(f, "kafka_server_replicafetchermanager_maxlag{clientid=\"Replica\"} %lld\n",
            (long long)(b->replicas ? kiq_replica_manager_max_lag(b->replicas) : 0));
    static const char *const log_helps[] = {
        "# HELP kafka_log_log_size bytes of the partition's log\n# TYPE kafka_log_log_size gauge\n",
        "# HELP kafka_log_log_logendoffset the partition's log end offset\n# TYPE kafka_log_log_logendoffset gauge\n",
        "# HELP kafka_log_log_logstartoffset the partition's log start offset\n# TYPE kafka_log_log_logstartoffset gauge\n",
        "# HELP kafka_log_log_numlogsegments the partition's segments\n# TYPE kafka_log_log_numlogsegments gauge\n",
    };
    for (int k = 0; k < 4; k++) fputs(log_helps[k], f);
    if (log_lines) fwrite(log_lines, 1, log_len, f);
    free(log_lines);
}

static void controller_metrics(kiq_broker_t *b, FILE *f)
{
    bool active = b->controller || !b->cluster; /* a standalone broker is its own controller */
    int offline = 0;
    if (b->controller) {
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_controller_info_t info;
        kiq_controller_describe(b->controller, &a, &info);
        for (int t = 0; t < info.ntopics; t++)
            for (int32_t p = 0; p < info.topics[t].npartitions; p++) offline += info.topics[t].partitions[p].leader < 0;
        kiq_arena_reset(&a);
    }
    help(f, "kafka_controller_kafkacontroller_activecontrollercount", "gauge", "1 on the broker hosting the controller");
    fprintf(f, "kafka_controller_kafkacontroller_activecontrollercount %d\n", active);
    help(f, "kafka_controller_kafkacontroller_offlinepartitionscount", "gauge", "partitions without a leader");
    fprintf(f, "kafka_controller_kafkacontroller_offlinepartitionscount %d\n", offline);
    help(f, "kafka_controller_controllerstats_uncleanleaderelections_total", "counter",
         "leaders elected from outside the ISR");
    fprintf(f, "kafka_controller_controllerstats_uncleanleaderelections_total %llu\n",
            (unsigned long long)(b->controller ? kiq_controller_unclean_elections(b->controller) : 0));
}

static void thread_metrics(kiq_broker_t *b, FILE *f)
{
    help(f, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", "gauge",
         "share of the I/O threads' time not spent handling requests");
    int64_t up = kiq_clock_mono_ns() - b->io_started_ns;
    double busy = up > 0 && b->nio_threads > 0
                      ? (double)atomic_load(&b->io_busy_ns) / ((double)up * b->nio_threads)
                      : 0;
    fprintf(f, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent %.4f\n", busy < 1 ? 1 - busy : 0);
    help(f, "kafka_network_socketserver_networkprocessoravgidlepercent", "gauge",
         "share of the processors' time spent waiting for events");
    double idle = 0;
    for (int i = 0; i < b->nprocessors; i++) idle += kiq_processor_idle_ratio(b->processors[i]);
    fprintf(f, "kafka_network_socketserver_networkprocessoravgidlepercent %.4f\n",
            b->nprocessors ? idle / b->nprocessors : 1);
    help(f, "kafka_network_requestchannel_requestqueuesize", "gauge", "requests waiting for an I/O thread");
    fprintf(f, "kafka_network_requestchannel_requestqueuesize %zu\n", kiq_request_queue_depth(b->queue));
    kiq_purgatory_stats_t ps;
    kiq_purgatory_stats(b->purgatory, &ps);
    help(f, "kafka_server_delayedoperationpurgatory_purgatorysize", "gauge", "operations parked in the purgatory");
    for (int k = 0; k < KIQ_DELAYED__KINDS; k++)
        fprintf(f, "kafka_server_delayedoperationpurgatory_purgatorysize{delayedoperation=\"%s\"} %d\n",
                kiq_delayed_kind_names[k], ps.waiting_by_kind[k]);
}

/* The client listener's bounds (issue: every resource bounded), each
 * named by the setting that bounds it. */
static void limit_metrics(kiq_broker_t *b, FILE *f)
{
    kiq_memory_pool_stats_t mp = {0};
    if (b->request_pool) kiq_memory_pool_stats(b->request_pool, &mp);
    help(f, "kafka_network_socketserver_memorypoolused", "gauge",
         "bytes of requests being read and queued (queued.max.request.bytes)");
    fprintf(f, "kafka_network_socketserver_memorypoolused %lld\n", (long long)mp.used);
    help(f, "kafka_network_socketserver_memorypoolavailable", "gauge",
         "bytes left of queued.max.request.bytes (-1: no bound)");
    fprintf(f, "kafka_network_socketserver_memorypoolavailable %lld\n",
            (long long)(mp.capacity < 0 ? -1 : mp.capacity - mp.used));
    help(f, "kafkaiq_memory_pool_refused_total", "counter",
         "reads put off because queued.max.request.bytes was used up");
    fprintf(f, "kafkaiq_memory_pool_refused_total %llu\n", (unsigned long long)mp.refused);
    int starved = 0;
    uint64_t idle = 0, slow = 0;
    for (int i = 0; i < b->nprocessors; i++) {
        kiq_processor_stats_t st;
        kiq_processor_stats(b->processors[i], &st);
        starved += st.starved;
        idle += st.closed_idle;
        slow += st.closed_slow;
    }
    help(f, "kafkaiq_connections_starved", "gauge", "connections left unread until queued.max.request.bytes has room");
    fprintf(f, "kafkaiq_connections_starved %d\n", starved);
    kiq_connection_quotas_stats_t qs = {0};
    if (b->quotas) kiq_connection_quotas_stats(b->quotas, &qs);
    help(f, "kafkaiq_connections_closed_total", "counter", "connections the broker closed, by the limit that did it");
    fprintf(f, "kafkaiq_connections_closed_total{limit=\"connections.max.idle.ms\"} %llu\n", (unsigned long long)idle);
    fprintf(f, "kafkaiq_connections_closed_total{limit=\"kafkaiq.request.read.timeout.ms\"} %llu\n",
            (unsigned long long)slow);
    fprintf(f, "kafkaiq_connections_closed_total{limit=\"max.connections.per.ip\"} %llu\n",
            (unsigned long long)qs.refused_per_ip);
    fprintf(f, "kafkaiq_connections_closed_total{limit=\"open files\"} %llu\n",
            (unsigned long long)(b->acceptor ? kiq_acceptor_refused_fd_limit(b->acceptor) : 0));
    fprintf(f, "kafkaiq_connections_closed_total{limit=\"kafkaiq.http.max.connections\"} %llu\n",
            (unsigned long long)kiq_http_connections_closed(b));
    help(f, "kafkaiq_connections_open", "gauge", "client connections open, of max.connections");
    fprintf(f, "kafkaiq_connections_open %d\n", qs.open);
    int damaged = 0, lost = 0, count = 0;
    kiq_topic_t **list = b->topics ? kiq_topics_list(b->topics, &count) : NULL;
    for (int i = 0; list && i < count; i++)
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&list[i]->partitions[p]->log);
            kiq_data_loss_t loss;
            damaged += l && kiq_partition_log_damaged(l, NULL, 0) >= 0;
            lost += l && kiq_partition_log_data_loss(l, &loss);
        }
    if (list) kiq_topics_list_free(list, count);
    help(f, "kafkaiq_log_damaged_partitions", "gauge",
         "partitions with a segment the scrubber found damaged (kafkaiq.log.scrub.interval.ms)");
    fprintf(f, "kafkaiq_log_damaged_partitions %d\n", damaged);
    help(f, "kafkaiq_log_data_loss_partitions", "gauge",
         "partitions that lost records they held, until acknowledged (kafkaiq verify --acknowledge)");
    fprintf(f, "kafkaiq_log_data_loss_partitions %d\n", lost);
}

/* The kept channel to the controller (net/peer_channel.h), in a cluster. */
static void channel_metrics(kiq_broker_t *b, FILE *f)
{
    if (!b->controller_channel) return;
    kiq_peer_channel_stats_t st;
    kiq_peer_channel_stats(b->controller_channel, &st);
    help(f, "kafkaiq_peer_channel_calls_total", "counter",
         "calls on the channel to another broker: sent, answered, failed (of those, expired before they were sent)");
    fprintf(f,
            "kafkaiq_peer_channel_calls_total{peer=\"controller\",outcome=\"sent\"} %llu\n"
            "kafkaiq_peer_channel_calls_total{peer=\"controller\",outcome=\"answered\"} %llu\n"
            "kafkaiq_peer_channel_calls_total{peer=\"controller\",outcome=\"failed\"} %llu\n"
            "kafkaiq_peer_channel_calls_total{peer=\"controller\",outcome=\"expired\"} %llu\n",
            (unsigned long long)st.sent, (unsigned long long)st.answered, (unsigned long long)st.failed,
            (unsigned long long)st.expired);
    help(f, "kafkaiq_peer_channel_connects_total", "counter", "connections the channel made, and attempts that failed");
    fprintf(f,
            "kafkaiq_peer_channel_connects_total{peer=\"controller\",outcome=\"made\"} %llu\n"
            "kafkaiq_peer_channel_connects_total{peer=\"controller\",outcome=\"failed\"} %llu\n",
            (unsigned long long)st.connects, (unsigned long long)st.connect_failures);
    help(f, "kafkaiq_peer_channel_queued", "gauge", "calls waiting on the channel");
    fprintf(f, "kafkaiq_peer_channel_queued{peer=\"controller\"} %d\n", st.queued);
}

static void own_metrics(kiq_broker_t *b, FILE *f)
{
    help(f, "kafkaiq_journeys_kept", "gauge", "record journeys in the ring");
    help(f, "kafkaiq_journeys_total", "counter", "record journeys begun");
    help(f, "kafkaiq_journeys_bytes", "gauge", "memory the journey ring and its indexes take at most");
    kiq_journeys_stats_t js = {0};
    if (b->journeys) kiq_journeys_stats(b->journeys, &js);
    fprintf(f, "kafkaiq_journeys_kept %llu\nkafkaiq_journeys_total %llu\nkafkaiq_journeys_bytes %zu\n",
            (unsigned long long)js.kept, (unsigned long long)js.recorded, js.bytes);
    help(f, "kafkaiq_events_total", "counter", "observer points passed");
    for (int p = 0; p < KIQ__POINTS; p++)
        fprintf(f, "kafkaiq_events_total{point=\"%s\"} %llu\n", kiq_point_names[p],
                (unsigned long long)kiq_event_counts_get(&b->event_counts, (enum kiq_point)p));
    help(f, "kafkaiq_fetch_bytes_total", "counter",
         "record bytes fetches returned: sent from the segment files with sendfile, or copied");
    fprintf(f, "kafkaiq_fetch_bytes_total{mode=\"sendfile\"} %lld\nkafkaiq_fetch_bytes_total{mode=\"copy\"} %lld\n",
            (long long)atomic_load(&b->fetch_bytes_sendfile), (long long)atomic_load(&b->fetch_bytes_copied));
    help(f, "kafkaiq_interceptor_failures_total", "counter",
         "interceptor calls that raised or ran over their budget (kafkaiq.hook.max.instructions)");
    uint64_t failures = b->interceptors.ops ? b->interceptors.ops->failures(b->interceptors.ctx) : 0;
    fprintf(f, "kafkaiq_interceptor_failures_total %llu\n", (unsigned long long)failures);
}

void kiq_http_metrics(kiq_broker_t *b, kiq_http_view_t *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    if (b->running) {
        request_metrics(b, f);
        topic_metrics(b, f);
        partition_metrics(b, f);
        controller_metrics(b, f);
        thread_metrics(b, f);
        limit_metrics(b, f);
        channel_metrics(b, f);
    }
    own_metrics(b, f);
    if (fclose(f) != 0 || !text) {
        free(text);
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    *v = (kiq_http_view_t){200, "text/plain; version=0.0.4; charset=utf-8", text, len};
}
