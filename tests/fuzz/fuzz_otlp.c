/* libFuzzer target: what a client sends that the broker reads as
 * OpenTelemetry. Byte 0 picks: even, the rest is a KIP-714 push's
 * MetricsData (protobuf, decoded by hand: every name, value and attribute
 * handed to the sink must be a string that ends inside its field); odd,
 * the rest is a W3C traceparent record header's value, which must give ids
 * only for the shapes it has. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journey/otlp.h"
#include "metrics/otlp_metrics.h"

static void check_attr(const kiq_otlp_attr_t *a)
{
    if (!memchr(a->key, 0, sizeof a->key) || !memchr(a->value, 0, sizeof a->value)) abort();
}

static void on_resource(void *ctx, const kiq_otlp_attr_t *a)
{
    (void)ctx;
    check_attr(a);
}

static void on_point(void *ctx, const kiq_otlp_point_t *p)
{
    (void)ctx;
    if (!memchr(p->metric, 0, sizeof p->metric) || !p->kind || p->nattrs < 0 || p->nattrs > KIQ_OTLP_ATTRS)
        abort();
    for (int i = 0; i < p->nattrs; i++) check_attr(&p->attrs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (data[0] % 2 == 0) {
        kiq_otlp_sink_t sink = {on_resource, on_point, NULL};
        kiq_otlp_metrics_decode(data + 1, size - 1, &sink);
        return 0;
    }
    uint8_t trace[16], span[8];
    /* version 00's shape, 55 characters; a later version's no shorter */
    const char *v = (const char *)data + 1;
    size_t len = size - 1;
    if (kiq_otlp_traceparent(v, len, trace, span) && (len < 55 || (v[0] == '0' && v[1] == '0' && len != 55)))
        abort();
    return 0;
}
