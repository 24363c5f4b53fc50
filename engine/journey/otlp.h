/* Journeys as OpenTelemetry traces: each produced batch's journey on its
 * leader, once its answer went out, POSTed over OTLP/HTTP in the JSON
 * encoding to <endpoint>/v1/traces (kafkaiq.otlp.endpoint, http:// only).
 * One trace per batch: a SERVER span from the request's receipt to its
 * answer's last byte, named and tagged as the OpenTelemetry messaging
 * conventions say (messaging.system=kafka, messaging.destination.name,
 * messaging.kafka.destination.partition, messaging.kafka.offset,
 * messaging.operation.type=send), and an INTERNAL span per stage from the
 * stage before to it, with the stage's text and why. When the batch's
 * first record carries a W3C traceparent header, the trace is the
 * producer's and the SERVER span the child of the producer's span.
 *
 * kiq_otlp_offer copies a journey into a bounded queue (dropped and counted
 * when full); a worker thread of the exporter's own sends the queue. Any
 * thread, unless said otherwise. */
#ifndef KIQ_JOURNEY_OTLP_H
#define KIQ_JOURNEY_OTLP_H

#include <stdbool.h>
#include <stdint.h>

#include "journey/journey.h"

typedef struct kiq_otlp kiq_otlp_t;

/* An exporter to endpoint ("http://host:port[/prefix]") for broker's
 * journeys, its sender started. NULL with the reason in the error slot
 * (an endpoint it cannot use). */
kiq_otlp_t *kiq_otlp_open(const char *endpoint, int32_t broker);
/* Sends what is queued (a bounded try), stops the sender, frees. NULL is
 * fine. Not while other threads offer. */
void kiq_otlp_close(kiq_otlp_t *o);

/* Queues a copy of jr to export; false (counted) when the queue is full. */
bool kiq_otlp_offer(kiq_otlp_t *o, const kiq_journey_t *jr);

typedef struct kiq_otlp_stats {
    uint64_t exported, dropped, failed; /* traces the receiver took; lost to a full queue; to a failed POST */
} kiq_otlp_stats_t;
void kiq_otlp_stats(kiq_otlp_t *o, kiq_otlp_stats_t *out);

/* A W3C traceparent value ("00-<32 hex>-<16 hex>-<2 hex>") into its trace
 * and parent span ids; false when it is not one. */
bool kiq_otlp_traceparent(const char *value, size_t len, uint8_t trace_id[16], uint8_t span_id[8]);

#endif
