/* The broker's HTTP listener (kafkaiq.http.listener=HOST:PORT; port 0 picks
 * a free one): Kafka's metrics for Prometheus at /metrics, a batch's
 * journey at /api/journey, the broker's state at /api/state, and the page
 * at /. Built on libmicrohttpd with its own polling thread; answers are
 * JSON made with jansson (http/json_views.c) or Prometheus text
 * (http/metrics_text.c), read from the broker through its thread-safe
 * calls. Bounded: connections (kafkaiq.http.max.connections: past it the
 * longest idle one is closed, so idle sockets cannot lock a scrape out),
 * memory per connection (so huge headers get 431) and an idle timeout;
 * anything but GET and HEAD gets 405, an unknown path 404, bad parameters
 * 400.
 *
 * The listener is a broker service (server/broker.h): it starts after the
 * broker and stops before it. */
#ifndef KIQ_HTTP_HTTP_SERVER_H
#define KIQ_HTTP_HTTP_SERVER_H

#include "server/broker.h"

/* Adds the listener to b when its config names one (nothing otherwise),
 * before b's first start. 0, or -1 with the reason (a bad address, out of
 * memory). */
int kiq_http_attach(kiq_broker_t *b);
/* Any thread: the port the listener is bound to, -1 when there is none or
 * it is not running. */
int kiq_http_port(const kiq_broker_t *b);

#endif
