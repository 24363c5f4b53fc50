/* GET /api/wait: a condition a test waits for without sleeping, answered
 * when it holds or when its bound passes. The connection is suspended
 * meanwhile (libmicrohttpd's suspend/resume), so the listener goes on
 * serving others; one worker per listener looks at the waiting conditions
 * every few milliseconds while there are any.
 *
 * Conditions, by query parameters: broker=ID&state=ready|running|stopped;
 * topic=T&partition=P with leader=any|ID, isr=N (exactly N in sync: the
 * ISR full, or shrunk to N), high_watermark=N or log_start_offset=N (at
 * least N, on the leader); group=G&state=S (Kafka's
 * state name, e.g. Stable); timeout_ms (default 10000). */
#ifndef KIQ_HTTP_WAIT_H
#define KIQ_HTTP_WAIT_H

#include <microhttpd.h>
#include <stdbool.h>

#include "http/views.h"

typedef struct kiq_http_waits kiq_http_waits_t;
typedef struct kiq_http_waiter kiq_http_waiter_t;

/* A listener's waits; NULL with the reason. */
kiq_http_waits_t *kiq_http_waits_new(kiq_broker_t *b);
/* Every waiter answered (503: the listener stops) and resumed; the worker
 * stopped. Before MHD_stop_daemon. */
void kiq_http_waits_stop(kiq_http_waits_t *w);
void kiq_http_waits_free(kiq_http_waits_t *w);

/* The polling thread, for a new GET /api/wait on c: true with v filled
 * when it is answered now (met, a bad condition, or no room); false when
 * c was suspended, *waiter its state until kiq_http_waiter_answer. */
bool kiq_http_wait_begin(kiq_http_waits_t *w, struct MHD_Connection *c, kiq_http_waiter_t **waiter,
                         kiq_http_view_t *v);
/* The polling thread, once c is resumed: its answer; the waiter is freed. */
void kiq_http_waiter_answer(kiq_http_waits_t *w, kiq_http_waiter_t *waiter, kiq_http_view_t *v);
/* The polling thread: c closed while waiting (or never resumed). */
void kiq_http_waiter_drop(kiq_http_waits_t *w, kiq_http_waiter_t *waiter);

#endif
