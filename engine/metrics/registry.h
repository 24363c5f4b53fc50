/* What a broker measures, from everyone who measures it: each subsystem
 * adds a source, a function that writes its figures when asked, and the
 * readers (Prometheus text at /metrics, JSON at /api/metrics, b:metrics()
 * in Lua) read them all through kiq_metrics_collect, each making its own
 * values. So a figure is written once, and the three cannot disagree.
 *
 * Sources run on the reader's thread and lock what they read themselves;
 * no lock of the registry's is held meanwhile, so a source may take locks
 * that code adding or removing other sources holds.
 * Families of one name written by several sources (one per peer channel)
 * are merged, in the order first written. Every function here is
 * callable from any thread. */
#ifndef KIQ_METRICS_REGISTRY_H
#define KIQ_METRICS_REGISTRY_H

#include <stddef.h>

typedef enum { KIQ_METRIC_COUNTER, KIQ_METRIC_GAUGE, KIQ_METRIC_SUMMARY, KIQ_METRIC_UNTYPED } kiq_metric_type_t;

/* "counter", "gauge", "summary" or "untyped", as Prometheus names them. */
const char *kiq_metric_type_name(kiq_metric_type_t t);

/* What a source writes into (valid during its call only). */
typedef struct kiq_metric_out kiq_metric_out_t;

/* Starts (or goes back to) the family name: the samples that follow are its. */
void kiq_metric_family(kiq_metric_out_t *o, const char *name, kiq_metric_type_t type, const char *help);
/* One sample of the current family: suffix "" (or a summary's "_sum",
 * "_count"), then label name and value pairs ending in NULL. */
void kiq_metric_sample(kiq_metric_out_t *o, const char *suffix, double value, ...);

typedef void (*kiq_metric_source_fn)(void *src, kiq_metric_out_t *o);

typedef struct kiq_metric_label {
    const char *name, *value;
} kiq_metric_label_t;

/* A reader: families in order, each followed by its samples. */
typedef struct kiq_metric_sink {
    void (*family)(void *ctx, const char *name, kiq_metric_type_t type, const char *help);
    void (*sample)(void *ctx, const char *family, const char *suffix, const kiq_metric_label_t *labels, int nlabels,
                   double value);
    void *ctx;
} kiq_metric_sink_t;

typedef struct kiq_metrics kiq_metrics_t;

kiq_metrics_t *kiq_metrics_new(void);
/* NULL is fine; every source must be gone first. */
void kiq_metrics_free(kiq_metrics_t *m);
/* Adds fn(src) as a source; 0, or -1 out of memory. m NULL: nothing. */
int kiq_metrics_add(kiq_metrics_t *m, kiq_metric_source_fn fn, void *src);
/* Removes src's sources; when this returns, none of them runs (it waits
 * for a collection running one: do not hold a lock src's source takes). */
void kiq_metrics_remove(kiq_metrics_t *m, void *src);
/* Calls every source and hands what they wrote to sink. 0, or -1 out of memory. */
int kiq_metrics_collect(kiq_metrics_t *m, const kiq_metric_sink_t *sink);

#endif
