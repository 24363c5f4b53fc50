/* The broker's own figures, a source of its metrics registry
 * (kiq_metrics_add(b->metrics, kiq_broker_metrics, b) at new). */
#ifndef KIQ_SERVER_BROKER_METRICS_H
#define KIQ_SERVER_BROKER_METRICS_H

#include "metrics/registry.h"
#include "server/broker.h"

void kiq_broker_metrics(void *broker, kiq_metric_out_t *o);

#endif
