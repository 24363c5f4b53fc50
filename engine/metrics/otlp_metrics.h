/* The part of OpenTelemetry's MetricsData (protobuf, as KIP-714 clients
 * push it) a broker shows: each gauge's and sum's data points, with their
 * metric name, attributes and value; the resource's attributes beside.
 * Written by hand over protobuf's wire format (a small subset); every
 * length is checked against what is left. Stateless: any thread. */
#ifndef KIQ_METRICS_OTLP_METRICS_H
#define KIQ_METRICS_OTLP_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Longer names and values are cut to fit, NUL-terminated. */
#define KIQ_OTLP_NAME 128
#define KIQ_OTLP_VALUE 96
/* Attributes past this many on a point are dropped. */
#define KIQ_OTLP_ATTRS 6

typedef struct kiq_otlp_attr {
    char key[KIQ_OTLP_NAME];
    char value[KIQ_OTLP_VALUE]; /* strings as they are; numbers and bools printed */
} kiq_otlp_attr_t;

typedef struct kiq_otlp_point {
    char metric[KIQ_OTLP_NAME];
    const char *kind; /* "gauge" or "sum" */
    kiq_otlp_attr_t attrs[KIQ_OTLP_ATTRS];
    int nattrs;
    double value;
    uint64_t time_unix_nano;
} kiq_otlp_point_t;

typedef struct kiq_otlp_sink {
    /* each of the resources' attributes, then each data point (histograms,
     * summaries and exponential histograms are skipped) */
    void (*resource)(void *ctx, const kiq_otlp_attr_t *a);
    void (*point)(void *ctx, const kiq_otlp_point_t *p);
    void *ctx;
} kiq_otlp_sink_t;

/* Walks MetricsData p[0..len) into sink. 0, or -1 with kiq_error_set when
 * it is no valid protobuf of that shape (what sink was given stays given). */
int kiq_otlp_metrics_decode(const uint8_t *p, size_t len, const kiq_otlp_sink_t *sink);

#endif
