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
#include "server/broker_state.h"
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
    if (j) json_object_set_new(j, "process", json_string(kiq_journey_process()));
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
        if (j) kiq_http_journey_client(b, jr, j);
        kiq_http_take_json(v, 200, j);
    } else {
        kiq_http_error(v, 404, "no journey is kept for it on this broker");
    }
    free(jr);
}

/* ---- state ---- */

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

json_t *kiq_http_json_of(int (*build)(void *arg, const kiq_view_t *v), void *arg)
{
    json_view_t j = {.open = {json_object()}};
    if (!j.open[0]) return NULL;
    kiq_view_t view = {jv_number, jv_string, jv_boolean, jv_open, jv_close, &j};
    if (build(arg, &view) != 0) {
        json_decref(j.open[0]);
        return NULL;
    }
    return j.open[0];
}

/* The newest SEGMENTS_SHOWN segments, oldest first; segment_count says
 * how many there are. */
#define SEGMENTS_SHOWN 8

void kiq_http_state(kiq_broker_t *b, kiq_http_view_t *v)
{
    json_view_t j = {.open = {json_object()}};
    if (!j.open[0]) {
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    kiq_view_t view = {jv_number, jv_string, jv_boolean, jv_open, jv_close, &j};
    kiq_broker_state_view(b, SEGMENTS_SHOWN, &view);
    kiq_http_take_json(v, 200, j.open[0]);
}
