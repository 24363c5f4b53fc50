/* /metrics: the broker's metrics registry (metrics/registry.h) in
 * Prometheus's text format, and /api/metrics: the same families as JSON,
 * {"families": [{"name", "type", "help", "samples": [{"labels": {...},
 * "value", "suffix"?}]}]}. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/views.h"

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

static void text_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    fprintf(ctx, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kiq_metric_type_name(type));
}

static void text_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels,
                        int nlabels, double value)
{
    FILE *f = ctx;
    fprintf(f, "%s%s", family, suffix);
    for (int i = 0; i < nlabels; i++) {
        fprintf(f, "%s%s=\"", i ? "," : "{", labels[i].name);
        label(f, labels[i].value);
        fputc('"', f);
    }
    if (nlabels) fputc('}', f);
    if (isnan(value))
        fputs(" NaN\n", f);
    else if (value == floor(value) && fabs(value) < 9.007199254740992e15)
        fprintf(f, " %.0f\n", value);
    else
        fprintf(f, " %.6g\n", value);
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
    kiq_metric_sink_t sink = {text_family, text_sample, f};
    int rc = kiq_metrics_collect(b->metrics, &sink);
    if (fclose(f) != 0 || !text || rc != 0) {
        free(text);
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    *v = (kiq_http_view_t){200, "text/plain; version=0.0.4; charset=utf-8", text, len};
}

typedef struct json_sink {
    json_t *families, *samples;
} json_sink_t;

static void json_family(void *ctx, const char *name, kiq_metric_type_t type, const char *help)
{
    json_sink_t *j = ctx;
    j->samples = json_array();
    json_array_append_new(j->families, json_pack("{s:s,s:s,s:s,s:o}", "name", name, "type", kiq_metric_type_name(type),
                                                 "help", help, "samples", j->samples));
}

static void json_sample(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels,
                        int nlabels, double value)
{
    json_sink_t *j = ctx;
    json_t *ls = json_object();
    for (int i = 0; i < nlabels; i++) json_object_set_new(ls, labels[i].name, json_string(labels[i].value));
    json_t *s = json_pack("{s:o,s:f}", "labels", ls, "value", isnan(value) ? 0 : value);
    if (*suffix) json_object_set_new(s, "suffix", json_string(suffix));
    json_array_append_new(j->samples, s);
}

void kiq_http_metrics_json(kiq_broker_t *b, kiq_http_view_t *v)
{
    json_sink_t j = {json_array(), NULL};
    kiq_metric_sink_t sink = {json_family, json_sample, &j};
    if (kiq_metrics_collect(b->metrics, &sink) != 0) {
        json_decref(j.families);
        kiq_http_error(v, 500, "out of memory");
        return;
    }
    kiq_http_take_json(v, 200, json_pack("{s:o}", "families", j.families));
}
