/* KIP-714 pushes as a broker keeps them: OTLP MetricsData decoded by hand
 * (gauges and sums with double and int points, attributes of every
 * AnyValue kind, a metric whose name comes after its data, unknown fields
 * skipped), malformed payloads refused, the newest push per client
 * instance kept and shown as kafkaiq_client_* series, pushes taken at most
 * once an interval (the first after asking always), and the oldest
 * instance forgotten past KIQ_TELEMETRY_CLIENTS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics/otlp_metrics.h"
#include "server/client_telemetry.h"

/* ---- a protobuf writer for the tests' payloads ---- */

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf_t;

static void put_varint(buf_t *o, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        o->b[o->n++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
}

static void put_tag(buf_t *o, int num, int wt) { put_varint(o, (uint64_t)num << 3 | (uint64_t)wt); }

static void put_len(buf_t *o, int num, const void *p, size_t n)
{
    put_tag(o, num, 2);
    put_varint(o, n);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put_sub(buf_t *o, int num, const buf_t *sub) { put_len(o, num, sub->b, sub->n); }
static void put_str(buf_t *o, int num, const char *s) { put_len(o, num, s, strlen(s)); }

static void put_fixed64(buf_t *o, int num, uint64_t v)
{
    put_tag(o, num, 1);
    for (int i = 0; i < 8; i++) o->b[o->n++] = (uint8_t)(v >> (8 * i));
}

static void put_double(buf_t *o, int num, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_fixed64(o, num, v);
}

/* KeyValue{key, AnyValue{string}} */
static void put_attr(buf_t *o, int num, const char *key, const char *value)
{
    buf_t any = {0}, kv = {0};
    put_str(&any, 1, value);
    put_str(&kv, 1, key);
    put_sub(&kv, 2, &any);
    put_sub(o, num, &kv);
}

/* MetricsData: a resource (client_rack=r1), a gauge queue.time.avg 0.5
 * {node.id=1 (int), ok=true, topic=t} and a sum connection.creation.total
 * 7 (as_int), whose name follows its data. */
static void metrics_data(buf_t *out)
{
    buf_t resource = {0}, point = {0}, gauge = {0}, metric1 = {0}, point2 = {0}, sum = {0}, metric2 = {0},
          scope = {0}, rm = {0}, any = {0}, kv = {0};
    put_attr(&resource, 1, "client_rack", "r1");
    put_fixed64(&point, 3, 1700000000000000000ull);
    put_double(&point, 4, 0.5);
    put_tag(&any, 3, 0);
    put_varint(&any, 1);
    put_str(&kv, 1, "node.id");
    put_sub(&kv, 2, &any);
    put_sub(&point, 7, &kv);
    any.n = kv.n = 0;
    put_tag(&any, 2, 0);
    put_varint(&any, 1);
    put_str(&kv, 1, "ok");
    put_sub(&kv, 2, &any);
    put_sub(&point, 7, &kv);
    put_attr(&point, 7, "topic", "t");
    put_tag(&point, 8, 0); /* flags: unknown here, skipped */
    put_varint(&point, 0);
    put_sub(&gauge, 1, &point);
    put_str(&metric1, 1, "org.apache.kafka.producer.record.queue.time.avg");
    put_str(&metric1, 2, "a description");
    put_sub(&metric1, 5, &gauge);
    put_fixed64(&point2, 6, 7);
    put_sub(&sum, 1, &point2);
    put_tag(&sum, 3, 0); /* is_monotonic */
    put_varint(&sum, 1);
    put_sub(&metric2, 7, &sum);
    put_str(&metric2, 1, "org.apache.kafka.producer.connection.creation.total");
    put_sub(&scope, 2, &metric1);
    put_sub(&scope, 2, &metric2);
    put_sub(&rm, 1, &resource);
    put_sub(&rm, 2, &scope);
    out->n = 0;
    put_sub(out, 1, &rm);
}

typedef struct seen {
    kiq_otlp_attr_t resource[4];
    int nresource;
    kiq_otlp_point_t points[4];
    int npoints;
} seen_t;

static void on_resource(void *ctx, const kiq_otlp_attr_t *a)
{
    seen_t *s = ctx;
    if (s->nresource < 4) s->resource[s->nresource++] = *a;
}

static void on_point(void *ctx, const kiq_otlp_point_t *p)
{
    seen_t *s = ctx;
    if (s->npoints < 4) s->points[s->npoints++] = *p;
}

static void test_decode(void **state)
{
    (void)state;
    buf_t md;
    metrics_data(&md);
    seen_t s = {0};
    kiq_otlp_sink_t sink = {on_resource, on_point, &s};
    assert_int_equal(kiq_otlp_metrics_decode(md.b, md.n, &sink), 0);
    assert_int_equal(s.nresource, 1);
    assert_string_equal(s.resource[0].key, "client_rack");
    assert_string_equal(s.resource[0].value, "r1");
    assert_int_equal(s.npoints, 2);
    assert_string_equal(s.points[0].metric, "org.apache.kafka.producer.record.queue.time.avg");
    assert_string_equal(s.points[0].kind, "gauge");
    assert_true(s.points[0].value == 0.5);
    assert_true(s.points[0].time_unix_nano == 1700000000000000000ull);
    assert_int_equal(s.points[0].nattrs, 3);
    assert_string_equal(s.points[0].attrs[0].key, "node.id");
    assert_string_equal(s.points[0].attrs[0].value, "1");
    assert_string_equal(s.points[0].attrs[1].value, "true");
    assert_string_equal(s.points[0].attrs[2].value, "t");
    assert_string_equal(s.points[1].metric, "org.apache.kafka.producer.connection.creation.total");
    assert_string_equal(s.points[1].kind, "sum");
    assert_true(s.points[1].value == 7);
    assert_int_equal(kiq_otlp_metrics_decode(md.b, 0, &sink), 0); /* no metrics at all */
}

static void test_malformed(void **state)
{
    (void)state;
    buf_t md;
    metrics_data(&md);
    kiq_otlp_sink_t sink = {NULL, NULL, NULL};
    /* every cut short of the whole payload fails: each length is checked */
    for (size_t n = 1; n < md.n; n++) assert_int_equal(kiq_otlp_metrics_decode(md.b, n, &sink), -1);
    static const uint8_t group[] = {0x0b};                                  /* field 1, wire type 3 */
    static const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t too_long[] = {0x0a, 0x7f, 0x00};                   /* 127 bytes, 1 there */
    static const uint8_t field_zero[] = {0x02, 0x00};
    static const uint8_t varint_resource[] = {0x0a, 0x02, 0x08, 0x01};     /* resource as a varint */
    static const uint8_t nameless[] = {0x0a, 0x06, 0x12, 0x04, 0x12, 0x02, 0x2a, 0x00}; /* a metric, no name */
    const struct {
        const uint8_t *p;
        size_t n;
    } bad[] = {{group, sizeof group},           {long_varint, sizeof long_varint},
               {too_long, sizeof too_long},     {field_zero, sizeof field_zero},
               {varint_resource, sizeof varint_resource}, {nameless, sizeof nameless}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(kiq_otlp_metrics_decode(bad[i].p, bad[i].n, &sink), -1);
}

/* ---- the store ---- */

typedef struct text {
    char s[8192];
    size_t n;
} text_t;

static void t_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    text_t *t = ctx;
    t->n += (size_t)snprintf(t->s + t->n, sizeof t->s - t->n, "# %s %s\n", name, kiq_metric_type_name(type));
}

static void t_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels, int n,
                     double value)
{
    text_t *t = ctx;
    t->n += (size_t)snprintf(t->s + t->n, sizeof t->s - t->n, "%s%s", family, suffix);
    for (int i = 0; i < n; i++)
        t->n += (size_t)snprintf(t->s + t->n, sizeof t->s - t->n, "%s%s=\"%s\"", i ? "," : "{", labels[i].name,
                                 labels[i].value);
    t->n += (size_t)snprintf(t->s + t->n, sizeof t->s - t->n, "} %g\n", value);
}

/* The last family's name and help. */
typedef struct help {
    char name[256], help[256];
} help_t;

static void h_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    help_t *h = ctx;
    (void)type;
    snprintf(h->name, sizeof h->name, "%s", name);
    snprintf(h->help, sizeof h->help, "%s", help);
}

static void h_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels, int n,
                     double value)
{
    (void)ctx, (void)family, (void)suffix, (void)labels, (void)n, (void)value;
}

static void collect(kiq_client_telemetry_t *t, text_t *out)
{
    kiq_metrics_t *m = kiq_metrics_new();
    assert_non_null(m);
    assert_int_equal(kiq_metrics_add(m, kiq_client_telemetry_metrics, t), 0);
    out->n = 0;
    out->s[0] = '\0';
    kiq_metric_sink_t sink = {t_family, t_sample, out};
    assert_int_equal(kiq_metrics_collect(m, &sink), 0);
    kiq_metrics_remove(m, t);
    kiq_metrics_free(m);
}

/* A view counting the objects it is given at the top and their strings. */
typedef struct count_view {
    int depth, clients;
    char last_client_id[64];
} count_view_t;

static void cv_number(void *ctx, const char *name, double v) { (void)ctx, (void)name, (void)v; }
static void cv_boolean(void *ctx, const char *name, bool v) { (void)ctx, (void)name, (void)v; }
static void cv_string(void *ctx, const char *name, const char *v)
{
    count_view_t *c = ctx;
    if (c->depth == 1 && strcmp(name, "client_id") == 0) snprintf(c->last_client_id, sizeof c->last_client_id, "%s", v);
}
static void cv_open(void *ctx, const char *name, bool array)
{
    count_view_t *c = ctx;
    (void)name, (void)array;
    if (c->depth++ == 0) c->clients++;
}
static void cv_close(void *ctx) { ((count_view_t *)ctx)->depth--; }

static int count_clients(kiq_client_telemetry_t *t, const char *client_id, char *newest)
{
    count_view_t c = {0};
    kiq_view_t v = {cv_number, cv_string, cv_boolean, cv_open, cv_close, &c};
    assert_int_equal(kiq_client_telemetry_view(t, client_id, false, true, &v), 0);
    if (newest) strcpy(newest, c.last_client_id);
    return c.clients;
}

static void test_store(void **state)
{
    (void)state;
    kiq_client_telemetry_t *t = kiq_client_telemetry_new();
    assert_non_null(t);
    buf_t md;
    metrics_data(&md);
    kiq_uuid_t a = {{1}}, b = {{2}};
    assert_int_equal(kiq_client_telemetry_push(t, &a, "app", "127.0.0.1", false, md.b, md.n, 1000), 0);
    text_t out;
    collect(t, &out);
    assert_non_null(strstr(out.s, "# kafkaiq_client_producer_record_queue_time_avg gauge\n"));
    assert_non_null(strstr(out.s, "# kafkaiq_client_producer_connection_creation_total counter\n"));
    assert_non_null(strstr(out.s, "kafkaiq_client_producer_record_queue_time_avg{client_id=\"app\",client_instance_id=\""));
    assert_non_null(strstr(out.s, "\",node_id=\"1\",ok=\"true\",topic=\"t\"} 0.5\n"));
    assert_non_null(strstr(out.s, "kafkaiq_client_producer_connection_creation_total{client_id=\"app\""));

    /* a bad push leaves the last good one */
    static const uint8_t bad[] = {0x0a, 0x7f};
    assert_int_equal(kiq_client_telemetry_push(t, &a, "app", "127.0.0.1", false, bad, sizeof bad, 2000), -1);
    collect(t, &out);
    assert_non_null(strstr(out.s, "} 0.5\n"));
    /* an empty push replaces it: the newest push alone is shown */
    assert_int_equal(kiq_client_telemetry_push(t, &a, "app", "127.0.0.1", true, md.b, 0, 3000), 0);
    collect(t, &out);
    assert_null(strstr(out.s, "kafkaiq_client_"));

    assert_int_equal(kiq_client_telemetry_push(t, &b, "other", "127.0.0.2", false, md.b, md.n, 4000), 0);
    char newest[64];
    assert_int_equal(count_clients(t, NULL, newest), 2);
    assert_string_equal(newest, "app"); /* newest first: "other", then "app" */
    assert_int_equal(count_clients(t, "app", NULL), 1);
    assert_int_equal(count_clients(t, "nobody", NULL), 0);
    /* a name with a newline and a backslash: one HELP line, one family name */
    buf_t odd = {0}, point = {0}, gauge = {0}, metric = {0}, scope = {0}, rm = {0};
    put_double(&point, 4, 1);
    put_sub(&gauge, 1, &point);
    put_str(&metric, 1, "evil\n# TYPE x counter\\");
    put_sub(&metric, 5, &gauge);
    put_sub(&scope, 2, &metric);
    put_sub(&rm, 2, &scope);
    put_sub(&odd, 1, &rm);
    kiq_client_telemetry_t *t2 = kiq_client_telemetry_new();
    assert_int_equal(kiq_client_telemetry_push(t2, &a, "app", "127.0.0.1", false, odd.b, odd.n, 5000), 0);
    kiq_metrics_t *m = kiq_metrics_new();
    assert_int_equal(kiq_metrics_add(m, kiq_client_telemetry_metrics, t2), 0);
    help_t h = {0};
    kiq_metric_sink_t sink = {h_family, h_sample, &h};
    assert_int_equal(kiq_metrics_collect(m, &sink), 0);
    assert_string_equal(h.name, "kafkaiq_client_evil___TYPE_x_counter_");
    assert_null(strchr(h.help, '\n'));
    assert_null(strchr(h.help, '\\'));
    kiq_metrics_remove(m, t2);
    kiq_metrics_free(m);
    kiq_client_telemetry_free(t2);
    kiq_client_telemetry_free(t);
}

static void test_push_interval(void **state)
{
    (void)state;
    kiq_client_telemetry_t *t = kiq_client_telemetry_new();
    kiq_uuid_t id = {{7}}, unknown = {{8}};
    assert_true(kiq_client_telemetry_may_push(t, &unknown, 1000, 5000)); /* never asked here: taken */
    kiq_client_telemetry_asked(t, &id, "app", "127.0.0.1", 10000);
    assert_true(kiq_client_telemetry_may_push(t, &id, 1000, 10000));  /* the first after asking, however soon */
    assert_false(kiq_client_telemetry_may_push(t, &id, 1000, 10999)); /* within the interval */
    assert_true(kiq_client_telemetry_may_push(t, &id, 1000, 11000));
    assert_false(kiq_client_telemetry_may_push(t, &id, 1000, 11500));
    kiq_client_telemetry_asked(t, &id, "app", "127.0.0.1", 11500);
    assert_true(kiq_client_telemetry_may_push(t, &id, 1000, 11500)); /* asked again: taken at once */
    assert_false(kiq_client_telemetry_may_push(t, &id, 1000, 11501));
    kiq_client_telemetry_free(t);
}

static void test_oldest_forgotten(void **state)
{
    (void)state;
    kiq_client_telemetry_t *t = kiq_client_telemetry_new();
    buf_t md;
    metrics_data(&md);
    for (int i = 0; i <= KIQ_TELEMETRY_CLIENTS; i++) {
        kiq_uuid_t id = {{(uint8_t)(i + 1), (uint8_t)((i + 1) >> 8)}};
        char client_id[16];
        snprintf(client_id, sizeof client_id, "c%d", i);
        assert_int_equal(kiq_client_telemetry_push(t, &id, client_id, "", false, md.b, md.n, 1000 + i), 0);
    }
    assert_int_equal(count_clients(t, NULL, NULL), KIQ_TELEMETRY_CLIENTS);
    assert_int_equal(count_clients(t, "c0", NULL), 0);
    assert_int_equal(count_clients(t, "c1", NULL), 1);
    kiq_client_telemetry_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_push_interval),
        cmocka_unit_test(test_oldest_forgotten),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
