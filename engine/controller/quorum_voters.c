/* VotersRecord control batches; see quorum_voters.h. */
#include "controller/quorum_voters.h"

#include <stdio.h>
#include <string.h>

#include "core/arena.h"
#include "core/clock.h"
#include "core/error.h"
#include "proto/messages.h"
#include "proto/reader.h"
#include "record/batch.h"
#include "record/compression.h"

/* The control record key: version 0, then the type. */
static void control_key(kiq_wr_t *w, int16_t type)
{
    kiq_wr_i16(w, 0);
    kiq_wr_i16(w, type);
}

int kiq_quorum_voters_add(kiq_batch_builder_t *bb, const kiq_raft_voter_set_t *set, const kiq_quorum_endpoint_t *eps,
                          bool version, int64_t now)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_voters_record_t m;
    kiq_voters_record_init(&m);
    m.voters_n = set->n;
    m.voters = kiq_arena_calloc(&a, (size_t)(set->n ? set->n : 1), sizeof *m.voters);
    for (int i = 0; i < set->n; i++) {
        kiq_voters_record_voters_t *v = &m.voters[i];
        kiq_voters_record_voters_init(v);
        v->voter_id = set->voters[i].id;
        memcpy(v->voter_directory_id.b, set->voters[i].dir, sizeof v->voter_directory_id.b);
        v->kraft_version_feature.min_supported_version = 0;
        v->kraft_version_feature.max_supported_version = 1;
        if (eps[i].port > 0) {
            v->endpoints_n = 1;
            v->endpoints = kiq_arena_calloc(&a, 1, sizeof *v->endpoints);
            kiq_voters_record_voters_endpoints_init(v->endpoints);
            v->endpoints->name = (kiq_str_t){ eps[i].name, (int32_t)strlen(eps[i].name) };
            v->endpoints->host = (kiq_str_t){ eps[i].host, (int32_t)strlen(eps[i].host) };
            v->endpoints->port = (uint16_t)eps[i].port;
        }
    }
    kiq_wr_t vkey, value, kkey, kvalue;
    kiq_wr_init(&vkey);
    kiq_wr_init(&value);
    kiq_wr_init(&kkey);
    kiq_wr_init(&kvalue);
    control_key(&vkey, KIQ_CONTROL_KRAFT_VOTERS);
    kiq_voters_record_encode(&value, 0, &m);
    control_key(&kkey, KIQ_CONTROL_KRAFT_VERSION);
    kiq_k_raft_version_record_t kv;
    kiq_k_raft_version_record_init(&kv);
    kv.kraft_version = 1;
    kiq_k_raft_version_record_encode(&kvalue, 0, &kv);
    int rc = 0;
    if (vkey.err || value.err || kkey.err || kvalue.err ||
        (version &&
         kiq_batch_builder_add(bb, kkey.buf, (int32_t)kkey.len, kvalue.buf, (int32_t)kvalue.len, NULL, 0, now) != 0) ||
        kiq_batch_builder_add(bb, vkey.buf, (int32_t)vkey.len, value.buf, (int32_t)value.len, NULL, 0, now) != 0)
        rc = kiq_error_set("a VotersRecord cannot be built");
    kiq_wr_free(&vkey);
    kiq_wr_free(&value);
    kiq_wr_free(&kkey);
    kiq_wr_free(&kvalue);
    kiq_arena_reset(&a);
    return rc;
}

int kiq_quorum_voters_batch(const kiq_raft_voter_set_t *set, const kiq_quorum_endpoint_t *eps, bool bootstrap,
                            kiq_wr_t *out, int32_t *count)
{
    int64_t now = kiq_clock_wall_ms();
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now);
    bb.control = true;
    int rc = kiq_quorum_voters_add(&bb, set, eps, bootstrap, now);
    if (rc == 0 && (kiq_batch_builder_finish(&bb, out) != 0 || out->err))
        rc = kiq_error_set("a VotersRecord batch cannot be built");
    *count = bootstrap ? 2 : 1;
    kiq_batch_builder_free(&bb);
    return rc;
}

typedef struct decode_ctx {
    kiq_raft_voter_set_t *set;
    kiq_quorum_endpoint_t *eps;
    bool found;
} decode_ctx_t;

static int voters_record(const kiq_record_t *rec, void *arg)
{
    decode_ctx_t *c = arg;
    kiq_rd_t k;
    kiq_rd_init(&k, rec->key.p, rec->key.p ? (size_t)rec->key.len : 0);
    int16_t kversion = kiq_rd_i16(&k), type = kiq_rd_i16(&k);
    if (k.err || kversion != 0 || type != KIQ_CONTROL_KRAFT_VOTERS)
        return 0;
    if (!rec->value.p)
        return kiq_error_set("a VotersRecord at offset %lld has no value", (long long)rec->offset);
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_rd_t r;
    kiq_rd_init(&r, rec->value.p, (size_t)rec->value.len);
    kiq_voters_record_t m;
    int rc = kiq_voters_record_decode(&r, 0, &a, &m);
    if (rc != 0 || r.err || m.voters_n < 0 || m.voters_n > KIQ_RAFT_MAX_VOTERS) {
        rc = kiq_error_set("the VotersRecord at offset %lld does not decode (or has over %d voters)",
                           (long long)rec->offset, KIQ_RAFT_MAX_VOTERS);
    } else {
        c->found = true;
        c->set->n = m.voters_n;
        for (int i = 0; i < m.voters_n; i++) {
            const kiq_voters_record_voters_t *v = &m.voters[i];
            c->set->voters[i].id = v->voter_id;
            memcpy(c->set->voters[i].dir, v->voter_directory_id.b, sizeof c->set->voters[i].dir);
            kiq_quorum_endpoint_t *e = &c->eps[i];
            memset(e, 0, sizeof *e);
            if (v->endpoints_n > 0) {
                snprintf(e->name, sizeof e->name, "%.*s", (int)v->endpoints->name.len, v->endpoints->name.p);
                snprintf(e->host, sizeof e->host, "%.*s", (int)v->endpoints->host.len, v->endpoints->host.p);
                e->port = v->endpoints->port;
            }
        }
    }
    kiq_arena_reset(&a);
    return rc;
}

int kiq_quorum_voters_decode(const uint8_t *batch, size_t len, kiq_raft_voter_set_t *set,
                             kiq_quorum_endpoint_t *eps)
{
    kiq_batch_header_t h;
    if (len < KIQ_BATCH_HEADER_SIZE || kiq_batch_header_parse(batch, len, &h) != 0)
        return kiq_error_set("not a record batch");
    if (!kiq_batch_is_control(&h))
        return 0;
    decode_ctx_t c = { set, eps, false };
    if (kiq_batch_foreach_record(batch, len, KIQ_BATCH_MAX_DECOMPRESSED, voters_record, &c) != 0)
        return -1;
    return c.found ? 1 : 0;
}
