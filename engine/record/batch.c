#include "record/batch.h"

#include <stdlib.h>

#include "core/error.h"
#include "record/compression.h"
#include "record/crc32c.h"

/* Offsets and timestamps add a delta to a base taken from the wire; wrap
 * instead of overflowing (undefined) when a hostile batch asks for it. */
static inline int64_t add_wrap(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

static uint32_t batch_crc(const uint8_t *p, size_t len)
{
    return kiq_crc32c(0, p + KIQ_BATCH_POS_ATTRIBUTES, len - KIQ_BATCH_POS_ATTRIBUTES);
}

int kiq_batch_header_parse(const uint8_t *p, size_t len, kiq_batch_header_t *h)
{
    memset(h, 0, sizeof *h);
    h->magic = -1;
    if (len < KIQ_BATCH_POS_MAGIC + 1)
        return kiq_error_set("record batch of %zu bytes is too short to hold a magic byte", len);
    h->base_offset = (int64_t)kiq_be64(p + KIQ_BATCH_POS_BASE_OFFSET);
    h->batch_length = (int32_t)kiq_be32(p + KIQ_BATCH_POS_LENGTH);
    h->magic = (int8_t)p[KIQ_BATCH_POS_MAGIC];
    if (h->magic != KIQ_BATCH_MAGIC) {
        /* Message format v0/v1: offset, size, crc, magic, attributes. */
        h->crc = kiq_be32(p + 12);
        if (len > 17) h->attributes = p[17];
        return kiq_error_set("message format v%d at offset %lld is not a v2 record batch", h->magic,
                             (long long)h->base_offset);
    }
    if (len < KIQ_BATCH_HEADER_SIZE)
        return kiq_error_set("record batch of %zu bytes is shorter than the %d-byte v2 header", len,
                             KIQ_BATCH_HEADER_SIZE);
    h->partition_leader_epoch = (int32_t)kiq_be32(p + KIQ_BATCH_POS_LEADER_EPOCH);
    h->crc = kiq_be32(p + KIQ_BATCH_POS_CRC);
    h->attributes = (int16_t)kiq_be16(p + KIQ_BATCH_POS_ATTRIBUTES);
    h->last_offset_delta = (int32_t)kiq_be32(p + KIQ_BATCH_POS_LAST_OFFSET_DELTA);
    h->base_timestamp = (int64_t)kiq_be64(p + KIQ_BATCH_POS_BASE_TIMESTAMP);
    h->max_timestamp = (int64_t)kiq_be64(p + KIQ_BATCH_POS_MAX_TIMESTAMP);
    h->producer_id = (int64_t)kiq_be64(p + KIQ_BATCH_POS_PRODUCER_ID);
    h->producer_epoch = (int16_t)kiq_be16(p + KIQ_BATCH_POS_PRODUCER_EPOCH);
    h->base_sequence = (int32_t)kiq_be32(p + KIQ_BATCH_POS_BASE_SEQUENCE);
    h->record_count = (int32_t)kiq_be32(p + KIQ_BATCH_POS_RECORD_COUNT);
    return 0;
}

/* Framing and magic of one batch that should fill p[0..len) exactly. */
static int check_frame(const uint8_t *p, size_t len, kiq_batch_header_t *h)
{
    if (kiq_batch_header_parse(p, len, h) == 0) {
        if (h->batch_length < 0 || (size_t)h->batch_length + KIQ_BATCH_LOG_OVERHEAD != len) {
            kiq_error_set("record batch length field says %d bytes, but %zu follow it", h->batch_length,
                          len - KIQ_BATCH_LOG_OVERHEAD);
            return KIQ_ERR_CORRUPT_MESSAGE;
        }
        return KIQ_ERR_NONE;
    }
    if (h->magic == 0 || h->magic == 1) {
        kiq_error_set("message format v%d is not supported: only v2 record batches are", h->magic);
        return KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
    }
    if (h->magic != -1 && h->magic != KIQ_BATCH_MAGIC)
        kiq_error_set("record batch has unknown magic %d", h->magic);
    return KIQ_ERR_CORRUPT_MESSAGE;
}

static int check_crc(const uint8_t *p, size_t len, const kiq_batch_header_t *h)
{
    uint32_t crc = batch_crc(p, len);
    if (crc != h->crc) {
        kiq_error_set("record batch at offset %lld has CRC 0x%08x, its data gives 0x%08x",
                      (long long)h->base_offset, h->crc, crc);
        return KIQ_ERR_CORRUPT_MESSAGE;
    }
    return KIQ_ERR_NONE;
}

int kiq_batch_check(const uint8_t *p, size_t len, kiq_batch_header_t *h)
{
    kiq_batch_header_t local;
    if (!h) h = &local;
    int rc = check_frame(p, len, h);
    return rc ? rc : check_crc(p, len, h);
}

/* The records section of a batch, decompressed into scratch when needed.
 * 0, 1 (decompressed past max_decompressed) or -1, the reason set. */
static int batch_records(const uint8_t *p, size_t len, const kiq_batch_header_t *h, size_t max_decompressed,
                         kiq_wr_t *scratch, const uint8_t **recs, size_t *recs_len)
{
    int codec = kiq_batch_codec(h);
    const uint8_t *data = p + KIQ_BATCH_HEADER_SIZE;
    size_t data_len = len - KIQ_BATCH_HEADER_SIZE;
    if (codec == KIQ_CODEC_NONE) {
        *recs = data;
        *recs_len = data_len;
        return 0;
    }
    if (codec > KIQ_CODEC_ZSTD) return kiq_error_set("record batch uses unknown compression codec %d", codec);
    int rc = kiq_decompress(codec, data, data_len, max_decompressed, scratch);
    if (rc) return rc;
    *recs = scratch->buf;
    *recs_len = scratch->len;
    return 0;
}

/* Parses the records section: exactly record_count records and nothing
 * after. strict (produce): offset deltas must be 0..n-1; else they must only
 * increase and stay within last_offset_delta, as after compaction. */
/* Record fields over [*p, end), advancing *p: false when the field is
 * truncated or malformed. Kept inline on locals: a produce's validation is
 * mostly these, once per field of every record. */
static inline bool take_uvarint(const uint8_t **pp, const uint8_t *end, int max_bytes, uint64_t *out)
{
    const uint8_t *p = *pp;
    /* up to three bytes unrolled: lengths, offset and timestamp deltas of
     * the records of a batch of thousands */
    if (end - p >= 3) {
        uint64_t v = p[0];
        if (v < 0x80) return *pp = p + 1, *out = v, true;
        v = (v & 0x7f) | (uint64_t)p[1] << 7;
        if (p[1] < 0x80) return *pp = p + 2, *out = v, true;
        v = (v & 0x3fff) | (uint64_t)p[2] << 14;
        if (p[2] < 0x80) return *pp = p + 3, *out = v, true;
    }
    uint64_t v = 0;
    for (int i = 0; i < max_bytes && p < end; i++) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return true;
        }
    }
    return false;
}

static inline bool take_varint(const uint8_t **pp, const uint8_t *end, int32_t *out)
{
    uint64_t u;
    if (!take_uvarint(pp, end, 5, &u) || u > UINT32_MAX) return false;
    *out = (int32_t)((uint32_t)u >> 1) ^ -(int32_t)(u & 1);
    return true;
}

static inline bool take_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
    uint64_t u;
    if (!take_uvarint(pp, end, 10, &u)) return false;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return true;
}

/* A length-prefixed field (-1: null, when nullable) of at most what is
 * left: NULL, or what is wrong with it (the field named by the caller). */
static inline const char *take_bytes(const uint8_t **pp, const uint8_t *end, bool nullable, kiq_bytes_t *out)
{
    int32_t n;
    if (!take_varint(pp, end, &n)) return "length is truncated or malformed";
    if (n < (nullable ? -1 : 0)) return nullable ? "has a negative length" : "is null or has a negative length";
    if (n > end - *pp) return "is truncated";
    *out = (kiq_bytes_t){n >= 0 ? *pp : NULL, n};
    if (n > 0) *pp += n;
    return NULL;
}

/* One record of [p, end) (its length prefix read already) into rec. 0
 * when it is whole and well formed, else -1 with *field and *why saying
 * what is wrong. */
static inline int parse_record(const uint8_t *p, const uint8_t *end, kiq_record_t *rec, const char **field,
                               const char **why)
{
    *why = "is truncated or malformed";
    if (p == end) return *field = "attributes", -1;
    rec->attributes = (int8_t)*p++;
    if (!take_varlong(&p, end, &rec->timestamp_delta)) return *field = "timestamp delta", -1;
    if (!take_varint(&p, end, &rec->offset_delta)) return *field = "offset delta", -1;
    if ((*why = take_bytes(&p, end, true, &rec->key))) return *field = "key", -1;
    if ((*why = take_bytes(&p, end, true, &rec->value))) return *field = "value", -1;
    *why = "is truncated or malformed";
    if (!take_varint(&p, end, &rec->header_count)) return *field = "header count", -1;
    /* Each header takes at least two bytes (two zero lengths). */
    *why = "does not fit the record";
    if (rec->header_count < 0 || rec->header_count > (end - p) / 2) return *field = "header count", -1;
    rec->headers = p;
    for (int32_t j = 0; j < rec->header_count; j++) {
        kiq_bytes_t k, v;
        if ((*why = take_bytes(&p, end, false, &k))) return *field = "header key", -1;
        if ((*why = take_bytes(&p, end, true, &v))) return *field = "header value", -1;
    }
    rec->headers_len = (size_t)(p - rec->headers);
    *why = "bytes left over inside its length";
    return p == end ? 0 : (*field = "record", -1);
}

static int walk_records(const kiq_batch_header_t *h, const uint8_t *recs, size_t len, bool strict,
                        kiq_batch_summary_t *sum, int (*cb)(const kiq_record_t *r, void *ctx), void *ctx)
{
    if (h->record_count < 0) return kiq_error_set("record batch has negative record count %d", h->record_count);
    int32_t with_headers = 0;
    int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
    const uint8_t *p = recs, *end = len ? recs + len : recs;
    int32_t prev_delta = -1;
    bool log_append = kiq_batch_is_log_append_time(h);
    for (int32_t i = 0; i < h->record_count; i++) {
        size_t at = (size_t)(p - recs);
        int32_t rlen;
        if (!take_varint(&p, end, &rlen))
            return kiq_error_set("record %d of %d at byte %zu: truncated or malformed length", i, h->record_count, at);
        if (rlen < 0 || rlen > end - p)
            return kiq_error_set("record %d at byte %zu: length %d overruns the %zu bytes left", i, at, rlen,
                                 (size_t)(end - p));
        kiq_record_t rec;
        rec.batch = h;
        const char *field, *why;
        if (parse_record(p, p + rlen, &rec, &field, &why) != 0)
            return kiq_error_set("record %d at byte %zu: %s %s", i, at, field, why);
        p += rlen;
        with_headers += rec.header_count > 0;
        if (strict ? rec.offset_delta != i
                   : rec.offset_delta <= prev_delta || rec.offset_delta > h->last_offset_delta)
            return kiq_error_set("record %d at byte %zu has offset delta %d (previous %d, last %d)", i, at,
                                 rec.offset_delta, prev_delta, h->last_offset_delta);
        prev_delta = rec.offset_delta;
        rec.offset = add_wrap(h->base_offset, rec.offset_delta);
        rec.timestamp = log_append ? h->max_timestamp : add_wrap(h->base_timestamp, rec.timestamp_delta);
        if (rec.timestamp != -1) {
            if (rec.timestamp < min_ts) min_ts = rec.timestamp;
            if (rec.timestamp > max_ts) max_ts = rec.timestamp;
        }
        if (cb) {
            int stop = cb(&rec, ctx);
            if (stop) return stop;
        }
    }
    if (p != end) return kiq_error_set("%zu bytes follow the last of %d records", (size_t)(end - p), h->record_count);
    if (sum) *sum = (kiq_batch_summary_t){with_headers, min_ts, max_ts};
    return 0;
}

int kiq_batch_validate(const uint8_t *p, size_t len, size_t max_batch_bytes, size_t max_decompressed,
                       kiq_batch_header_t *h, kiq_batch_summary_t *sum)
{
    kiq_batch_header_t local;
    if (!h) h = &local;
    int rc = check_frame(p, len, h);
    if (rc) return rc;
    /* Size before CRC, in Kafka's order. */
    if (max_batch_bytes && len > max_batch_bytes) {
        kiq_error_set("record batch of %zu bytes exceeds the limit of %zu", len, max_batch_bytes);
        return KIQ_ERR_MESSAGE_TOO_LARGE;
    }
    rc = check_crc(p, len, h);
    if (rc) return rc;
    if (h->record_count <= 0) {
        kiq_error_set("record batch has record count %d", h->record_count);
        return KIQ_ERR_INVALID_RECORD;
    }
    if ((int64_t)h->last_offset_delta != (int64_t)h->record_count - 1) {
        kiq_error_set("record batch has %d records but last offset delta %d", h->record_count,
                      h->last_offset_delta);
        return KIQ_ERR_INVALID_RECORD;
    }
    kiq_wr_t scratch;
    kiq_wr_init(&scratch);
    const uint8_t *recs = NULL;
    size_t recs_len = 0;
    rc = batch_records(p, len, h, max_decompressed, &scratch, &recs, &recs_len);
    if (rc == 1)
        rc = KIQ_ERR_MESSAGE_TOO_LARGE;
    else if (rc || walk_records(h, recs, recs_len, true, sum, NULL, NULL))
        rc = KIQ_ERR_INVALID_RECORD;
    kiq_wr_free(&scratch);
    return rc;
}

void kiq_batch_iter_init(kiq_batch_iter_t *it, const uint8_t *p, size_t len, bool allow_partial)
{
    it->p = p;
    it->len = len;
    it->pos = 0;
    it->allow_partial = allow_partial;
    it->partial = false;
}

/* The smallest batch_length each format can have: v0 message (crc, magic,
 * attributes, key and value lengths), v1 adds a timestamp, v2 its header. */
static int32_t min_batch_length(int magic)
{
    switch (magic) {
    case 0: return 14;
    case 1: return 22;
    default: return KIQ_BATCH_HEADER_SIZE - KIQ_BATCH_LOG_OVERHEAD;
    }
}

static int iter_truncated(kiq_batch_iter_t *it, size_t need)
{
    if (it->allow_partial) {
        it->partial = true;
        it->pos = it->len;
        return 0;
    }
    return kiq_error_set("truncated record batch at byte %zu: %zu bytes left, %zu needed", it->pos,
                         it->len - it->pos, need);
}

int kiq_batch_iter_next(kiq_batch_iter_t *it, const uint8_t **batch, size_t *batch_len, kiq_batch_header_t *h)
{
    if (it->pos >= it->len) return 0;
    const uint8_t *p = it->p + it->pos;
    size_t left = it->len - it->pos;
    if (left <= KIQ_BATCH_POS_MAGIC) return iter_truncated(it, KIQ_BATCH_POS_MAGIC + 1);
    int32_t blen = (int32_t)kiq_be32(p + KIQ_BATCH_POS_LENGTH);
    int magic = (int8_t)p[KIQ_BATCH_POS_MAGIC];
    if (blen < min_batch_length(magic))
        return kiq_error_set("record batch at byte %zu (magic %d) has impossible length %d", it->pos, magic,
                             blen);
    size_t total = (size_t)blen + KIQ_BATCH_LOG_OVERHEAD;
    if (total > left) return iter_truncated(it, total);
    /* Old formats fail to parse as v2 but are still handed out, magic set. */
    kiq_batch_header_parse(p, total, h);
    *batch = p;
    *batch_len = total;
    it->pos += total;
    return 1;
}

void kiq_record_headers_init(kiq_record_header_iter_t *it, const kiq_record_t *r)
{
    kiq_rd_init(&it->rd, r->headers, r->headers_len);
    it->left = r->header_count;
}

int kiq_record_headers_next(kiq_record_header_iter_t *it, kiq_record_header_t *out)
{
    if (it->left <= 0) return 0;
    it->left--;
    int32_t klen = kiq_rd_varint(&it->rd);
    out->key = (kiq_str_t){NULL, 0};
    out->value = (kiq_bytes_t){NULL, 0};
    if (klen >= 0) out->key = (kiq_str_t){(const char *)kiq_rd_raw(&it->rd, (size_t)klen), klen};
    int32_t vlen = kiq_rd_varint(&it->rd);
    if (vlen >= 0) out->value = (kiq_bytes_t){kiq_rd_raw(&it->rd, (size_t)vlen), vlen};
    if (it->rd.err || klen < 0) {
        it->left = 0;
        return 0;
    }
    return 1;
}

int kiq_batch_foreach_record(const uint8_t *batch, size_t len, size_t max_decompressed,
                             int (*cb)(const kiq_record_t *r, void *ctx), void *ctx)
{
    kiq_batch_header_t h;
    if (check_frame(batch, len, &h)) return -1;
    kiq_wr_t scratch;
    kiq_wr_init(&scratch);
    const uint8_t *recs = NULL;
    size_t recs_len = 0;
    int rc = batch_records(batch, len, &h, max_decompressed, &scratch, &recs, &recs_len) ? -1 : 0;
    if (rc == 0) rc = walk_records(&h, recs, recs_len, false, NULL, cb, ctx);
    kiq_wr_free(&scratch);
    return rc;
}

static int first_key_type(const kiq_record_t *r, void *ctx)
{
    int *type = ctx;
    if (!r->key.p || r->key.len < 4) return 1;
    *type = (int16_t)kiq_be16(r->key.p + 2);
    return 1;
}

int kiq_batch_control_type(const uint8_t *batch, size_t len)
{
    int type = -1;
    int rc = kiq_batch_foreach_record(batch, len, 4096, first_key_type, &type);
    if (rc < 0) return -1;
    if (type < 0) return kiq_error_set("a control batch without a control record key");
    return type;
}

void kiq_batch_set_base_offset(uint8_t *batch, int64_t off)
{
    kiq_put_be64(batch + KIQ_BATCH_POS_BASE_OFFSET, (uint64_t)off);
}

void kiq_batch_set_leader_epoch(uint8_t *batch, int32_t epoch)
{
    kiq_put_be32(batch + KIQ_BATCH_POS_LEADER_EPOCH, (uint32_t)epoch);
}

void kiq_batch_set_log_append_time(uint8_t *batch, int64_t ts_ms)
{
    size_t len = (size_t)(int32_t)kiq_be32(batch + KIQ_BATCH_POS_LENGTH) + KIQ_BATCH_LOG_OVERHEAD;
    uint16_t attrs = kiq_be16(batch + KIQ_BATCH_POS_ATTRIBUTES);
    kiq_put_be16(batch + KIQ_BATCH_POS_ATTRIBUTES, attrs | KIQ_BATCH_ATTR_LOG_APPEND_TIME);
    kiq_put_be64(batch + KIQ_BATCH_POS_MAX_TIMESTAMP, (uint64_t)ts_ms);
    kiq_put_be32(batch + KIQ_BATCH_POS_CRC, batch_crc(batch, len));
}

void kiq_batch_builder_init(kiq_batch_builder_t *b, int codec, int64_t base_timestamp)
{
    memset(b, 0, sizeof *b);
    b->codec = codec;
    b->partition_leader_epoch = -1;
    b->base_timestamp = base_timestamp;
    b->max_timestamp = base_timestamp;
    b->producer_id = -1;
    b->producer_epoch = -1;
    b->base_sequence = -1;
    kiq_wr_init(&b->records);
}

void kiq_batch_builder_set_producer(kiq_batch_builder_t *b, int64_t producer_id, int16_t producer_epoch,
                                    int32_t base_sequence)
{
    b->producer_id = producer_id;
    b->producer_epoch = producer_epoch;
    b->base_sequence = base_sequence;
}

/* Bytes a varint length and its data take; -1 (null) has no data. */
static size_t len_and_data(int32_t n) { return kiq_varint_size(n) + (n > 0 ? (size_t)n : 0); }

int kiq_batch_builder_add(kiq_batch_builder_t *b, const void *key, int32_t key_len, const void *value,
                          int32_t value_len, const kiq_record_header_t *headers, int32_t header_count,
                          int64_t timestamp)
{
    if (b->count == INT32_MAX) return kiq_error_set("record batch is full");
    if (key_len < -1 || value_len < -1 || header_count < 0 || (header_count && !headers))
        return kiq_error_set("record has an invalid key, value or header length");
    if ((key_len > 0 && !key) || (value_len > 0 && !value))
        return kiq_error_set("record key or value is missing its bytes");
    int64_t ts_delta = (int64_t)((uint64_t)timestamp - (uint64_t)b->base_timestamp);
    uint64_t body = 1 + kiq_varlong_size(ts_delta) + kiq_varint_size(b->count) + len_and_data(key_len) +
                    len_and_data(value_len) + kiq_varint_size(header_count);
    for (int32_t i = 0; i < header_count; i++) {
        const kiq_record_header_t *hd = &headers[i];
        if (!hd->key.p || hd->key.len < 0 || hd->value.len < 0 || (hd->value.len > 0 && !hd->value.p))
            return kiq_error_set("record header %d has a null key or invalid length", i);
        body += len_and_data(hd->key.len) + len_and_data(hd->value.p ? hd->value.len : -1);
    }
    if (body > INT32_MAX) return kiq_error_set("record of %llu bytes is too large", (unsigned long long)body);

    kiq_wr_t *w = &b->records;
    size_t start = w->len;
    kiq_wr_varint(w, (int32_t)body);
    kiq_wr_i8(w, 0);
    kiq_wr_varlong(w, ts_delta);
    kiq_wr_varint(w, b->count);
    kiq_wr_varint(w, key_len);
    if (key_len > 0) kiq_wr_raw(w, key, (size_t)key_len);
    kiq_wr_varint(w, value_len);
    if (value_len > 0) kiq_wr_raw(w, value, (size_t)value_len);
    kiq_wr_varint(w, header_count);
    for (int32_t i = 0; i < header_count; i++) {
        const kiq_record_header_t *hd = &headers[i];
        kiq_wr_varint(w, hd->key.len);
        kiq_wr_raw(w, hd->key.p, (size_t)hd->key.len);
        int32_t vlen = hd->value.p ? hd->value.len : -1;
        kiq_wr_varint(w, vlen);
        if (vlen > 0) kiq_wr_raw(w, hd->value.p, (size_t)vlen);
    }
    if (w->err) {
        w->len = start;
        return kiq_error_set("out of memory building a record batch");
    }
    if (b->count == 0 || timestamp > b->max_timestamp) b->max_timestamp = timestamp;
    b->count++;
    return 0;
}

int kiq_batch_builder_finish(kiq_batch_builder_t *b, kiq_wr_t *out)
{
    if (b->count == 0) return kiq_error_set("record batch has no records");
    if (b->codec < KIQ_CODEC_NONE || b->codec > KIQ_CODEC_ZSTD)
        return kiq_error_set("unknown compression codec %d", b->codec);
    size_t start = out->len;
    if (!kiq_wr_reserve(out, KIQ_BATCH_HEADER_SIZE)) return kiq_error_set("out of memory building a record batch");
    if (kiq_compress(b->codec, b->records.buf, b->records.len, out)) {
        out->len = start;
        return -1;
    }
    size_t total = out->len - start;
    if (total - KIQ_BATCH_LOG_OVERHEAD > INT32_MAX) {
        out->len = start;
        return kiq_error_set("record batch of %zu bytes is too large", total);
    }
    uint8_t *p = out->buf + start;
    int16_t attrs = (int16_t)(b->codec | (b->transactional ? KIQ_BATCH_ATTR_TRANSACTIONAL : 0) |
                              (b->control ? KIQ_BATCH_ATTR_CONTROL : 0));
    kiq_put_be64(p + KIQ_BATCH_POS_BASE_OFFSET, (uint64_t)b->base_offset);
    kiq_put_be32(p + KIQ_BATCH_POS_LENGTH, (uint32_t)(total - KIQ_BATCH_LOG_OVERHEAD));
    kiq_put_be32(p + KIQ_BATCH_POS_LEADER_EPOCH, (uint32_t)b->partition_leader_epoch);
    p[KIQ_BATCH_POS_MAGIC] = KIQ_BATCH_MAGIC;
    kiq_put_be16(p + KIQ_BATCH_POS_ATTRIBUTES, (uint16_t)attrs);
    kiq_put_be32(p + KIQ_BATCH_POS_LAST_OFFSET_DELTA, (uint32_t)(b->count - 1));
    kiq_put_be64(p + KIQ_BATCH_POS_BASE_TIMESTAMP, (uint64_t)b->base_timestamp);
    kiq_put_be64(p + KIQ_BATCH_POS_MAX_TIMESTAMP, (uint64_t)b->max_timestamp);
    kiq_put_be64(p + KIQ_BATCH_POS_PRODUCER_ID, (uint64_t)b->producer_id);
    kiq_put_be16(p + KIQ_BATCH_POS_PRODUCER_EPOCH, (uint16_t)b->producer_epoch);
    kiq_put_be32(p + KIQ_BATCH_POS_BASE_SEQUENCE, (uint32_t)b->base_sequence);
    kiq_put_be32(p + KIQ_BATCH_POS_RECORD_COUNT, (uint32_t)b->count);
    kiq_put_be32(p + KIQ_BATCH_POS_CRC, batch_crc(p, total));
    return 0;
}

void kiq_batch_builder_free(kiq_batch_builder_t *b) { kiq_wr_free(&b->records); }
