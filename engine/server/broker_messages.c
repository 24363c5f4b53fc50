/* server/broker_messages.h: a partition's records, read from its log. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "core/error.h"
#include "log/partition_log.h"
#include "log/topics.h"
#include "proto/writer.h"
#include "record/batch.h"
#include "server/broker_messages.h"

#define READ_BYTES (1 << 20)

/* Whether p[0..n) is UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF) with no NUL: what JSON and the page can show as text. */
static bool is_text(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c == 0) return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC2 ? 1 : 0;
        if (k == 0 || c > 0xF4 || i + k >= n) return false;
        uint32_t cp = c & (0x3F >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return false;
            cp = cp << 6 | (p[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
        i += k + 1;
    }
    return true;
}

/* p[0..n) in base64 (OpenSSL's, as SCRAM's), NUL-ended; NULL when out of
 * memory. */
static char *base64(const uint8_t *p, size_t n)
{
    char *out = malloc(4 * ((n + 2) / 3) + 1);
    if (out) EVP_EncodeBlock((unsigned char *)out, p, (int)n);
    return out;
}

/* bytes as name (text) or name_base64; nothing when null */
static void put_bytes(const kiq_view_t *v, const char *name, const uint8_t *p, int32_t len)
{
    if (!p || len < 0) return;
    size_t n = (size_t)len;
    char *s;
    if (is_text(p, n)) {
        if (!(s = malloc(n + 1))) return;
        memcpy(s, p, n);
        s[n] = '\0';
        v->string(v->ctx, name, s);
    } else {
        char wide[64];
        snprintf(wide, sizeof wide, "%s_base64", name);
        if (!(s = base64(p, n))) return;
        v->string(v->ctx, wide, s);
    }
    free(s);
}

typedef struct walk {
    const kiq_view_t *v;
    int64_t from, upto; /* the records shown: [from, upto) */
    int left;
    int64_t next;
} walk_t;

static int record(const kiq_record_t *r, void *ctx)
{
    walk_t *w = ctx;
    if (r->offset < w->from) return 0;
    if (r->offset >= w->upto || w->left == 0) return 1;
    const kiq_view_t *v = w->v;
    v->open(v->ctx, NULL, false);
    v->number(v->ctx, "offset", (double)r->offset);
    v->number(v->ctx, "timestamp", (double)r->timestamp);
    v->string(v->ctx, "timestamp_type", kiq_batch_is_log_append_time(r->batch) ? "log_append_time" : "create_time");
    put_bytes(v, "key", r->key.p, r->key.len);
    bool cut = r->value.p && r->value.len > KIQ_MESSAGE_SHOWN;
    int32_t shown = cut ? KIQ_MESSAGE_SHOWN : r->value.len;
    /* cut text between characters, so it stays text */
    while (cut && shown > KIQ_MESSAGE_SHOWN - 4 && (r->value.p[shown] & 0xC0) == 0x80) shown--;
    put_bytes(v, "value", r->value.p, shown);
    v->number(v->ctx, "value_bytes", r->value.p ? r->value.len : 0);
    if (cut) v->boolean(v->ctx, "truncated", true);
    v->open(v->ctx, "headers", true);
    kiq_record_header_iter_t hi;
    kiq_record_header_t h;
    kiq_record_headers_init(&hi, r);
    while (kiq_record_headers_next(&hi, &h) == 1) {
        char key[256];
        size_t kn = (size_t)h.key.len < sizeof key - 1 ? (size_t)h.key.len : sizeof key - 1;
        memcpy(key, h.key.p, kn);
        key[kn] = '\0';
        v->open(v->ctx, NULL, false);
        if (is_text((const uint8_t *)key, kn)) v->string(v->ctx, "key", key);
        put_bytes(v, "value", h.value.p, h.value.len);
        v->close(v->ctx);
    }
    v->close(v->ctx);
    if (r->batch->producer_id >= 0) v->number(v->ctx, "producer_id", (double)r->batch->producer_id);
    if (kiq_batch_is_transactional(r->batch)) v->boolean(v->ctx, "transactional", true);
    v->close(v->ctx);
    w->left--;
    w->next = r->offset + 1;
    return 0;
}

/* The records of [cursor, hw) into w, a read at a time; -1 when the log
 * cannot be read. */
static int walk_log(kiq_partition_log_t *log, int64_t hw, walk_t *w)
{
    int64_t cursor = w->from;
    int rc = 0;
    while (w->left > 0 && cursor < hw) {
        kiq_wr_t buf;
        kiq_wr_init(&buf);
        int n = kiq_partition_log_read(log, cursor, READ_BYTES, hw, &buf);
        if (n == KIQ_LOG_OUT_OF_RANGE || n == 0) {
            kiq_wr_free(&buf);
            break;
        }
        if (n < 0 || buf.err) {
            kiq_wr_free(&buf);
            rc = kiq_error_set("the log of this partition cannot be read here");
            break;
        }
        kiq_batch_iter_t it;
        const uint8_t *batch;
        size_t len;
        kiq_batch_header_t h;
        int64_t before = cursor;
        kiq_batch_iter_init(&it, buf.buf, buf.len, true);
        while (w->left > 0 && kiq_batch_iter_next(&it, &batch, &len, &h) == 1) {
            int64_t last = h.magic == 2 ? kiq_batch_last_offset(&h) : h.base_offset;
            if (h.magic == 2 && !kiq_batch_is_control(&h) &&
                kiq_batch_foreach_record(batch, len, KIQ_BATCH_MAX_DECOMPRESSED, record, w) < 0) {
                rc = -1;
                break;
            }
            if (last + 1 > cursor) cursor = last + 1;
        }
        kiq_wr_free(&buf);
        if (rc || cursor == before) break;
    }
    return rc;
}

int kiq_broker_messages_view(kiq_broker_t *b, const char *topic, int32_t partition, int64_t from, int limit,
                             const kiq_view_t *v)
{
    kiq_topic_t *t = b->running ? kiq_topics_get(b->topics, KIQ_STR(topic)) : NULL;
    if (!t) return kiq_error_set("no topic %s on this broker", topic);
    int rc = -1;
    kiq_partition_log_t *log = NULL;
    if (partition < 0 || partition >= t->npartitions)
        kiq_error_set("topic %s has no partition %d", topic, partition);
    else if (!(log = atomic_load(&t->partitions[partition]->log)))
        kiq_error_set("%s-%d is not hosted on this broker", topic, partition);
    else if (kiq_partition_log_offline(log))
        kiq_error_set("%s-%d is in an offline log directory", topic, partition);
    else
        rc = 0;
    if (rc == 0) {
        int64_t start = kiq_partition_log_start_offset(log), hw = kiq_partition_log_high_watermark(log);
        if (from < 0) from = hw - limit;
        if (from < start) from = start;
        v->string(v->ctx, "topic", topic);
        v->number(v->ctx, "partition", partition);
        v->number(v->ctx, "log_start_offset", (double)start);
        v->number(v->ctx, "high_watermark", (double)hw);
        v->open(v->ctx, "messages", true);
        walk_t w = {v, from, hw, limit, from};
        rc = walk_log(log, hw, &w);
        v->close(v->ctx);
        v->number(v->ctx, "next_offset", (double)w.next);
    }
    kiq_topic_unref(t);
    return rc;
}
