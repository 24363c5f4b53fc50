/* The broker's own figures as a source of its metrics registry
 * (metrics/registry.h): Kafka's metrics under the names dashboards built on
 * the jmx_exporter already use (kafka_<domain>_<type>_<name>, lower case;
 * rates become _total counters, request times quantiles), and KafkaIQ's
 * own under kafkaiq_. Read at each collection from the broker's counters,
 * histograms and partitions. Other subsystems (the lines to other brokers,
 * the HTTP listener) add their own sources. */
#include "server/broker_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "core/arena.h"
#include "core/clock.h"
#include "proto/errors.h"
#include "replica/partition_replica.h"
#include "replica/replica_manager.h"
#include "security/sasl.h"

#define C KIQ_METRIC_COUNTER
#define G KIQ_METRIC_GAUGE

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

static void request_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
    static const double qs[] = {0.5, 0.75, 0.95, 0.99, 0.999};
    static const char *const qnames[] = {"0.5", "0.75", "0.95", "0.99", "0.999"};
    int64_t now = kiq_clock_mono_ms();
    for (size_t m = 0; m < sizeof request_times / sizeof request_times[0]; m++) {
        kiq_metric_family(o, request_times[m].name, KIQ_METRIC_SUMMARY, request_times[m].text);
        for (size_t i = 0; i < kiq_api_codec_count; i++) {
            kiq_histogram_t *h = kiq_request_stats_times(&b->stats, kiq_api_codecs[i].key, request_times[m].stage);
            if (!h) continue;
            const char *api = kiq_api_codecs[i].name;
            uint64_t in_window;
            for (size_t q = 0; q < sizeof qs / sizeof qs[0]; q++)
                kiq_metric_sample(o, "", kiq_histogram_quantile_ms(h, qs[q], now, &in_window), "request", api,
                                  "quantile", qnames[q], NULL);
            /* _sum and _count since the start, as Prometheus's rate() wants them */
            int64_t ns[KIQ_STAGE__COUNT];
            uint64_t n = kiq_request_stats_get(&b->stats, kiq_api_codecs[i].key, ns);
            kiq_metric_sample(o, "_sum", (double)ns[request_times[m].stage] / 1e6, "request", api, NULL);
            kiq_metric_sample(o, "_count", (double)n, "request", api, NULL);
        }
    }
    kiq_metric_family(o, "kafka_network_requestmetrics_requests_total", C, "requests served");
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        int64_t ns[KIQ_STAGE__COUNT];
        uint64_t n = kiq_request_stats_get(&b->stats, kiq_api_codecs[i].key, ns);
        if (n) kiq_metric_sample(o, "", (double)n, "request", kiq_api_codecs[i].name, NULL);
    }
    kiq_metric_family(o, "kafka_network_requestmetrics_requests_by_version_total", C,
                      "requests served, by API version (Kafka's RequestsPerSec version tag)");
    for (size_t i = 0; i < kiq_api_codec_count; i++)
        for (int16_t v = 0; v < KIQ_STATS_MAX_VERSION; v++) {
            uint64_t n = kiq_request_stats_version(&b->stats, kiq_api_codecs[i].key, v);
            char version[8];
            snprintf(version, sizeof version, "%d", v);
            if (n) kiq_metric_sample(o, "", (double)n, "request", kiq_api_codecs[i].name, "version", version, NULL);
        }
    kiq_metric_family(o, "kafka_network_requestmetrics_errors_total", C,
                      "error codes in responses (each partition's and topic's too), NONE included");
    for (size_t i = 0; i < kiq_api_codec_count; i++)
        for (int code = -1; code < KIQ_STATS_MAX_ERROR - 1; code++) {
            uint64_t n = kiq_request_stats_errors(&b->stats, kiq_api_codecs[i].key, code);
            if (n)
                kiq_metric_sample(o, "", (double)n, "request", kiq_api_codecs[i].name, "error", kiq_error_name(code),
                                  NULL);
        }
    kiq_metric_family(o, "kafkaiq_trailing_requests_total", C, "requests with bytes after their last field, served");
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        uint64_t bytes, n = kiq_request_stats_get_trailing(&b->stats, kiq_api_codecs[i].key, &bytes);
        if (n) kiq_metric_sample(o, "", (double)n, "request", kiq_api_codecs[i].name, NULL);
    }
}

static void topic_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
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
        {"kafka_server_brokertopicmetrics_totalproducerequests_total", "partitions of produce requests answered",
         offsetof(kiq_topic_count_t, produce_requests)},
        {"kafka_server_brokertopicmetrics_failedproducerequests_total",
         "partitions of produce requests answered with an error", offsetof(kiq_topic_count_t, failed_produce_requests)},
        {"kafka_server_brokertopicmetrics_totalfetchrequests_total",
         "partitions of fetch requests (consumers' and followers') answered", offsetof(kiq_topic_count_t, fetch_requests)},
        {"kafka_server_brokertopicmetrics_failedfetchrequests_total",
         "partitions of fetch requests answered with an error", offsetof(kiq_topic_count_t, failed_fetch_requests)},
    };
    for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
        kiq_metric_family(o, counters[c].name, C, counters[c].text);
        uint64_t all = 0;
        for (int i = 0; i < n; i++) {
            uint64_t v = *(const uint64_t *)((const char *)&t[i] + counters[c].off);
            all += v;
            kiq_metric_sample(o, "", (double)v, "topic", t[i].topic, NULL);
        }
        kiq_metric_sample(o, "", (double)all, NULL);
    }
    free(t);
    kiq_replication_bytes_t r = kiq_topic_counts_replication(b->topic_counts);
    kiq_metric_family(o, "kafka_server_brokertopicmetrics_replicationbytesin_total", C,
                      "bytes this broker appended as a follower, from its leaders");
    kiq_metric_sample(o, "", (double)r.in, NULL);
    kiq_metric_family(o, "kafka_server_brokertopicmetrics_replicationbytesout_total", C,
                      "bytes of records this broker's partitions returned to their followers' fetches");
    kiq_metric_sample(o, "", (double)r.out, NULL);
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

static const struct {
    const char *name, *text;
} log_gauges[] = {
    {"kafka_log_log_size", "bytes of the partition's log"},
    {"kafka_log_log_logendoffset", "the partition's log end offset"},
    {"kafka_log_log_logstartoffset", "the partition's log start offset"},
    {"kafka_log_log_numlogsegments", "the partition's segments"},
};

/* One partition's log figures. */
static void log_metrics(kiq_metric_out_t *o, const char *topic, int32_t p, kiq_partition_log_t *log)
{
    int64_t values[] = {(int64_t)kiq_partition_log_size(log), kiq_partition_log_end_offset(log),
                        kiq_partition_log_start_offset(log), kiq_partition_log_segments(log, NULL, 0)};
    char partition[16];
    snprintf(partition, sizeof partition, "%d", p);
    for (size_t k = 0; k < sizeof log_gauges / sizeof log_gauges[0]; k++) {
        kiq_metric_family(o, log_gauges[k].name, G, log_gauges[k].text);
        kiq_metric_sample(o, "", (double)values[k], "topic", topic, "partition", partition, NULL);
    }
}

static void partition_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
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
    /* the families in their order, the per-partition ones after them */
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) kiq_metric_family(o, gauges[g].name, G, gauges[g].text);
    int count = 0;
    kiq_topic_t **list = kiq_topics_list(b->topics, &count);
    int values[6] = {0};
    kiq_replica_view_t *v = malloc(sizeof *v);
    for (int i = 0; v && i < count; i++) {
        int64_t need = min_insync(b, list[i]);
        for (int32_t p = 0; p < list[i]->npartitions; p++) {
            kiq_partition_t *part = list[i]->partitions[p];
            kiq_partition_log_t *log = part->log;
            if (!log || !part->replica) continue;
            values[0]++;
            values[5] += kiq_partition_log_offline(log);
            kiq_partition_replica_view(part->replica, v);
            if (v->role == KIQ_REPLICA_LEADER) {
                values[1]++;
                values[2] += v->nisr < v->nreplicas;
                values[3] += v->nisr < need;
                values[4] += v->nisr == need;
            }
            log_metrics(o, list[i]->name, p, log);
        }
    }
    free(v);
    kiq_topics_list_free(list, count);
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
        kiq_metric_family(o, gauges[g].name, G, gauges[g].text);
        kiq_metric_sample(o, "", values[g], NULL);
    }
    uint64_t shrinks = 0, expands = 0;
    if (b->replicas) kiq_replica_manager_isr_changes(b->replicas, &shrinks, &expands);
    kiq_metric_family(o, "kafka_server_replicamanager_isrshrinks_total", C, "ISR shrinks of partitions led here");
    kiq_metric_sample(o, "", (double)shrinks, NULL);
    kiq_metric_family(o, "kafka_server_replicamanager_isrexpands_total", C, "ISR expansions of partitions led here");
    kiq_metric_sample(o, "", (double)expands, NULL);
    kiq_metric_family(o, "kafka_server_replicafetchermanager_maxlag", G, "largest follower lag behind a leader, in offsets");
    kiq_metric_sample(o, "", (double)(b->replicas ? kiq_replica_manager_max_lag(b->replicas) : 0), "clientId", "Replica",
                      NULL);
}

static void controller_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
    struct kiq_controller *ctl = kiq_broker_active_controller(b);
    bool active = ctl || !b->cluster; /* a standalone broker is its own controller */
    int offline = 0;
    if (ctl) {
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_controller_info_t info;
        kiq_controller_describe(ctl, &a, &info);
        for (int t = 0; t < info.ntopics; t++)
            for (int32_t p = 0; p < info.topics[t].npartitions; p++) offline += info.topics[t].partitions[p].leader < 0;
        kiq_arena_reset(&a);
    }
    kiq_metric_family(o, "kafka_controller_kafkacontroller_activecontrollercount", G,
                      "1 on the broker hosting the controller");
    kiq_metric_sample(o, "", active, NULL);
    kiq_metric_family(o, "kafka_controller_kafkacontroller_offlinepartitionscount", G, "partitions without a leader");
    kiq_metric_sample(o, "", offline, NULL);
    kiq_metric_family(o, "kafka_controller_controllerstats_uncleanleaderelections_total", C,
                      "leaders elected from outside the ISR");
    kiq_metric_sample(o, "", (double)(ctl ? kiq_controller_unclean_elections(ctl) : 0), NULL);
    uint64_t records = 0, ops = ctl ? kiq_controller_operations(ctl, &records) : 0;
    kiq_metric_family(o, "kafka_controller_kafkacontroller_eventqueueoperationsstartedcount", C,
                      "operations the active controller ran that wrote to the metadata log");
    kiq_metric_sample(o, "", (double)ops, NULL);
    kiq_metric_family(o, "kafkaiq_controller_metadata_records_total", C,
                      "metadata records the active controller wrote");
    kiq_metric_sample(o, "", (double)records, NULL);
}

static void thread_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
    kiq_metric_family(o, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent", G,
                      "share of the I/O threads' time not spent handling requests");
    int64_t up = kiq_clock_mono_ns() - b->io_started_ns;
    double busy = up > 0 && b->nio_threads > 0
                      ? (double)atomic_load(&b->io_busy_ns) / ((double)up * b->nio_threads)
                      : 0;
    kiq_metric_sample(o, "", busy < 1 ? 1 - busy : 0, NULL);
    kiq_metric_family(o, "kafka_network_socketserver_networkprocessoravgidlepercent", G,
                      "share of the processors' time spent waiting for events");
    double idle = 0;
    for (int i = 0; i < b->nprocessors; i++) idle += kiq_processor_idle_ratio(b->processors[i]);
    kiq_metric_sample(o, "", b->nprocessors ? idle / b->nprocessors : 1, NULL);
    kiq_metric_family(o, "kafka_network_requestchannel_requestqueuesize", G, "requests waiting for an I/O thread");
    kiq_metric_sample(o, "", (double)kiq_request_queue_depth(b->queue), NULL);
    kiq_purgatory_stats_t ps;
    kiq_purgatory_stats(b->purgatory, &ps);
    kiq_metric_family(o, "kafka_server_delayedoperationpurgatory_purgatorysize", G, "operations parked in the purgatory");
    for (int k = 0; k < KIQ_DELAYED__KINDS; k++)
        kiq_metric_sample(o, "", ps.waiting_by_kind[k], "delayedOperation", kiq_delayed_kind_names[k], NULL);
    kiq_fetch_sessions_stats_t fs;
    kiq_fetch_sessions_stats(b->fetch_sessions, &fs);
    kiq_metric_family(o, "kafka_server_fetchsessioncache_numincrementalfetchsessions", G,
                      "incremental fetch sessions held (KIP-227)");
    kiq_metric_sample(o, "", fs.sessions, NULL);
    kiq_metric_family(o, "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", G,
                      "partitions the incremental fetch sessions hold");
    kiq_metric_sample(o, "", (double)fs.partitions, NULL);
    kiq_metric_family(o, "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total", C,
                      "incremental fetch sessions evicted to make room for new ones");
    kiq_metric_sample(o, "", (double)fs.evictions, NULL);
}

/* The client listener's bounds, each named by the setting that bounds it. */
static void limit_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
    kiq_memory_pool_stats_t mp = {0};
    if (b->request_pool) kiq_memory_pool_stats(b->request_pool, &mp);
    kiq_metric_family(o, "kafka_network_socketserver_memorypoolused", G,
                      "bytes of requests being read and queued (queued.max.request.bytes)");
    kiq_metric_sample(o, "", (double)mp.used, NULL);
    kiq_metric_family(o, "kafka_network_socketserver_memorypoolavailable", G,
                      "bytes left of queued.max.request.bytes (-1: no bound)");
    kiq_metric_sample(o, "", (double)(mp.capacity < 0 ? -1 : mp.capacity - mp.used), NULL);
    kiq_metric_family(o, "kafkaiq_memory_pool_refused_total", C,
                      "reads put off because queued.max.request.bytes was used up");
    kiq_metric_sample(o, "", (double)mp.refused, NULL);
    int starved = 0;
    uint64_t idle = 0, slow = 0;
    for (int i = 0; i < b->nprocessors; i++) {
        kiq_processor_stats_t st;
        kiq_processor_stats(b->processors[i], &st);
        starved += st.starved;
        idle += st.closed_idle;
        slow += st.closed_slow;
    }
    kiq_metric_family(o, "kafkaiq_connections_starved", G,
                      "connections left unread until queued.max.request.bytes has room");
    kiq_metric_sample(o, "", starved, NULL);
    kiq_connection_quotas_stats_t qs = {0};
    if (b->quotas) kiq_connection_quotas_stats(b->quotas, &qs);
    kiq_metric_family(o, "kafkaiq_connections_closed_total", C, "connections the broker closed, by the limit that did it");
    kiq_metric_sample(o, "", (double)idle, "limit", "connections.max.idle.ms", NULL);
    kiq_metric_sample(o, "", (double)slow, "limit", "kafkaiq.request.read.timeout.ms", NULL);
    kiq_metric_sample(o, "", (double)qs.refused_per_ip, "limit", "max.connections.per.ip", NULL);
    kiq_metric_sample(o, "", (double)(b->acceptor ? kiq_acceptor_refused_fd_limit(b->acceptor) : 0), "limit",
                      "open files", NULL);
    kiq_metric_family(o, "kafkaiq_connections_open", G, "client connections open, of max.connections");
    kiq_metric_sample(o, "", qs.open, NULL);
}

static void health_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
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
    kiq_metric_family(o, "kafkaiq_log_damaged_partitions", G,
                      "partitions with a segment the scrubber found damaged (kafkaiq.log.scrub.interval.ms)");
    kiq_metric_sample(o, "", damaged, NULL);
    kiq_metric_family(o, "kafkaiq_log_data_loss_partitions", G,
                      "partitions that lost records they held, until acknowledged (kafkaiq verify --acknowledge)");
    kiq_metric_sample(o, "", lost, NULL);
}

static void own_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
    kiq_journeys_stats_t js = {0};
    if (b->journeys) kiq_journeys_stats(b->journeys, &js);
    kiq_metric_family(o, "kafkaiq_journeys_kept", G, "record journeys in the ring");
    kiq_metric_sample(o, "", (double)js.kept, NULL);
    kiq_metric_family(o, "kafkaiq_journeys_total", C, "record journeys begun");
    kiq_metric_sample(o, "", (double)js.recorded, NULL);
    kiq_metric_family(o, "kafkaiq_journeys_bytes", G, "memory the journey ring and its indexes take at most");
    kiq_metric_sample(o, "", (double)js.bytes, NULL);
    if (js.journal) {
        kiq_metric_family(o, "kafkaiq_journeys_journal_written_total", C, "journeys written to the on-disk journal");
        kiq_metric_sample(o, "", (double)js.journal_written, NULL);
        kiq_metric_family(o, "kafkaiq_journeys_journal_dropped_total", C,
                          "journeys the ring let go of that the journal's full queue lost");
        kiq_metric_sample(o, "", (double)js.journal_dropped, NULL);
        kiq_metric_family(o, "kafkaiq_journeys_journal_bytes", G, "the journal's files' size");
        kiq_metric_sample(o, "", (double)js.journal_bytes, NULL);
    }
    if (js.otlp) {
        kiq_metric_family(o, "kafkaiq_otlp_traces_total", C,
                          "journeys sent as OTLP traces, by outcome (exported, dropped: queue full, failed: POST)");
        kiq_metric_sample(o, "", (double)js.otlp_exported, "outcome", "exported", NULL);
        kiq_metric_sample(o, "", (double)js.otlp_dropped, "outcome", "dropped", NULL);
        kiq_metric_sample(o, "", (double)js.otlp_failed, "outcome", "failed", NULL);
    }
    kiq_metric_family(o, "kafkaiq_events_total", C, "observer points passed");
    for (int p = 0; p < KIQ__POINTS; p++)
        kiq_metric_sample(o, "", (double)kiq_event_counts_get(&b->event_counts, (enum kiq_point)p), "point",
                          kiq_point_names[p], NULL);
    kiq_metric_family(o, "kafkaiq_fetch_bytes_total", C,
                      "record bytes fetches returned: sent from the segment files with sendfile, or copied");
    kiq_metric_sample(o, "", (double)atomic_load(&b->fetch_bytes_sendfile), "mode", "sendfile", NULL);
    kiq_metric_sample(o, "", (double)atomic_load(&b->fetch_bytes_copied), "mode", "copy", NULL);
    kiq_metric_family(o, "kafkaiq_interceptor_failures_total", C,
                      "interceptor calls that raised or ran over their budget (kafkaiq.hook.max.instructions)");
    uint64_t failures = b->interceptors.ops ? b->interceptors.ops->failures(b->interceptors.ctx) : 0;
    kiq_metric_sample(o, "", (double)failures, NULL);
}

/* Kafka's socket-server-metrics authentication counts of the SASL listener */
static void sasl_metrics(kiq_broker_t *b, kiq_metric_out_t *o)
{
    static const struct {
        const char *name, *text;
    } counts[KIQ_SASL_COUNTS] = {
        [KIQ_SASL_AUTH_OK] = {"kafka_server_socket_server_metrics_successful_authentication_total",
                              "SASL authentications that succeeded"},
        [KIQ_SASL_AUTH_FAILED] = {"kafka_server_socket_server_metrics_failed_authentication_total",
                                  "SASL authentications refused"},
        [KIQ_SASL_REAUTH_OK] = {"kafka_server_socket_server_metrics_successful_reauthentication_total",
                                "SASL re-authentications (KIP-368) that succeeded"},
        [KIQ_SASL_REAUTH_FAILED] = {"kafka_server_socket_server_metrics_failed_reauthentication_total",
                                    "SASL re-authentications refused"},
    };
    for (int c = 0; c < KIQ_SASL_COUNTS; c++) {
        kiq_metric_family(o, counts[c].name, C, counts[c].text);
        kiq_metric_sample(o, "", (double)kiq_sasl_count(b->sasl, (enum kiq_sasl_count)c), NULL);
    }
}

void kiq_broker_metrics(void *src, kiq_metric_out_t *o)
{
    kiq_broker_t *b = src;
    if (b->running) {
        request_metrics(b, o);
        topic_metrics(b, o);
        partition_metrics(b, o);
        controller_metrics(b, o);
        thread_metrics(b, o);
        limit_metrics(b, o);
        health_metrics(b, o);
        if (b->sasl) sasl_metrics(b, o);
    }
    own_metrics(b, o);
}
