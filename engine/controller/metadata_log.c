/* The metadata log; see metadata_log.h. */
#include "controller/metadata_log.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "log/partition_log.h"
#include "record/batch.h"
#include "record/compression.h"

/* The implementation's state, owned by the controller thread. */
typedef struct metadata_log {
    kiq_partition_log_t *log;
} metadata_log_t;

static int log_append(void *impl, const kiq_metadata_record_t *records, size_t n, int64_t *last_offset)
{
    metadata_log_t *ml = impl;
    if (n > INT32_MAX) return kiq_error_set("%zu metadata records in one append", n);
    int64_t now = kiq_clock_wall_ms();
    kiq_batch_builder_t bb;
    kiq_batch_builder_init(&bb, KIQ_CODEC_NONE, now);
    kiq_wr_t value, batch;
    kiq_wr_init(&batch);
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        kiq_wr_init(&value);
        int erc = kiq_metadata_record_encode(&value, &records[i]);
        if (erc == 0 && value.len > INT32_MAX) erc = kiq_error_set("metadata record of %zu bytes", value.len);
        if (erc == 0) erc = kiq_batch_builder_add(&bb, NULL, -1, value.buf, (int32_t)value.len, NULL, 0, now);
        kiq_wr_free(&value);
        if (erc != 0) goto out;
    }
    if (kiq_batch_builder_finish(&bb, &batch) != 0) goto out;
    if (batch.err) {
        kiq_error_set("out of memory");
        goto out;
    }
    int64_t last;
    if (kiq_partition_log_append(ml->log, batch.buf, batch.len, 0, NULL, &last) != 0) goto out;
    /* durable before the controller acts on it */
    if (kiq_partition_log_flush(ml->log) != 0) goto out;
    *last_offset = last;
    rc = 0;
out:
    kiq_wr_free(&batch);
    kiq_batch_builder_free(&bb);
    return rc;
}

/* Puts "<context>: " in front of the reason already in the error slot
 * (which cannot be an argument of kiq_error_set itself: same buffer). */
static int add_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int add_context(const char *fmt, ...)
{
    char reason[512], context[256];
    snprintf(reason, sizeof reason, "%s", kiq_error_get());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    return kiq_error_set("%s: %s", context, reason);
}

typedef struct replay_ctx {
    kiq_metadata_replay_fn cb;
    void *ctx;
    int stopped; /* cb's non-zero result */
} replay_ctx_t;

static int replay_record(const kiq_record_t *rec, void *arg)
{
    replay_ctx_t *c = arg;
    if (!rec->value.p)
        return kiq_error_set(KIQ_METADATA_TOPIC " record at offset %lld has no value", (long long)rec->offset);
    kiq_arena_t arena;
    kiq_arena_init(&arena);
    kiq_metadata_record_t r;
    int rc = kiq_metadata_record_decode(rec->value.p, (size_t)rec->value.len, &arena, &r);
    if (rc == KIQ_METADATA_RECORD_UNKNOWN) {
        KIQ_WARN(KIQ_METADATA_TOPIC " record at offset %lld skipped: %s", (long long)rec->offset,
                 kiq_error_get());
        rc = 0;
    } else if (rc != 0) {
        add_context(KIQ_METADATA_TOPIC " record at offset %lld", (long long)rec->offset);
    } else {
        rc = c->cb(c->ctx, rec->offset, &r);
        if (rc != 0) c->stopped = rc;
    }
    kiq_arena_reset(&arena);
    return rc;
}

static int log_replay(void *impl, kiq_metadata_replay_fn cb, void *ctx)
{
    metadata_log_t *ml = impl;
    replay_ctx_t c = {.cb = cb, .ctx = ctx};
    int64_t offset = kiq_partition_log_start_offset(ml->log);
    int64_t end = kiq_partition_log_end_offset(ml->log);
    kiq_wr_t w;
    while (offset < end) {
        kiq_wr_init(&w);
        int n = kiq_partition_log_read(ml->log, offset, 1 << 20, end, &w);
        if (n <= 0 || w.err) {
            kiq_wr_free(&w);
            if (n == KIQ_LOG_OUT_OF_RANGE || n == 0 || w.err)
                kiq_error_set(n == KIQ_LOG_OUT_OF_RANGE ? "out of range" : "nothing read");
            return add_context("cannot read " KIQ_METADATA_TOPIC " at offset %lld", (long long)offset);
        }
        kiq_batch_iter_t it;
        kiq_batch_iter_init(&it, w.buf, w.len, true);
        const uint8_t *batch;
        size_t blen;
        kiq_batch_header_t h;
        int64_t next = offset;
        int rc = 0;
        while (rc == 0 && (rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
            rc = 0;
            next = kiq_batch_last_offset(&h) + 1;
            if (h.magic != KIQ_BATCH_MAGIC) {
                rc = kiq_error_set(KIQ_METADATA_TOPIC " batch at offset %lld has magic %d", (long long)h.base_offset,
                                   h.magic);
            } else if (!kiq_batch_is_control(&h)) {
                rc = kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, replay_record, &c);
            }
        }
        kiq_wr_free(&w);
        if (c.stopped) return c.stopped;
        if (rc != 0) return -1;
        if (next <= offset) /* never spin on a read that does not advance */
            return kiq_error_set(KIQ_METADATA_TOPIC " read at offset %lld does not advance", (long long)offset);
        offset = next;
    }
    return 0;
}

static void log_close(void *impl)
{
    metadata_log_t *ml = impl;
    kiq_partition_log_free(ml->log);
    free(ml);
}

static const kiq_metadata_store_ops_t log_ops = {
    .name = "metadata log",
    .append = log_append,
    .replay = log_replay,
    .close = log_close,
};

kiq_metadata_store_t *kiq_metadata_log_new(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, KIQ_METADATA_PARTITION_DIR) >= (int)sizeof path) {
        kiq_error_set("metadata log directory name too long: %s", dir);
        return NULL;
    }
    kiq_metadata_store_t *s = calloc(1, sizeof *s);
    metadata_log_t *ml = calloc(1, sizeof *ml);
    if (!s || !ml) {
        kiq_error_set("out of memory");
        goto fail;
    }
    kiq_log_config_t cfg;
    kiq_log_config_default(&cfg);
    cfg.clean_shutdown = false;
    ml->log = kiq_partition_log_open_at(path, &cfg, 0);
    if (!ml->log) goto fail;
    kiq_segment_recovery_t rec;
    kiq_partition_log_recovery(ml->log, &rec);
    if (rec.bytes_truncated)
        KIQ_WARN("%s: cut %llu bytes of torn or corrupt tail (%lld batch(es)); the log now ends at offset %lld",
                 path, (unsigned long long)rec.bytes_truncated, (long long)rec.batches_dropped,
                 (long long)kiq_partition_log_end_offset(ml->log));
    s->ops = &log_ops;
    s->impl = ml;
    return s;
fail:
    free(ml);
    free(s);
    return NULL;
}

int64_t kiq_metadata_log_end_offset(kiq_metadata_store_t *s)
{
    if (!s || s->ops != &log_ops) return -1;
    metadata_log_t *ml = s->impl;
    return kiq_partition_log_end_offset(ml->log);
}
