/* What the HTTP listener answers (http/http_server.h), made on its thread
 * from the broker's thread-safe calls. Each fills a view: the status,
 * the content type and a malloc'd body the listener hands on. */
#ifndef KIQ_HTTP_VIEWS_H
#define KIQ_HTTP_VIEWS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/view.h"

#include "server/broker.h"

typedef struct kiq_http_view {
    unsigned status;
    const char *type;
    char *body; /* malloc'd */
    size_t len;
} kiq_http_view_t;

/* The view of j (taken: freed here) as compact JSON with status; 500 when
 * it cannot be made. */
void kiq_http_take_json(kiq_http_view_t *v, unsigned status, json_t *j);
/* The JSON object build fills through a view (core/view.h); NULL when it
 * fails (-1, the reason in kiq_error_get) or out of memory. */
json_t *kiq_http_json_of(int (*build)(void *arg, const kiq_view_t *v), void *arg);
/* The control API (http/control.c): the routes that change the broker or
 * the process, or wait for them. Whether url is one of them; its answer
 * in v (body: what a POST sent, NUL-terminated, else NULL). */
bool kiq_http_control_path(const char *url);
void kiq_http_control(kiq_broker_t *b, const char *method, const char *url, const char *body, kiq_http_view_t *v);
/* {"error": message} with status. */
void kiq_http_error(kiq_http_view_t *v, unsigned status, const char *message);
/* The broker's metrics registry in Prometheus text format, and as JSON
 * (http/metrics_text.c). */
void kiq_http_metrics(kiq_broker_t *b, kiq_http_view_t *v);
void kiq_http_metrics_json(kiq_broker_t *b, kiq_http_view_t *v);
/* The broker's state as JSON: topics and partitions (offsets, segments,
 * replication), queues, threads, purgatory, journeys. */
void kiq_http_state(kiq_broker_t *b, kiq_http_view_t *v);
/* This broker's part of a batch's journey as JSON, by topic, partition and
 * offset, by trace id, or the newest batch led here (latest, of topic if
 * given): 400 for bad or missing parameters, 404 when no journey is kept
 * for it (or journeys are off). */
void kiq_http_journey(kiq_broker_t *b, const char *topic, const char *partition, const char *offset, const char *trace,
                      bool latest, kiq_http_view_t *v);

/* /api/clients (http/clients_view.c): what clients pushed (KIP-714), of
 * client_id only unless NULL or empty. */
void kiq_http_clients(kiq_broker_t *b, const char *client_id, kiq_http_view_t *v);
/* Sets out's "client_telemetry" to the newest push summary of the client
 * that produced journey jr, when one is kept. */
void kiq_http_journey_client(kiq_broker_t *b, const kiq_journey_t *jr, json_t *out);

/* The live page's files (http/page/), built into the binary. */
typedef struct kiq_http_asset {
    const char *path, *type;
    const char *body;
    const size_t *len;
} kiq_http_asset_t;
/* The asset served at path, or NULL. */
const kiq_http_asset_t *kiq_http_asset(const char *path);

#endif
