/* The API surface's lookups, and the surface a broker serves (admission
 * and dispatch): the rows themselves (what each listener
 * serves, at which versions, with which handler) are generated from
 * engine/api/surface.lua and the schemas into build/gen/api/surface.c.
 * Immutable; read by any thread. */
#include "api/api.h"
#include "core/say.h"

const kiq_api_row_t *kiq_api_row(int16_t api_key, int listener)
{
    for (size_t i = 0; i < kiq_api_nrows; i++)
        if (kiq_api_rows[i].key == api_key) return kiq_api_rows[i].planes & (1 << listener) ? &kiq_api_rows[i] : NULL;
    return NULL;
}

int16_t kiq_api_row_min(const kiq_api_row_t *row, const kiq_api_codec_t *c)
{
    return row->min >= 0 ? row->min : c->min_version;
}

int16_t kiq_api_row_advertised_min(const kiq_api_row_t *row, const kiq_api_codec_t *c)
{
    return row->advertised_min >= 0 ? row->advertised_min : kiq_api_row_min(row, c);
}

bool kiq_api_row_serves(const kiq_api_row_t *row, const kiq_api_codec_t *c, int16_t version)
{
    return version >= kiq_api_row_min(row, c) && version <= c->max_version;
}

/* Processor thread: refuse what Kafka refuses before queueing. */
static int admit(kiq_request_t *r)
{
    const kiq_api_codec_t *c = kiq_api_codec(r->header.api_key);
    const kiq_api_row_t *row = c ? kiq_api_row(r->header.api_key, r->listener) : NULL;
    if (!row) {
        KIQ_WARN_LIMITED("connection %s: unknown api key %d (version %d, correlation id %d); closing",
                         r->peer, r->header.api_key, r->header.api_version, r->header.correlation_id);
        return -1;
    }
    int16_t v = r->header.api_version;
    if (!kiq_api_row_serves(row, c, v) && c->key != KIQ_API_API_VERSIONS) {
        KIQ_WARN_LIMITED("connection %s: unsupported %s version %d (supported %d-%d); closing", r->peer,
                         c->name, v, kiq_api_row_min(row, c), c->max_version);
        return -1;
    }
    r->codec = c;
    return 0;
}

const kiq_broker_surface_t kiq_api_surface = {admit, kiq_api_handle};
