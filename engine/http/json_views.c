/* The HTTP listener's JSON answers (http/views.h), made with jansson. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "controller/metadata_cache.h"
#include "core/arena.h"
#include "core/clock.h"
#include "core/say.h"
#include "http/views.h"
#include "replica/partition_state.h"
#include "journey/journey.h"
#include "metrics/histogram.h"
#include "net/acceptor.h"
#include "net/processor.h"
#include "replica/partition_replica.h"
#include "replica/replica_manager.h"

void kiq_http_take_json(kiq_http_view_t *v, unsigned status, json_t *j)
{
    v->status = status;
    v->type = "application/json";
    v->body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!v->body) {
        static const char oom[] = "{\"error\":\"out of memory\"}";
        v->status = 500;
        v->body = strdup(oom);
    }
    v->len = v->body ? strlen(v->body) : 0;
}

void kiq_http_error(kiq_http_view_t *v, unsigned status, const char *message)
{
    kiq_http_take_json(v, status, json_pack("{s:s}", "error", message));
}

/* ---- journeys ---- */

static void put_number(void *obj, const char *name, double value)
{
    json_object_set_new(obj, name, value == (double)(int64_t)value ? json_integer((json_int_t)value) : json_real(value));
}

static void put_string(void *obj, const char *name, const char *value)
{
    json_object_set_new(obj, name, json_string(value));
}

static void put_boolean(void *obj, const char *name, bool value) { json_object_set_new(obj, name, json_boolean(value)); }

static json_t *verdict_json(const kiq_journey_verdict_t *v)
{
    json_t *isr = json_array(), *waiting = json_array();
    for (int i = 0; i < v->nisr; i++) json_array_append_new(isr, json_integer(v->isr[i]));
    for (int i = 0; i < v->nwaiting; i++) json_array_append_new(waiting, json_integer(v->waiting[i]));
    return json_pack("{s:s, s:s, s:I, s:o, s:o}", "state", v->state, "text", v->text, "high_watermark",
                     (json_int_t)v->high_watermark, "isr", isr, "waiting_for", waiting);
}

static json_t *journey_json(kiq_broker_t *b, const kiq_journey_t *jr)
{
    json_t *stages = json_array();
    for (int i = 0; i < jr->nstages; i++) {
        json_t *s = json_object();
        kiq_journey_fields_t f = {put_number, put_string, put_boolean, s};
        kiq_journey_stage_fields(jr, i, &f);
        json_array_append_new(stages, s);
    }
    json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:o}", "topic", jr->topic, "partition", jr->partition,
                          "first_offset", (json_int_t)jr->first_offset, "last_offset", (json_int_t)jr->last_offset,
                          "stages", stages);
    if (j && jr->trace[0]) json_object_set_new(j, "trace", json_string(jr->trace));
    kiq_journey_verdict_t *v = j ? malloc(sizeof *v) : NULL;
    if (v && kiq_broker_journey_verdict(b, jr, v)) json_object_set_new(j, "verdict", verdict_json(v));
    free(v);
    return j;
}

/* A whole decimal number within [min, max] from a query parameter. */
static bool parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max) return false;
    *out = v;
    return true;
}

void kiq_http_journey(kiq_broker_t *b, const char *topic, const char *partition, const char *offset, const char *trace,
                      bool latest, kiq_http_view_t *v)
{
    int64_t p = -1, off = -1;
    if (latest && (trace || partition || offset || (topic && (!*topic || strlen(topic) >= KIQ_JOURNEY_TOPIC)))) {
        kiq_http_error(v, 400, "latest takes at most a topic");
        return;
    }
    if (!latest && !trace && (!topic || !*topic || strlen(topic) >= KIQ_JOURNEY_TOPIC || !parse_int(partition, 0, INT32_MAX, &p) ||
                   !parse_int(offset, 0, INT64_MAX, &off))) {
        kiq_http_error(v, 400, "topic, partition and offset (whole numbers), or trace, are required");
        return;
    }
    if (trace && (!*trace || strlen(trace) >= KIQ_JOURNEY_TRACE)) {
        kiq_http_error(v, 400, "trace must be 1-63 characters");
        return;
    }
    if (!b->journeys) {
        kiq_http_error(v, 404, "journeys are off on this broker (kafkaiq.journey.enable=false)");
        return;
    }
    kiq_journey_t *jr = malloc(sizeof *jr);
    if (!jr) {
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    bool found = latest  ? kiq_journeys_latest(b->journeys, topic, jr)
                 : trace ? kiq_journeys_find_trace(b->journeys, trace, jr)
                         : kiq_journeys_find(b->journeys, topic, (int32_t)p, off, jr);
    if (found) {
        json_t *j = journey_json(b, jr);
        if (j) json_object_set_new(j, "broker", json_integer(b->node_id));
        kiq_http_take_json(v, 200, j);
    } else {
        kiq_http_error(v, 404, "no journey is kept for it on this broker");
    }
    free(jr);
}

/* ---- state ---- */

static json_t *ids_json(const int32_t *ids, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* A view (core/view.h) building JSON: the objects and arrays open. */
typedef struct json_view {
    json_t *open[8];
    int depth;
} json_view_t;

static void jv_put(json_view_t *j, const char *name, json_t *value)
{
    json_t *top = j->open[j->depth];
    if (json_is_array(top))
        json_array_append_new(top, value);
    else
        json_object_set_new(top, name, value);
}

static void jv_number(void *ctx, const char *name, double v)
{
    jv_put(ctx, name, v == (double)(json_int_t)v ? json_integer((json_int_t)v) : json_real(v));
}

static void jv_string(void *ctx, const char *name, const char *v) { jv_put(ctx, name, json_string(v)); }

static void jv_boolean(void *ctx, const char *name, bool v) { jv_put(ctx, name, json_boolean(v)); }

static void jv_open(void *ctx, const char *name, bool array)
{
    json_view_t *j = ctx;
    json_t *o = array ? json_array() : json_object();
    jv_put(j, name, o);
    if (j->depth + 1 < (int)(sizeof j->open / sizeof j->open[0])) j->open[++j->depth] = o;
}

static void jv_close(void *ctx)
{
    json_view_t *j = ctx;
    if (j->depth > 0) j->depth--;
}

/* The newest SEGMENTS_SHOWN segments, oldest first; segment_count says
 * how many there are. */
#define SEGMENTS_SHOWN 8
static json_t *partition_json(kiq_partition_t *p)
{
    json_view_t j = {.open = {json_object()}};
    kiq_view_t v = {jv_number, jv_string, jv_boolean, jv_open, jv_close, &j};
    kiq_partition_state_view(p, SEGMENTS_SHOWN, &v);
    return j.open[0];
}

static json_t *processor_json(kiq_processor_t *p, int id)
{
    kiq_processor_stats_t st;
    kiq_processor_stats(p, &st);
    return json_pack("{s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I}", "id", id, "connections", st.connections, "muted",
                     st.muted, "requests", (json_int_t)st.requests, "bytes_in", (json_int_t)st.bytes_in,
                     "bytes_out", (json_int_t)st.bytes_out, "idle_ns", (json_int_t)st.idle_ns, "up_ns",
                     (json_int_t)st.up_ns);
}

/* How long Produce and Fetch requests waited in the request queue:
 * {"Produce": {"count", "p50_ms", "p99_ms"}, ...} over the broker's
 * bounded histograms (those that were served). */
static json_t *queue_waits_json(kiq_broker_t *b)
{
    static const struct {
        int16_t key;
        const char *name;
    } apis[] = {{0, "Produce"}, {1, "Fetch"}};
    json_t *w = json_object();
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
        kiq_histogram_t *h = kiq_request_stats_times(&b->stats, apis[i].key, KIQ_STAGE_QUEUE);
        if (!h) continue;
        uint64_t n = 0;
        double p50 = kiq_histogram_quantile_ms(h, 0.5, &n), p99 = kiq_histogram_quantile_ms(h, 0.99, &n);
        json_object_set_new(w, apis[i].name, json_pack("{s:I, s:f, s:f}", "count", (json_int_t)n, "p50_ms", p50,
                                                       "p99_ms", p99));
    }
    return w;
}

/* The network layer, the I/O threads and the control plane, as counters
 * the page turns into rates; under b->running. */
static void network_json(kiq_broker_t *b, json_t *j)
{
    json_object_set_new(j, "acceptor", json_pack("{s:i, s:I}", "port", kiq_broker_port(b), "accepted",
                                                 (json_int_t)kiq_acceptor_accepted(b->acceptor)));
    json_t *procs = json_array();
    for (int i = 0; i < b->nprocessors; i++) json_array_append_new(procs, processor_json(b->processors[i], i));
    json_object_set_new(j, "processors", procs);
    json_object_set_new(j, "io", json_pack("{s:i, s:I, s:I}", "threads", b->nio_threads, "busy_ns",
                                           (json_int_t)atomic_load(&b->io_busy_ns), "up_ns",
                                           (json_int_t)(kiq_clock_mono_ns() - b->io_started_ns)));
    if (b->has_control_plane && b->control_processor)
        json_object_set_new(j, "control_plane",
                            json_pack("{s:i, s:I, s:o}", "port", b->control_port, "depth",
                                      (json_int_t)kiq_request_queue_depth(b->control_queue), "processor",
                                      processor_json(b->control_processor, 0)));
    if (b->replicas) {
        uint64_t shrinks = 0, expands = 0;
        kiq_replica_manager_isr_changes(b->replicas, &shrinks, &expands);
        json_object_set_new(j, "isr_changes", json_pack("{s:I, s:I, s:I}", "shrinks", (json_int_t)shrinks, "expands",
                                                       (json_int_t)expands, "max_lag",
                                                       (json_int_t)kiq_replica_manager_max_lag(b->replicas)));
    }
    if (b->controller) {
        kiq_arena_t a;
        kiq_arena_init(&a);
        kiq_controller_info_t info;
        kiq_controller_describe(b->controller, &a, &info);
        json_t *brokers = json_array();
        for (int i = 0; i < info.nbrokers; i++)
            json_array_append_new(brokers, json_pack("{s:i, s:I, s:b, s:s, s:i}", "id", info.brokers[i].id, "epoch",
                                                     (json_int_t)info.brokers[i].epoch, "fenced",
                                                     info.brokers[i].fenced, "host",
                                                     info.brokers[i].host ? info.brokers[i].host : "", "port",
                                                     info.brokers[i].port));
        json_t *leaders = json_array();
        for (int t = 0; t < info.ntopics; t++)
            for (int32_t p = 0; p < info.topics[t].npartitions; p++) {
                const kiq_controller_partition_info_t *pi = &info.topics[t].partitions[p];
                json_array_append_new(leaders, json_pack("{s:s, s:i, s:i, s:i, s:o}", "topic", info.topics[t].name,
                                                         "partition", p, "leader", pi->leader, "leader_epoch",
                                                         pi->leader_epoch, "isr", ids_json(pi->isr, pi->nisr)));
            }
        json_object_set_new(j, "controller_view",
                            json_pack("{s:I, s:o, s:o, s:I}", "metadata_offset", (json_int_t)info.metadata_offset,
                                      "brokers", brokers, "partitions", leaders, "unclean_elections",
                                      (json_int_t)kiq_controller_unclean_elections(b->controller)));
        kiq_arena_reset(&a);
    }
}

void kiq_http_state(kiq_broker_t *b, kiq_http_view_t *v)
{
    json_t *j = json_pack("{s:i, s:s, s:i, s:b, s:b}", "broker", b->node_id, "cluster_id", b->cluster_id, "port",
                          kiq_broker_port(b), "running", b->running, "cluster", b->cluster);
    if (!j) {
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    json_object_set_new(j, "controller", json_integer(b->cluster ? kiq_metadata_cache_controller(b->metadata)
                                                                 : b->node_id));
    json_object_set_new(j, "threads",
                        json_pack("{s:i, s:i}", "network", (int)kiq_config_int(b->config, KIQ_CFG_NUM_NETWORK_THREADS),
                                  "io", (int)kiq_config_int(b->config, KIQ_CFG_NUM_IO_THREADS)));
    if (b->running) network_json(b, j);
    if (b->running) {
        json_t *q = json_pack("{s:I, s:I, s:I}", "depth", (json_int_t)kiq_request_queue_depth(b->queue), "bound",
                              (json_int_t)kiq_config_int(b->config, KIQ_CFG_QUEUED_MAX_REQUESTS), "muted",
                              (json_int_t)kiq_request_queue_muted(b->queue));
        if (q) json_object_set_new(q, "waits", queue_waits_json(b));
        json_object_set_new(j, "request_queue", q);
        if (b->control_queue)
            json_object_set_new(j, "control_queue",
                                json_pack("{s:I}", "depth", (json_int_t)kiq_request_queue_depth(b->control_queue)));
        kiq_purgatory_stats_t ps;
        kiq_purgatory_stats(b->purgatory, &ps);
        json_object_set_new(j, "purgatory",
                            json_pack("{s:i, s:I, s:I, s:I}", "waiting", ps.waiting, "parked", (json_int_t)ps.parked,
                                      "tried", (json_int_t)ps.tried, "expired", (json_int_t)ps.expired));
    }
    if (b->journeys) {
        kiq_journeys_stats_t js;
        kiq_journeys_stats(b->journeys, &js);
        json_object_set_new(j, "journeys", json_pack("{s:I, s:I, s:I}", "kept", (json_int_t)js.kept, "recorded",
                                                     (json_int_t)js.recorded, "bytes", (json_int_t)js.bytes));
    }
    json_t *topics = json_array();
    int count = 0;
    kiq_topic_t **list = b->running ? kiq_topics_list(b->topics, &count) : NULL;
    for (int i = 0; i < count; i++) {
        char id[23];
        kiq_uuid_to_base64(&list[i]->id, id);
        json_t *parts = json_array();
        int32_t n = list[i]->npartitions;
        for (int32_t p = 0; p < n; p++) json_array_append_new(parts, partition_json(list[i]->partitions[p]));
        json_array_append_new(topics, json_pack("{s:s, s:s, s:o}", "name", list[i]->name, "id", id, "partitions", parts));
    }
    if (list) kiq_topics_list_free(list, count);
    json_object_set_new(j, "topics", topics);
    kiq_http_take_json(v, 200, j);
}
