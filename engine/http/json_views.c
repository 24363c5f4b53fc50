/* The HTTP listener's JSON answers (http/views.h), made with jansson. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "controller/metadata_cache.h"
#include "core/arena.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "http/views.h"
#include "server/broker_state.h"
#include "server/broker_config_view.h"
#include "server/broker_messages.h"
#include "server/recent_events.h"
#include "group/group_coordinator.h"
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

/* ---- a topic's messages, groups, configs ---- */

typedef struct messages_args {
    kiq_broker_t *b;
    const char *topic;
    int32_t partition;
    int64_t offset;
    int limit;
} messages_args_t;

static int build_messages(void *arg, const kiq_view_t *view)
{
    messages_args_t *a = arg;
    return kiq_broker_messages_view(a->b, a->topic, a->partition, a->offset, a->limit, view);
}

void kiq_http_messages(kiq_broker_t *b, const char *topic, const char *partition, const char *offset,
                       const char *limit, kiq_http_view_t *v)
{
    int64_t p = -1, off = -1, n = 20;
    if (!topic || !*topic || strlen(topic) >= KIQ_RECENT_TOPIC || !parse_int(partition, 0, INT32_MAX, &p) ||
        (offset && !parse_int(offset, 0, INT64_MAX, &off)) || (limit && !parse_int(limit, 1, KIQ_MESSAGES_MAX, &n))) {
        kiq_http_error(v, 400, "topic and partition are required; offset and limit (1-100) are whole numbers");
        return;
    }
    messages_args_t a = {b, topic, (int32_t)p, off, (int)n};
    kiq_error_clear();
    json_t *j = kiq_http_json_of(build_messages, &a);
    if (j) kiq_http_take_json(v, 200, j);
    else kiq_http_error(v, 404, *kiq_error_get() ? kiq_error_get() : "out of memory");
}

void kiq_http_groups(kiq_broker_t *b, kiq_http_view_t *v)
{
    json_t *list = json_array();
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_group_info_t *gs = NULL;
    int n = b->running && b->groups ? kiq_group_coordinator_snapshot(b->groups, &a, &gs) : 0;
    for (int i = 0; list && i < n; i++) {
        const kiq_group_info_t *g = &gs[i];
        json_t *members = json_array(), *offsets = json_array();
        for (int k = 0; k < g->nmembers; k++) {
            const kiq_group_info_member_t *m = &g->members[k];
            json_array_append_new(members, json_pack("{s:s?, s:s?, s:s?}", "member_id", m->id, "client_id", m->client_id,
                                                     "client_host", m->client_host));
        }
        for (int k = 0; k < g->noffsets; k++) {
            const kiq_group_info_offset_t *o = &g->offsets[k];
            json_array_append_new(offsets, json_pack("{s:s, s:i, s:I, s:I}", "topic", o->topic, "partition",
                                                     o->partition, "offset", (json_int_t)o->offset, "commit_ts_ms",
                                                     (json_int_t)o->commit_ts_ms));
        }
        json_array_append_new(list, json_pack("{s:s, s:s?, s:s?, s:s?, s:i, s:o, s:o}", "group_id", g->id, "state",
                                              g->state, "protocol_type", g->protocol_type, "protocol", g->protocol,
                                              "generation", g->generation, "members", members, "offsets", offsets));
    }
    kiq_arena_reset(&a);
    kiq_http_take_json(v, 200, list ? json_pack("{s:i, s:o}", "broker", b->node_id, "groups", list) : NULL);
}

typedef struct configs_args {
    kiq_broker_t *b;
    const char *topic;
} configs_args_t;

static int build_configs(void *arg, const kiq_view_t *view)
{
    configs_args_t *a = arg;
    return kiq_broker_configs_view(a->b, a->topic, view);
}

void kiq_http_configs(kiq_broker_t *b, const char *topic, kiq_http_view_t *v)
{
    if (topic && (!*topic || strlen(topic) >= KIQ_RECENT_TOPIC)) {
        kiq_http_error(v, 400, "topic must be 1-249 characters");
        return;
    }
    configs_args_t a = {b, topic};
    kiq_error_clear();
    json_t *j = kiq_http_json_of(build_configs, &a);
    if (j) kiq_http_take_json(v, 200, j);
    else kiq_http_error(v, 404, *kiq_error_get() ? kiq_error_get() : "out of memory");
}

/* ---- recent events ---- */

void kiq_http_events(kiq_broker_t *b, const char *after, kiq_http_view_t *v)
{
    int64_t from = 0;
    if (after && !parse_int(after, 0, INT64_MAX, &from)) {
        kiq_http_error(v, 400, "after must be a whole number (an event's seq)");
        return;
    }
    kiq_recent_event_t *got = malloc(KIQ_RECENT_EVENTS * sizeof *got);
    json_t *list = json_array();
    if (!got || !list) {
        free(got);
        json_decref(list);
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    int n = kiq_recent_events_since(b->recent_events, (uint64_t)from, got, KIQ_RECENT_EVENTS);
    for (int i = 0; i < n; i++) {
        const kiq_recent_event_t *e = &got[i];
        json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:i, s:i, s:i, s:I, s:I}", "seq", (json_int_t)e->seq, "wall_ms",
                              (json_int_t)e->wall_ms, "kind", kiq_point_names[e->point], "topic", e->topic, "partition",
                              e->partition, "peer", e->peer, "isr_size", e->isr_size, "follower_leo",
                              (json_int_t)e->follower_leo, "leader_leo", (json_int_t)e->leader_leo);
        if (o && e->point == KIQ_POINT_ISR_SHRUNK) json_object_set_new(o, "lagged", json_boolean(e->lagged));
        if (o) json_array_append_new(list, o);
    }
    free(got);
    kiq_http_take_json(v, 200, json_pack("{s:i, s:I, s:o}", "broker", b->node_id, "newest",
                                         (json_int_t)kiq_recent_events_newest(b->recent_events), "events", list));
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
