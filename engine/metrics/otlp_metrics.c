/* OTLP MetricsData, decoded as opentelemetry/proto/metrics/v1 numbers its
 * fields: MetricsData{resource_metrics 1}, ResourceMetrics{resource 1,
 * scope_metrics 2}, Resource{attributes 1}, ScopeMetrics{metrics 2},
 * Metric{name 1, gauge 5, sum 7}, Gauge/Sum{data_points 1},
 * NumberDataPoint{time_unix_nano 3, as_double 4, as_int 6, attributes 7},
 * KeyValue{key 1, value 2}, AnyValue{string 1, bool 2, int 3, double 4}.
 * Unknown fields are skipped, as protobuf readers do. */
#include "metrics/otlp_metrics.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct pb {
    const uint8_t *p, *end;
} pb_t;

typedef struct field {
    uint64_t num;
    int wt;
    uint64_t v; /* a varint's or fixed64's value */
    pb_t sub;   /* a length-delimited field's bytes */
} field_t;

static int varint(pb_t *b, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return kiq_error_set("otlp: truncated varint");
        uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return kiq_error_set("otlp: varint longer than 10 bytes");
}

/* The next field of b into f: 1, 0 at the end, or -1. */
static int next(pb_t *b, field_t *f)
{
    if (b->p == b->end) return 0;
    uint64_t tag, n;
    if (varint(b, &tag) != 0) return -1;
    f->num = tag >> 3;
    f->wt = (int)(tag & 7);
    if (f->num == 0) return kiq_error_set("otlp: field number 0");
    switch (f->wt) {
    case WT_VARINT:
        return varint(b, &f->v) == 0 ? 1 : -1;
    case WT_I64:
        if (b->end - b->p < 8) return kiq_error_set("otlp: truncated fixed64");
        f->v = 0;
        for (int i = 7; i >= 0; i--) f->v = f->v << 8 | b->p[i];
        b->p += 8;
        return 1;
    case WT_I32:
        if (b->end - b->p < 4) return kiq_error_set("otlp: truncated fixed32");
        b->p += 4;
        return 1;
    case WT_LEN:
        if (varint(b, &n) != 0) return -1;
        if (n > (uint64_t)(b->end - b->p)) return kiq_error_set("otlp: field %" PRIu64 " longer than its message", f->num);
        f->sub = (pb_t){b->p, b->p + n};
        b->p += n;
        return 1;
    default:
        return kiq_error_set("otlp: wire type %d not supported", f->wt);
    }
}

/* Whether f (a field this reader knows) came with the wire type it has. */
static int want(const field_t *f, int wt)
{
    return f->wt == wt ? 0 : kiq_error_set("otlp: field %" PRIu64 " has wire type %d, not %d", f->num, f->wt, wt);
}

static void copy(char *out, size_t size, pb_t s)
{
    size_t n = (size_t)(s.end - s.p);
    if (n >= size) n = size - 1;
    memcpy(out, s.p, n);
    out[n] = '\0';
}

static double as_double(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static int any_value(pb_t b, char *out, size_t size)
{
    field_t f;
    int rc;
    *out = '\0';
    while ((rc = next(&b, &f)) == 1) {
        if (f.num == 1) {
            if (want(&f, WT_LEN) != 0) return -1;
            copy(out, size, f.sub);
        } else if (f.num == 2) {
            if (want(&f, WT_VARINT) != 0) return -1;
            snprintf(out, size, "%s", f.v ? "true" : "false");
        } else if (f.num == 3) {
            if (want(&f, WT_VARINT) != 0) return -1;
            snprintf(out, size, "%" PRId64, (int64_t)f.v);
        } else if (f.num == 4) {
            if (want(&f, WT_I64) != 0) return -1;
            snprintf(out, size, "%.17g", as_double(f.v));
        }
    }
    return rc;
}

static int key_value(pb_t b, kiq_otlp_attr_t *a)
{
    field_t f;
    int rc;
    a->key[0] = a->value[0] = '\0';
    while ((rc = next(&b, &f)) == 1) {
        if (f.num == 1) {
            if (want(&f, WT_LEN) != 0) return -1;
            copy(a->key, sizeof a->key, f.sub);
        } else if (f.num == 2) {
            if (want(&f, WT_LEN) != 0 || any_value(f.sub, a->value, sizeof a->value) != 0) return -1;
        }
    }
    return rc;
}

/* A NumberDataPoint of the metric in *p (name and kind set). */
static int number_point(pb_t b, kiq_otlp_point_t *p, const kiq_otlp_sink_t *sink)
{
    field_t f;
    int rc;
    p->nattrs = 0;
    p->value = 0;
    p->time_unix_nano = 0;
    while ((rc = next(&b, &f)) == 1) {
        if (f.num == 3 || f.num == 4 || f.num == 6) {
            if (want(&f, WT_I64) != 0) return -1;
            if (f.num == 3) p->time_unix_nano = f.v;
            else p->value = f.num == 4 ? as_double(f.v) : (double)(int64_t)f.v;
        } else if (f.num == 7) {
            kiq_otlp_attr_t a;
            if (want(&f, WT_LEN) != 0 || key_value(f.sub, &a) != 0) return -1;
            if (p->nattrs < KIQ_OTLP_ATTRS) p->attrs[p->nattrs++] = a;
        }
    }
    if (rc == 0 && sink->point) sink->point(sink->ctx, p);
    return rc;
}

/* A Gauge or a Sum: its data points. */
static int number_points(pb_t b, kiq_otlp_point_t *p, const kiq_otlp_sink_t *sink)
{
    field_t f;
    int rc;
    while ((rc = next(&b, &f)) == 1)
        if (f.num == 1 && (want(&f, WT_LEN) != 0 || number_point(f.sub, p, sink) != 0)) return -1;
    return rc;
}

static int metric(pb_t b, const kiq_otlp_sink_t *sink)
{
    kiq_otlp_point_t p = {.metric = ""};
    field_t f;
    int rc;
    /* the name first, wherever it is among the fields */
    pb_t scan = b;
    while ((rc = next(&scan, &f)) == 1)
        if (f.num == 1) {
            if (want(&f, WT_LEN) != 0) return -1;
            copy(p.metric, sizeof p.metric, f.sub);
        }
    if (rc != 0) return -1;
    if (!p.metric[0]) return kiq_error_set("otlp: a metric without a name");
    while ((rc = next(&b, &f)) == 1) {
        if (f.num != 5 && f.num != 7) continue;
        p.kind = f.num == 5 ? "gauge" : "sum";
        if (want(&f, WT_LEN) != 0 || number_points(f.sub, &p, sink) != 0) return -1;
    }
    return rc;
}

static int scope_metrics(pb_t b, const kiq_otlp_sink_t *sink)
{
    field_t f;
    int rc;
    while ((rc = next(&b, &f)) == 1)
        if (f.num == 2 && (want(&f, WT_LEN) != 0 || metric(f.sub, sink) != 0)) return -1;
    return rc;
}

static int resource(pb_t b, const kiq_otlp_sink_t *sink)
{
    field_t f;
    int rc;
    while ((rc = next(&b, &f)) == 1) {
        if (f.num != 1) continue;
        kiq_otlp_attr_t a;
        if (want(&f, WT_LEN) != 0 || key_value(f.sub, &a) != 0) return -1;
        if (sink->resource) sink->resource(sink->ctx, &a);
    }
    return rc;
}

static int resource_metrics(pb_t b, const kiq_otlp_sink_t *sink)
{
    field_t f;
    int rc;
    while ((rc = next(&b, &f)) == 1) {
        if (f.num != 1 && f.num != 2) continue;
        if (want(&f, WT_LEN) != 0) return -1;
        if ((f.num == 1 ? resource(f.sub, sink) : scope_metrics(f.sub, sink)) != 0) return -1;
    }
    return rc;
}

int kiq_otlp_metrics_decode(const uint8_t *p, size_t len, const kiq_otlp_sink_t *sink)
{
    pb_t b = {p, p + len};
    field_t f;
    int rc;
    while ((rc = next(&b, &f)) == 1)
        if (f.num == 1 && (want(&f, WT_LEN) != 0 || resource_metrics(f.sub, sink) != 0)) return -1;
    return rc;
}
