/* RecordBatch v2, the only record format KafkaIQ accepts and stores: header
 * parsing, validation of produced batches, iteration over batches and their
 * records, in-place stamping by the leader, and a builder.
 *
 * Layout (big-endian): baseOffset i64 | batchLength i32 | partitionLeaderEpoch
 * i32 | magic i8 | crc u32 | attributes i16 | lastOffsetDelta i32 |
 * baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16 |
 * baseSequence i32 | recordCount i32 | records. batchLength counts from
 * partitionLeaderEpoch to the end; the CRC-32C covers attributes to the end.
 *
 * Functions here are pure over the buffers they are given: any thread may
 * call them, on buffers that thread owns for the duration of the call. */
#ifndef KIQ_RECORD_BATCH_H
#define KIQ_RECORD_BATCH_H

#include "proto/errors.h"
#include "proto/reader.h"
#include "proto/writer.h"

#define KIQ_BATCH_HEADER_SIZE 61
/* baseOffset + batchLength: the bytes batchLength does not count. */
#define KIQ_BATCH_LOG_OVERHEAD 12
#define KIQ_BATCH_MAGIC 2

/* Byte positions of the header fields. */
#define KIQ_BATCH_POS_BASE_OFFSET 0
#define KIQ_BATCH_POS_LENGTH 8
#define KIQ_BATCH_POS_LEADER_EPOCH 12
#define KIQ_BATCH_POS_MAGIC 16
#define KIQ_BATCH_POS_CRC 17
#define KIQ_BATCH_POS_ATTRIBUTES 21
#define KIQ_BATCH_POS_LAST_OFFSET_DELTA 23
#define KIQ_BATCH_POS_BASE_TIMESTAMP 27
#define KIQ_BATCH_POS_MAX_TIMESTAMP 35
#define KIQ_BATCH_POS_PRODUCER_ID 43
#define KIQ_BATCH_POS_PRODUCER_EPOCH 51
#define KIQ_BATCH_POS_BASE_SEQUENCE 53
#define KIQ_BATCH_POS_RECORD_COUNT 57

/* attributes bits */
#define KIQ_BATCH_ATTR_CODEC_MASK 0x07
#define KIQ_BATCH_ATTR_LOG_APPEND_TIME 0x08
#define KIQ_BATCH_ATTR_TRANSACTIONAL 0x10
#define KIQ_BATCH_ATTR_CONTROL 0x20
/* Set by Kafka's log cleaner (3.1+) when baseTimestamp holds a delete horizon. */
#define KIQ_BATCH_ATTR_DELETE_HORIZON 0x40

/* What kiq_batch_validate lets a batch decompress to (guard against
 * decompression bombs; Kafka itself has no such limit). */
#define KIQ_BATCH_MAX_DECOMPRESSED ((size_t)128 << 20)

/* A decoded header: a plain value, owned by whoever holds the copy. */
typedef struct kiq_batch_header {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
} kiq_batch_header_t;

static inline int kiq_batch_codec(const kiq_batch_header_t *h)
{
    return h->attributes & KIQ_BATCH_ATTR_CODEC_MASK;
}
static inline bool kiq_batch_is_log_append_time(const kiq_batch_header_t *h)
{
    return (h->attributes & KIQ_BATCH_ATTR_LOG_APPEND_TIME) != 0;
}
static inline bool kiq_batch_is_transactional(const kiq_batch_header_t *h)
{
    return (h->attributes & KIQ_BATCH_ATTR_TRANSACTIONAL) != 0;
}
static inline bool kiq_batch_is_control(const kiq_batch_header_t *h)
{
    return (h->attributes & KIQ_BATCH_ATTR_CONTROL) != 0;
}
static inline int64_t kiq_batch_last_offset(const kiq_batch_header_t *h)
{
    return h->base_offset + h->last_offset_delta;
}
/* Whole size on the wire / on disk, header included. */
static inline size_t kiq_batch_size(const kiq_batch_header_t *h)
{
    return (size_t)h->batch_length + KIQ_BATCH_LOG_OVERHEAD;
}

/* Reads the header at p. Returns 0 for a v2 header (len >= 61). Otherwise -1
 * with kiq_error_set; then h->magic still tells an older format (0 or 1)
 * when len >= 17, and is -1 when even the magic byte is missing. For magic
 * 0/1, base_offset, batch_length (the message size), crc and attributes
 * (when present) are filled, the rest is zero. No CRC or length checks. */
int kiq_batch_header_parse(const uint8_t *p, size_t len, kiq_batch_header_t *h);

/* Checks that p[0..len) is exactly one well-formed v2 batch whose CRC
 * matches: what the log needs on recovery and replication. Returns 0 or a
 * KIQ_ERR_* code (2 bad length or CRC, 43 magic 0/1, 2 other magic) with
 * the reason in kiq_error_set; h (may be NULL) gets the header. */
int kiq_batch_check(const uint8_t *p, size_t len, kiq_batch_header_t *h);

/* Full validation of one produced batch occupying exactly p[0..len):
 * framing, magic (0/1 -> 43, other -> 2), size against max_batch_bytes (0 =
 * no limit; larger -> 10), CRC (-> 2), then the records, decompressed up to
 * max_decompressed (at most KIQ_BATCH_MAX_DECOMPRESSED; past it -> 10, a
 * decompression bomb): unknown codec, undecodable data, record_count
 * <= 0 or not lastOffsetDelta + 1, offset deltas other than 0..n-1, or any
 * record that does not parse exactly -> 87. Returns 0 or that KIQ_ERR_*
 * code, with the reason in kiq_error_set. Does not check baseOffset == 0,
 * control batches or timestamps: those are the produce handler's policy.
 * sum (may be NULL) gets what the walk learns anyway: who looks for a
 * header skips batches with none, and who bounds timestamps checks each
 * record only when the extremes are out of bounds. */
typedef struct kiq_batch_summary {
    int32_t headered;      /* records carrying headers */
    int64_t min_timestamp; /* of the records that have one (not -1); INT64_MAX when none has */
    int64_t max_timestamp; /* likewise; INT64_MIN when none has */
} kiq_batch_summary_t;

int kiq_batch_validate(const uint8_t *p, size_t len, size_t max_batch_bytes, size_t max_decompressed,
                       kiq_batch_header_t *h, kiq_batch_summary_t *sum);

/* Walks the batches of a records field (several may be concatenated). Owned
 * by the caller's thread; points into the caller's buffer. */
typedef struct kiq_batch_iter {
    const uint8_t *p;
    size_t len;
    size_t pos;         /* where the next batch starts */
    bool allow_partial; /* stop quietly at a truncated trailing batch */
    bool partial;       /* set when iteration stopped at one */
} kiq_batch_iter_t;

/* allow_partial: false for produce requests (a truncated batch is an
 * error); true for fetched data, where a broker may cut the last batch. */
void kiq_batch_iter_init(kiq_batch_iter_t *it, const uint8_t *p, size_t len, bool allow_partial);
/* Returns 1 with the next whole batch (its bytes and header), 0 at the end
 * (it->partial says whether a truncated batch was left over), or -1 with
 * kiq_error_set when the data cannot be split (a batch length below what its
 * format needs, or a truncated batch when !allow_partial). Batches in the
 * old formats are returned too, with only the fields kiq_batch_header_parse
 * fills for them: check h->magic. Nothing beyond framing is checked. */
int kiq_batch_iter_next(kiq_batch_iter_t *it, const uint8_t **batch, size_t *batch_len,
                        kiq_batch_header_t *h);

/* A plain value pointing into the record it was read from. */
typedef struct kiq_record_header {
    kiq_str_t key;     /* never null */
    kiq_bytes_t value; /* p == NULL: null */
} kiq_record_header_t;

/* One record as kiq_batch_foreach_record hands it over. Pointers go into
 * the batch or into decompressed data that lives only during the callback. */
typedef struct kiq_record {
    const kiq_batch_header_t *batch;
    int8_t attributes;
    int64_t timestamp;       /* base + delta; maxTimestamp for LogAppendTime */
    int64_t timestamp_delta;
    int64_t offset;          /* base_offset + offset_delta */
    int32_t offset_delta;
    kiq_bytes_t key;         /* p == NULL: null key */
    kiq_bytes_t value;       /* p == NULL: null value */
    int32_t header_count;
    const uint8_t *headers;  /* raw; read with kiq_record_headers_next */
    size_t headers_len;
} kiq_record_t;

/* Walks a record's headers; a local of the thread reading the record. */
typedef struct kiq_record_header_iter {
    kiq_rd_t rd;
    int32_t left;
} kiq_record_header_iter_t;

void kiq_record_headers_init(kiq_record_header_iter_t *it, const kiq_record_t *r);
/* Returns 1 with the next header, 0 when there are no more. */
int kiq_record_headers_next(kiq_record_header_iter_t *it, kiq_record_header_t *out);

/* Calls cb for each record of the v2 batch occupying exactly batch[0..len),
 * decompressing it first (at most max_decompressed bytes). Offset deltas
 * must increase but may have gaps (compacted batches). The CRC is not
 * checked (see kiq_batch_check). cb returns 0 to go on; anything else stops
 * the walk and is returned. Returns 0 when all records were visited, -1 with
 * kiq_error_set on malformed data; cb may have seen earlier records by then. */
int kiq_batch_foreach_record(const uint8_t *batch, size_t len, size_t max_decompressed,
                             int (*cb)(const kiq_record_t *r, void *ctx), void *ctx);

/* Transaction markers: the key types of a control batch's record. */
#define KIQ_CONTROL_ABORT 0
#define KIQ_CONTROL_COMMIT 1

/* The key type of the record of the control batch batch[0..len) (its key
 * is an int16 version, then the int16 type), or -1 with the reason. */
int kiq_batch_control_type(const uint8_t *batch, size_t len);

/* In-place stamping by the leader. baseOffset and partitionLeaderEpoch are
 * outside the CRC, so it stays valid. */
void kiq_batch_set_base_offset(uint8_t *batch, int64_t off);
void kiq_batch_set_leader_epoch(uint8_t *batch, int32_t epoch);
/* Marks the batch LogAppendTime with maxTimestamp = ts_ms and recomputes the
 * CRC. baseTimestamp and the record deltas stay as the producer wrote them,
 * as Kafka does when it stamps in place; readers take maxTimestamp as every
 * record's timestamp. The batch must have passed kiq_batch_check (its
 * batchLength is trusted). */
void kiq_batch_set_log_append_time(uint8_t *batch, int64_t ts_ms);

/* Builds one v2 batch from records added one by one. Owned by one thread.
 * The fields before `count` may be set between init and finish. */
typedef struct kiq_batch_builder {
    int codec;
    int64_t base_offset;            /* 0 */
    int32_t partition_leader_epoch; /* -1 */
    int64_t base_timestamp;
    int64_t producer_id;            /* -1: not idempotent */
    int16_t producer_epoch;         /* -1 */
    int32_t base_sequence;          /* -1 */
    bool transactional;
    bool control;
    int32_t count;                  /* records added so far */
    int64_t max_timestamp;
    kiq_wr_t records;               /* uncompressed records so far */
} kiq_batch_builder_t;

void kiq_batch_builder_init(kiq_batch_builder_t *b, int codec, int64_t base_timestamp);
void kiq_batch_builder_set_producer(kiq_batch_builder_t *b, int64_t producer_id, int16_t producer_epoch,
                                    int32_t base_sequence);
/* Adds a record. key_len / value_len -1 mean null (the pointer is then
 * ignored). headers may be NULL when header_count is 0. Returns 0, or -1 with
 * kiq_error_set. */
int kiq_batch_builder_add(kiq_batch_builder_t *b, const void *key, int32_t key_len, const void *value,
                          int32_t value_len, const kiq_record_header_t *headers, int32_t header_count,
                          int64_t timestamp);
/* Appends the finished batch (compressed records, header, CRC) to out.
 * Returns 0, or -1 with kiq_error_set (no records, compression failure, too
 * large). The builder still holds its records; free it after. */
int kiq_batch_builder_finish(kiq_batch_builder_t *b, kiq_wr_t *out);
void kiq_batch_builder_free(kiq_batch_builder_t *b);

#endif
