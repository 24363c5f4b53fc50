/* ApiVersions: the APIs this broker serves and their version ranges, and
 * (v3+) the feature flags: the levels this build supports and those
 * finalized for the cluster (server/broker_features.h), which Kafka's
 * admin reads as DescribeFeatures. */
#include "api/api.h"
#include "server/broker_features.h"

static void features(kiq_broker_t *b, kiq_request_t *r, kiq_api_versions_response_t *out)
{
    kiq_features_t fin;
    kiq_broker_features(b, &fin);
    out->supported_features = kiq_arena_calloc(&r->arena, KIQ_FEATURE__COUNT, sizeof *out->supported_features);
    out->finalized_features = kiq_arena_calloc(&r->arena, KIQ_FEATURE__COUNT, sizeof *out->finalized_features);
    for (int i = 0; i < KIQ_FEATURE__COUNT; i++) {
        const kiq_feature_def_t *d = &kiq_feature_defs[i];
        kiq_api_versions_response_supported_features_t *s = &out->supported_features[out->supported_features_n++];
        kiq_api_versions_response_supported_features_init(s);
        s->name = KIQ_STR(d->name);
        s->min_version = d->min;
        s->max_version = d->max;
        /* level 0 is "not finalized": left out, as Kafka does */
        if (fin.level[i] == 0) continue;
        kiq_api_versions_response_finalized_features_t *f = &out->finalized_features[out->finalized_features_n++];
        kiq_api_versions_response_finalized_features_init(f);
        f->name = KIQ_STR(d->name);
        f->min_version_level = fin.level[i];
        f->max_version_level = fin.level[i];
    }
    out->finalized_features_epoch = fin.epoch;
}

int kiq_api_api_versions_handle(kiq_broker_t *b, kiq_request_t *r, const void *req, void *resp)
{
    kiq_api_versions_response_t *out = resp;
    const kiq_api_codec_t *self = r->codec;
    int16_t v = r->header.api_version;
    if (v < self->min_version || v > self->max_version) out->error_code = KIQ_ERR_UNSUPPORTED_VERSION;
    out->api_keys = kiq_arena_calloc(&r->arena, kiq_api_codec_count, sizeof *out->api_keys);
    out->api_keys_n = 0;
    /* in key order, as Kafka lists them */
    for (size_t i = 0; i < kiq_api_codec_count; i++) {
        const kiq_api_codec_t *c = &kiq_api_codecs[i];
        const kiq_api_row_t *row = kiq_api_row(c->key, r->listener);
        if (!row) continue;
        kiq_api_versions_response_api_keys_t *k = &out->api_keys[out->api_keys_n++];
        kiq_api_versions_response_api_keys_init(k);
        k->api_key = c->key;
        k->min_version = kiq_api_row_advertised_min(row, c);
        k->max_version = c->max_version;
    }
    if (!out->error_code && v >= 3) features(b, r, out);
    return KIQ_HANDLER_RESPOND;
}
