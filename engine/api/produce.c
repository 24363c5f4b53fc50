/* Produce: validate each partition's batches (framing, magic, CRC, records),
 * let produce interceptors refuse or rewrite them, refuse keyless records
 * on a compacted topic and, with CreateTime, records stamped outside
 * message.timestamp.before/after.max.ms (INVALID_TIMESTAMP), stamp offsets
 * (and LogAppendTime when configured), append to the log. A partition's
 * data is accepted or refused whole, as in Kafka. Batches of idempotent producers
 * are checked against the partition's producer state as they are
 * appended: a retried batch is answered with its original offsets, a
 * sequence gap or a stale epoch with its error code.
 *
 * Only the partition's leader takes records (NOT_LEADER_OR_FOLLOWER
 * elsewhere). acks=all (-1) needs min.insync.replicas in the ISR before
 * appending (NOT_ENOUGH_REPLICAS), then waits in the purgatory until the
 * high watermark passes what was appended, for at most timeout_ms
 * (REQUEST_TIMED_OUT); if by then the ISR is smaller than
 * min.insync.replicas the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND. A
 * standalone partition's ISR is this broker alone, so it never waits.
 * From v10 a NOT_LEADER_OR_FOLLOWER answer names the current leader and
 * carries its endpoint (KIP-951). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "log/cleaner_threads.h"
#include "record/batch.h"
#include "replica/leader.h"
#include "txn/txn_coordinator.h"

/* What validate_batches learns of one partition's records. */
typedef struct records_info {
    int64_t records, headered; /* records, and those carrying headers */
    int64_t min_timestamp, max_timestamp; /* of the records that have one */
} records_info_t;

/* What a batch may decompress to: the broker's
 * kafkaiq.max.decompressed.batch.bytes or the topic's
 * max.decompressed.message.bytes, the lower; name: which one. */
typedef struct decompressed_limit {
    size_t bytes;
    const char *name;
} decompressed_limit_t;

/* Checks every batch of one partition's records, each at most max_bytes
 * and decompressing to at most max_decompressed; returns a Kafka error
 * code. */
static int validate_batches(uint8_t *p, size_t len, size_t max_bytes, decompressed_limit_t max_decompressed,
                            records_info_t *info)
{
    if (!p || len == 0) return kiq_error_set("no record batches"), KIQ_ERR_INVALID_RECORD;
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    int rc;
    *info = (records_info_t){0, 0, INT64_MAX, INT64_MIN};
    while ((rc = kiq_batch_iter_next(&it, &batch, &blen, &h)) == 1) {
        if (h.magic != KIQ_BATCH_MAGIC) {
            kiq_error_set("message format v%d is not supported; use RecordBatch v2", h.magic);
            return KIQ_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
        }
        kiq_batch_summary_t sum;
        int err = kiq_batch_validate(batch, blen, max_bytes, max_decompressed.bytes, &h, &sum);
        if (err == KIQ_ERR_MESSAGE_TOO_LARGE && (!max_bytes || blen <= max_bytes)) {
            char why[256];
            snprintf(why, sizeof why, "%s", kiq_error_get());
            kiq_error_set("%s (%s)", why, max_decompressed.name);
        }
        if (err) return err;
        info->headered += sum.headered;
        if (sum.min_timestamp < info->min_timestamp) info->min_timestamp = sum.min_timestamp;
        if (sum.max_timestamp > info->max_timestamp) info->max_timestamp = sum.max_timestamp;
        if (h.attributes & KIQ_BATCH_ATTR_CONTROL) {
            kiq_error_set("clients are not allowed to write control records");
            return KIQ_ERR_INVALID_RECORD;
        }
        info->records += h.record_count;
    }
    return rc == 0 ? KIQ_ERR_NONE : KIQ_ERR_CORRUPT_MESSAGE;
}

/* The record checks of Kafka's LogValidator that depend on the topic: a
 * key on a compacted topic (the cleaner could only drop a keyless record),
 * and with CreateTime a timestamp within [lo, hi]
 * (message.timestamp.before/after.max.ms around the broker's clock). */
typedef struct record_rules {
    bool need_key;
    bool bound_timestamps;
    int64_t lo, hi;
} record_rules_t;

/* The refused records of the batch being looked at, by index in the
 * batch (KIP-467's batch_index), with why. */
typedef struct record_faults {
    kiq_request_t *r;
    const record_rules_t *rules;
    kiq_str_t keyless; /* the message for a record without a key */
    int32_t index;     /* of the record being looked at */
    int32_t n, cap;
    kiq_produce_response_responses_partition_responses_record_errors_t *at;
    bool timestamps;   /* one of them is a bad timestamp */
} record_faults_t;

static void add_fault(record_faults_t *f, int32_t index, kiq_str_t why)
{
    if (f->n == f->cap) {
        int32_t cap = f->cap ? f->cap * 2 : 8;
        void *at = kiq_arena_alloc(&f->r->arena, (size_t)cap * sizeof *f->at);
        if (f->n) memcpy(at, f->at, (size_t)f->n * sizeof *f->at);
        f->at = at;
        f->cap = cap;
    }
    kiq_produce_response_responses_partition_responses_record_errors_init(&f->at[f->n]);
    f->at[f->n].batch_index = index;
    f->at[f->n++].batch_index_error_message = why;
}

static int note_faults(const kiq_record_t *rec, void *ctx)
{
    record_faults_t *f = ctx;
    const record_rules_t *rules = f->rules;
    int32_t i = f->index++;
    if (rules->need_key && !rec->key.p) {
        add_fault(f, i, f->keyless);
    } else if (rules->bound_timestamps && rec->timestamp != -1 &&
               (rec->timestamp < rules->lo || rec->timestamp > rules->hi)) {
        kiq_error_set("Timestamp %" PRId64 " of message with offset %" PRId64 " is out of range. The timestamp "
                      "should be within [%" PRId64 ", %" PRId64 "]",
                      rec->timestamp, rec->offset, rules->lo, rules->hi);
        add_fault(f, i, kiq_request_error_message(f->r));
        f->timestamps = true;
    }
    return 0;
}

/* Applies the rules to every record, the batches being validated already.
 * As Kafka, the first batch with refused records refuses the partition's
 * data, naming each of them in record_errors (Produce v8+): with
 * INVALID_TIMESTAMP when a timestamp is among them, else INVALID_RECORD,
 * with Kafka's messages. */
static int check_records(kiq_request_t *r, kiq_topic_t *topic, int32_t partition, const record_rules_t *rules,
                         const uint8_t *p, size_t len, kiq_produce_response_responses_partition_responses_t *out)
{
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    record_faults_t f = {.r = r, .rules = rules};
    kiq_error_set("Compacted topic cannot accept message without key in topic partition %s-%d", topic->name,
                  partition);
    f.keyless = kiq_request_error_message(r);
    while (f.n == 0 && kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
        f.index = 0;
        if (kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, note_faults, &f) != 0)
            return KIQ_ERR_CORRUPT_MESSAGE;
    }
    if (f.n == 0) return KIQ_ERR_NONE;
    out->record_errors_n = f.n;
    out->record_errors = f.at;
    if (f.timestamps) {
        kiq_error_set("One or more records have been rejected due to invalid timestamp");
        return KIQ_ERR_INVALID_TIMESTAMP;
    }
    char shown[1024];
    size_t at = 0;
    for (int32_t i = 0; i < f.n && i < 3 && at < sizeof shown; i++)
        at += (size_t)snprintf(shown + at, sizeof shown - at, "%sRecordError(batchIndex=%d, message='" KIQ_STR_FMT "')",
                               i ? ", " : "", f.at[i].batch_index, KIQ_STR_ARG(f.at[i].batch_index_error_message));
    kiq_error_set("One or more records have been rejected due to %d record errors in total, and only showing the "
                  "first three errors at most: [%s]",
                  f.n, shown);
    return KIQ_ERR_INVALID_RECORD;
}

static void stamp_log_append_time(uint8_t *p, size_t len, int64_t now)
{
    kiq_batch_iter_t it;
    kiq_batch_iter_init(&it, p, len, false);
    const uint8_t *batch;
    size_t blen;
    kiq_batch_header_t h;
    while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1)
        kiq_batch_set_log_append_time((uint8_t *)batch, now);
}

/* The topic's max.message.bytes, else the broker's message.max.bytes. */
static size_t max_batch_bytes(kiq_broker_t *b, kiq_topic_t *topic)
{
    int v = atomic_load(&topic->max_message_bytes);
    return (size_t)(v >= 0 ? v : kiq_config_int(b->config, KIQ_CFG_MESSAGE_MAX_BYTES));
}

static decompressed_limit_t max_decompressed(kiq_broker_t *b, kiq_topic_t *topic)
{
    decompressed_limit_t l = {(size_t)kiq_config_int(b->config, KIQ_CFG_MAX_DECOMPRESSED_BATCH_BYTES),
                              "kafkaiq.max.decompressed.batch.bytes"};
    int64_t t = atomic_load(&topic->max_decompressed_message_bytes);
    if (t > 0 && (uint64_t)t < l.bytes) l = (decompressed_limit_t){(size_t)t, "max.decompressed.message.bytes"};
    return l;
}

/* The topic's min.insync.replicas, else the broker's. */
static int64_t min_insync(kiq_broker_t *b, kiq_topic_t *topic)
{
    int64_t v = atomic_load(&topic->min_insync_replicas);
    return v >= 0 ? v : kiq_config_int(b->config, KIQ_CFG_MIN_INSYNC_REPLICAS);
}

/* The topic's message.timestamp.type, else the broker's. */
static bool log_append_time(kiq_broker_t *b, kiq_topic_t *topic)
{
    int v = atomic_load(&topic->log_append_time);
    if (v >= 0) return v == 1;
    return strcmp(kiq_config_str(b->config, KIQ_CFG_MESSAGE_TIMESTAMP_TYPE), "LogAppendTime") == 0;
}

/* The rules for this topic's records now; info tells whether the
 * timestamps need a look at all (most produces: no). */
static record_rules_t record_rules(kiq_broker_t *b, kiq_topic_t *topic, bool log_append, const records_info_t *info)
{
    record_rules_t rules = {.need_key = kiq_log_cleaner_topic_compacted(topic, b->config)};
    if (log_append || info->min_timestamp > info->max_timestamp) return rules;
    int64_t before = atomic_load(&topic->timestamp_before_max_ms);
    int64_t after = atomic_load(&topic->timestamp_after_max_ms);
    if (before < 0) before = kiq_config_int(b->config, KIQ_CFG_LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS);
    if (after < 0) after = kiq_config_int(b->config, KIQ_CFG_LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS);
    int64_t now = kiq_clock_wall_ms();
    rules.lo = now - before; /* now >= 0 and before >= 0: no overflow */
    rules.hi = after > INT64_MAX - now ? INT64_MAX : now + after;
    rules.bound_timestamps = info->min_timestamp < rules.lo || info->max_timestamp > rules.hi;
    return rules;
}

/* How long a produce waits for a coordinator on another broker to answer
 * whether its partitions are in its transaction. */
#define TXN_CHECK_TIMEOUT_MS 10000

/* KIP-890 part 1: a partition's transactional records are taken only if
 * their transaction is under way here already or its coordinator has the
 * partition in it, so a late or stray produce cannot start a transaction
 * nobody will end. Looked at for every partition before anything of the
 * request is appended; the request waits in the purgatory while a
 * coordinator on another broker is asked. From v12 (transactions v2,
 * KIP-890 part 2) the coordinator adds the partition to the transaction
 * instead of only saying whether it is there. */
typedef struct txn_check {
    uint64_t guard; /* the log's verification guard; 0: not transactional */
    bool asking;    /* the coordinator's answer is still to come */
    bool add;       /* v12+: the partition is added, not verified */
    int16_t err;    /* its answer */
    int16_t denied; /* the authorizer's refusal (no WRITE on the topic or transactional id), or 0 */
    const char *topic;
    int32_t partition;
    int64_t producer_id;
    int16_t producer_epoch;
} txn_check_t;

/* The produce error for a coordinator's answer, as Kafka's leaders give
 * it: NOT_ENOUGH_REPLICAS (which every producer retries) when the
 * coordinator could not tell, or could not add the partition yet (v2: the
 * last transaction's markers are still being written); a partition not in
 * the transaction is TRANSACTION_ABORTABLE to a client that knows it (v11+),
 * which aborts and goes on, else INVALID_TXN_STATE. */
static int16_t txn_check_error(int16_t err, int16_t version)
{
    switch (err) {
    case KIQ_ERR_NONE: return KIQ_ERR_NONE;
    case KIQ_ERR_PRODUCER_FENCED:
    case KIQ_ERR_INVALID_PRODUCER_EPOCH: return KIQ_ERR_INVALID_PRODUCER_EPOCH;
    case KIQ_ERR_NOT_COORDINATOR:
    case KIQ_ERR_COORDINATOR_NOT_AVAILABLE:
    case KIQ_ERR_COORDINATOR_LOAD_IN_PROGRESS:
    case KIQ_ERR_CONCURRENT_TRANSACTIONS:
    case KIQ_ERR_REQUEST_TIMED_OUT: return KIQ_ERR_NOT_ENOUGH_REPLICAS;
    default: return version >= 11 ? KIQ_ERR_TRANSACTION_ABORTABLE : KIQ_ERR_INVALID_TXN_STATE;
    }
}

/* The coordinator's answer is in c->err. A refusal is logged and ends
 * the guard it was asked under, so the next produce asks again (the
 * partition may have joined the transaction since). */
static void txn_check_answered(kiq_broker_t *b, kiq_request_t *r, kiq_str_t txn_id, txn_check_t *c)
{
    c->asking = false;
    if (!c->err) return;
    /* v2's producer is quick to begin its next transaction: its coordinator
     * may still be finishing the last one, which is no news */
    if (c->err == KIQ_ERR_CONCURRENT_TRANSACTIONS)
        KIQ_DEBUG("produce to %s-%d: the coordinator of transactional id " KIQ_STR_FMT " is ending its last "
                  "transaction; the producer retries", c->topic, c->partition, KIQ_STR_ARG(txn_id));
    else
        KIQ_WARN_LIMITED("produce to %s-%d from %s rejected: the coordinator of transactional producer %lld epoch %d "
                         "(id " KIQ_STR_FMT ") answered error %d for it", c->topic, c->partition, r->peer,
                         (long long)c->producer_id, c->producer_epoch, KIQ_STR_ARG(txn_id), c->err);
    kiq_topic_t *topic = kiq_topics_get(b->topics, KIQ_STR(c->topic));
    kiq_partition_log_t *log = topic && c->partition < topic->npartitions ? topic->partitions[c->partition]->log : NULL;
    if (log) kiq_partition_log_txn_guard_end(log, c->producer_id, c->guard);
    kiq_topic_unref(topic);
    c->err = txn_check_error(c->err, r->header.api_version);
}

/* Takes the guard of partition data `in` (of topic named `name`) when its
 * first batch is transactional and, when its transaction is not under way
 * there, asks the coordinator. Partitions that cannot take records are
 * left to the append, which refuses them. */
static void txn_check_begin(kiq_broker_t *b, kiq_request_t *r, kiq_str_t txn_id, kiq_str_t name,
                            const kiq_produce_request_topic_data_partition_data_t *in, txn_check_t *c)
{
    kiq_batch_header_t h;
    if (!in->records.p || kiq_batch_header_parse(in->records.p, (size_t)in->records.len, &h) < 0 ||
        !kiq_batch_is_transactional(&h) || h.producer_id < 0)
        return;
    kiq_topic_t *topic = kiq_topics_get(b->topics, name);
    kiq_partition_t *part;
    kiq_partition_log_t *log;
    if (kiq_replica_led_partition(topic, in->index, -1, &part, &log) == 0) {
        bool ongoing;
        c->add = r->header.api_version >= 12;
        c->guard = kiq_partition_log_txn_guard(log, h.producer_id, h.producer_epoch, c->add, &ongoing);
        c->topic = kiq_arena_strndup(&r->arena, topic->name, strlen(topic->name));
        c->partition = in->index;
        c->producer_id = h.producer_id;
        c->producer_epoch = h.producer_epoch;
        c->asking = !ongoing;
        if (!ongoing && kiq_txn_check_partition(b->txns, txn_id, c->producer_id, c->producer_epoch, c->topic,
                                                c->partition, c->add, c->guard, &c->err) == 1)
            txn_check_answered(b, r, txn_id, c);
    }
    kiq_topic_unref(topic);
}

/* The partition's records checked (batches, limits, the transaction),
 * seen (VALIDATED) and offered to the produce interceptor, which may refuse
 * them or rewrite them (into *datap, *lenp: checked again). False with
 * out's error when they are refused. */
static bool take_records(kiq_broker_t *b, kiq_request_t *r, kiq_topic_t *topic, int16_t acks,
                         const txn_check_t *check, const kiq_produce_request_topic_data_partition_data_t *in,
                         kiq_partition_log_t *log, uint8_t **datap, size_t *lenp, records_info_t *info,
                         kiq_produce_response_responses_partition_responses_t *out)
{
    uint8_t *data = *datap;
    size_t len = *lenp;
    decompressed_limit_t decompressed = max_decompressed(b, topic);
    int err = validate_batches(data, len, max_batch_bytes(b, topic), decompressed, info);
    if (err) {
        KIQ_WARN_LIMITED("produce to %s-%d from %s rejected (error %d): %s", topic->name, in->index, r->peer,
                         err, kiq_error_get());
        out->error_code = (int16_t)err;
        out->error_message = kiq_request_error_message(r);
        return false;
    }
    if (check->err) {
        kiq_error_set("%s-%d is not in the transaction of producer %lld epoch %d at its coordinator", topic->name,
                      in->index, (long long)check->producer_id, check->producer_epoch);
        out->error_code = check->err;
        out->error_message = kiq_request_error_message(r);
        return false;
    }
    if (kiq_observers_want(&b->observers, KIQ_POINT_VALIDATED)) {
        kiq_event_t e = kiq_event(KIQ_POINT_VALIDATED, b->node_id);
        e.request = r;
        e.topic = topic->name;
        e.partition = in->index;
        e.bytes = (int64_t)len;
        e.records = info->records;
        e.payload = data;
        e.payload_len = len;
        e.extra = acks;
        if (info->headered) e.flags |= KIQ_EVENT_HEADERS;
        kiq_observers_emit(&b->observers, &e);
    }
    if (kiq_interceptors_active(&b->interceptors, KIQ_HOOK_PRODUCE)) {
        kiq_hook_produce_t hp = {.topic = topic->name, .partition = in->index, .records = data, .len = len};
        b->interceptors.ops->on_produce(b->interceptors.ctx, r, &hp);
        if (hp.error_code) {
            out->error_code = hp.error_code;
            out->error_message = hp.error_message;
            /* an injected refusal is one like any other */
            kiq_partition_log_note_refused(log, data, len, hp.error_code);
            return false;
        }
        if (hp.rewritten) {
            data = hp.rewritten;
            len = hp.rewritten_len;
            /* built here, but the limits still hold */
            err = validate_batches(data, len, max_batch_bytes(b, topic), decompressed, info);
            if (err) {
                KIQ_WARN_LIMITED("produce to %s-%d from %s: the interceptor's records are refused (error %d): %s",
                                 topic->name, in->index, r->peer, err, kiq_error_get());
                out->error_code = (int16_t)err;
                out->error_message = kiq_request_error_message(r);
                return false;
            }
        }
    }
    *datap = data;
    *lenp = len;
    return true;
}

/* Appends one partition's records; *required gets the offset the high
 * watermark must reach for them to be committed (-1: nothing appended). */
static void produce_partition(kiq_broker_t *b, kiq_request_t *r, kiq_topic_t *topic, int16_t acks,
                              const txn_check_t *check, const kiq_produce_request_topic_data_partition_data_t *in,
                              kiq_produce_response_responses_partition_responses_t *out, int64_t *required)
{
    *required = -1;
    out->index = in->index;
    kiq_partition_t *part;
    kiq_partition_log_t *log;
    log = NULL;
    if ((out->error_code = kiq_replica_led_partition(topic, in->index, -1, &part, &log)) != 0) {
        if (out->error_code == KIQ_ERR_KAFKA_STORAGE_ERROR) {
            kiq_error_set("the log directory of %s-%d is offline", topic->name, in->index);
            out->error_message = kiq_request_error_message(r);
        }
        /* a follower about to lead hears of the batch it refused */
        if (log) kiq_partition_log_note_refused(log, in->records.p, (size_t)in->records.len, out->error_code);
        return;
    }
    if (acks == -1) {
        int isr = kiq_partition_replica_isr_size(part->replica);
        int64_t need = min_insync(b, topic);
        if (isr < need) {
            kiq_error_set("%s-%d has %d in-sync replicas, fewer than min.insync.replicas %lld", topic->name,
                          in->index, isr, (long long)need);
            out->error_code = KIQ_ERR_NOT_ENOUGH_REPLICAS;
            out->error_message = kiq_request_error_message(r);
            kiq_partition_log_note_refused(log, in->records.p, (size_t)in->records.len, out->error_code);
            return;
        }
    }
    /* the frame is this request's own buffer, so stamping in place is safe */
    uint8_t *data = (uint8_t *)in->records.p;
    size_t len = (size_t)in->records.len;
    records_info_t info;
    if (!take_records(b, r, topic, acks, check, in, log, &data, &len, &info, out)) return;
    int err = 0;
    bool log_append = log_append_time(b, topic);
    record_rules_t rules = record_rules(b, topic, log_append, &info);
    if ((rules.need_key || rules.bound_timestamps) &&
        (err = check_records(r, topic, in->index, &rules, data, len, out)) != 0) {
        KIQ_WARN_LIMITED("produce to %s-%d from %s rejected (error %d): %s", topic->name, in->index, r->peer, err,
                         kiq_error_get());
        out->error_code = (int16_t)err;
        out->error_message = kiq_request_error_message(r);
        return;
    }
    if (log_append) {
        out->log_append_time_ms = kiq_clock_wall_ms();
        stamp_log_append_time(data, len, out->log_append_time_ms);
    }
    kiq_log_append_result_t res;
    int rc = kiq_replica_append_as_leader(part, log, data, len, r, check->guard, &res);
    if (rc > 0) {
        /* the idempotent producer's sequence or epoch does not fit: nothing appended */
        KIQ_WARN_LIMITED("produce to %s-%d from %s refused (error %d): %s", topic->name, in->index, r->peer, rc,
                         kiq_error_get());
        out->error_code = (int16_t)rc;
        out->error_message = kiq_request_error_message(r);
        return;
    }
    if (rc != 0) {
        KIQ_WARN_LIMITED("append to %s-%d failed: %s", topic->name, in->index, kiq_error_get());
        out->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
        out->error_message = kiq_request_error_message(r);
        return;
    }
    if (res.duplicate) {
        /* a retry of a batch already in the log: delivered, at its first offsets */
        KIQ_DEBUG("produce to %s-%d from %s: duplicate batch, originally at offset %" PRId64, topic->name, in->index,
                  r->peer, res.base_offset);
        /* Kafka answers a duplicate's log append time with the batch's
         * timestamp, whatever the topic's timestamp type */
        out->log_append_time_ms = res.timestamp;
    }
    out->base_offset = res.base_offset;
    out->log_start_offset = kiq_partition_log_start_offset(log);
    *required = res.last_offset + 1;
}

/* A refused partition's answer as Kafka shapes it: no base offset, and
 * the log start offset unless the records never reached the log's checks
 * (Kafka's ReplicaManager answers those with UNKNOWN_LOG_APPEND_INFO). */
static void refused_offsets(kiq_topic_t *topic, kiq_produce_response_responses_partition_responses_t *out)
{
    out->base_offset = -1;
    out->log_start_offset = -1;
    switch (out->error_code) {
    case KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION:
    case KIQ_ERR_NOT_LEADER_OR_FOLLOWER:
    case KIQ_ERR_MESSAGE_TOO_LARGE:
    case KIQ_ERR_RECORD_LIST_TOO_LARGE:
    case KIQ_ERR_CORRUPT_MESSAGE:
    case KIQ_ERR_KAFKA_STORAGE_ERROR:
    case KIQ_ERR_INVALID_REQUIRED_ACKS: return;
    default: break;
    }
    kiq_partition_log_t *log =
        topic && out->index >= 0 && out->index < topic->npartitions ? topic->partitions[out->index]->log : NULL;
    if (log) out->log_start_offset = kiq_partition_log_start_offset(log);
}

/* One partition an acks=all produce waits on. */
typedef struct produce_wait {
    kiq_topic_t *topic; /* a reference */
    int32_t partition;
    int64_t required; /* the high watermark that commits its records */
    /* the leader epoch read before the append: a leadership lost and won
     * back meanwhile may have replaced those offsets (a truncation) */
    int32_t leader_epoch;
    kiq_produce_response_responses_partition_responses_t *out;
    bool done;
} produce_wait_t;

typedef struct produce_op {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    kiq_produce_response_t *resp;
    produce_wait_t *waits;
    int nwaits;
} produce_op_t;

/* Settles the waits that can be settled (all of them when expired); true
 * when none is left. */
static bool produce_settle(kiq_broker_t *b, produce_wait_t *waits, int n, bool expired)
{
    bool all = true;
    for (int i = 0; i < n; i++) {
        produce_wait_t *w = &waits[i];
        if (w->done) continue;
        kiq_partition_t *part = w->topic->partitions[w->partition];
        kiq_partition_log_t *log = part->log;
        if (!log || kiq_partition_replica_role(part->replica) != KIQ_REPLICA_LEADER ||
            kiq_partition_replica_leader_epoch(part->replica) != w->leader_epoch) {
            w->out->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
        } else if (kiq_partition_log_high_watermark(log) >= w->required) {
            /* committed, but the ISR may have shrunk below what was promised */
            if (kiq_partition_replica_isr_size(part->replica) < min_insync(b, w->topic))
                w->out->error_code = KIQ_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
        } else if (expired) {
            w->out->error_code = KIQ_ERR_REQUEST_TIMED_OUT;
        } else {
            all = false;
            continue;
        }
        w->done = true;
    }
    return all;
}

static void produce_release(produce_wait_t *waits, int n)
{
    for (int i = 0; i < n; i++) kiq_topic_unref(waits[i].topic);
}

/* Each partition of the response, now final, counted per topic (not
 * those of a topic unknown here: any name a client sends would become a
 * series) and announced as ANSWERED. */
static void answered(kiq_broker_t *b, kiq_request_t *r, const kiq_produce_response_t *out, int16_t acks)
{
    bool announce = kiq_observers_want(&b->observers, KIQ_POINT_ANSWERED);
    for (int32_t i = 0; i < out->responses_n; i++) {
        const kiq_produce_response_responses_t *tr = &out->responses[i];
        char topic[256];
        if (!tr->name.p || tr->name.len >= (int32_t)sizeof topic) continue;
        memcpy(topic, tr->name.p, (size_t)tr->name.len);
        topic[tr->name.len] = '\0';
        for (int32_t j = 0; j < tr->partition_responses_n; j++) {
            int16_t err = tr->partition_responses[j].error_code;
            if (err != KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION && err != KIQ_ERR_TOPIC_AUTHORIZATION_FAILED &&
                err != KIQ_ERR_INVALID_TOPIC_EXCEPTION)
                kiq_topic_counts_request(b->topic_counts, topic, false, err != 0);
        }
        for (int32_t j = 0; announce && j < tr->partition_responses_n; j++) {
            kiq_event_t e = kiq_event(KIQ_POINT_ANSWERED, b->node_id);
            e.request = r;
            e.topic = topic;
            e.partition = tr->partition_responses[j].index;
            e.first_offset = tr->partition_responses[j].base_offset;
            e.error = tr->partition_responses[j].error_code;
            e.extra = acks;
            kiq_observers_emit(&b->observers, &e);
        }
    }
}

static bool produce_try_complete(kiq_delayed_op_t *op, bool expired)
{
    produce_op_t *p = (produce_op_t *)op;
    if (!produce_settle(p->b, p->waits, p->nwaits, expired)) return false;
    produce_release(p->waits, p->nwaits);
    answered(p->b, p->r, p->resp, -1);
    p->r->t.completed = kiq_clock_mono_ns();
    kiq_request_respond(p->r, p->resp); /* frees p with the request's arena */
    return true;
}

/* Appends every partition's records (checks[k] for the k-th partition
 * data of the request) and answers, or parks an acks=all request until
 * its records are replicated; the handler's return code. */
static int produce_all(kiq_broker_t *b, kiq_request_t *r, const kiq_produce_request_t *req, kiq_produce_response_t *out,
                       const txn_check_t *checks)
{
    bool acks_valid = req->acks == 0 || req->acks == 1 || req->acks == -1;
    bool any_error = false;
    int k = 0;
    int total = 0, nwaits = 0;
    kiq_api_leader_nodes_t leaders = {0};
    for (int32_t i = 0; i < req->topic_data_n; i++)
        total += req->topic_data[i].partition_data_n > 0 ? req->topic_data[i].partition_data_n : 0;
    produce_wait_t *waits =
        req->acks == -1 ? kiq_arena_calloc(&r->arena, (size_t)(total ? total : 1), sizeof *waits) : NULL;
    uint64_t *appended = kiq_arena_calloc(&r->arena, (size_t)(total ? total : 1), sizeof *appended);
    int nappended = 0;

    out->responses_n = req->topic_data_n;
    out->responses = kiq_arena_calloc(&r->arena, (size_t)(req->topic_data_n > 0 ? req->topic_data_n : 0),
                                      sizeof *out->responses);
    for (int32_t i = 0; i < req->topic_data_n; i++) {
        const kiq_produce_request_topic_data_t *td = &req->topic_data[i];
        kiq_produce_response_responses_t *tr = &out->responses[i];
        kiq_produce_response_responses_init(tr);
        tr->name = td->name;
        tr->partition_responses_n = td->partition_data_n;
        tr->partition_responses = kiq_arena_calloc(
            &r->arena, (size_t)(td->partition_data_n > 0 ? td->partition_data_n : 0),
            sizeof *tr->partition_responses);
        kiq_topic_t *topic = acks_valid ? kiq_topics_get(b->topics, td->name) : NULL;
        for (int32_t j = 0; j < td->partition_data_n; j++) {
            kiq_produce_response_responses_partition_responses_t *pr = &tr->partition_responses[j];
            kiq_produce_response_responses_partition_responses_init(pr);
            if (acks_valid && checks[k].denied) {
                pr->index = td->partition_data[j].index;
                pr->error_code = checks[k++].denied;
                refused_offsets(NULL, pr);
            } else if (!acks_valid) {
                pr->index = td->partition_data[j].index;
                pr->error_code = KIQ_ERR_INVALID_REQUIRED_ACKS;
                refused_offsets(NULL, pr);
            } else {
                int64_t required;
                int32_t index = td->partition_data[j].index;
                int32_t epoch = waits && topic && index >= 0 && index < topic->npartitions
                                    ? kiq_partition_replica_leader_epoch(topic->partitions[index]->replica)
                                    : -1;
                produce_partition(b, r, topic, req->acks, &checks[k++], &td->partition_data[j], pr, &required);
                /* a partition of the cluster's that has no replica here */
                if (pr->error_code == KIQ_ERR_UNKNOWN_TOPIC_OR_PARTITION && b->cluster && td->name.p &&
                    pr->index >= 0 &&
                    pr->index < kiq_metadata_cache_partition_count(b->metadata, td->name.p, (size_t)td->name.len))
                    pr->error_code = KIQ_ERR_NOT_LEADER_OR_FOLLOWER;
                /* the coordinator's refusal never reached the log: no log start offset */
                if (pr->error_code) refused_offsets(checks[k - 1].err ? NULL : topic, pr);
                if (pr->error_code == KIQ_ERR_NOT_LEADER_OR_FOLLOWER && r->header.api_version >= 10)
                    kiq_api_leader_hint(b, r, td->name, pr->index, &pr->current_leader.leader_id,
                                        &pr->current_leader.leader_epoch, &leaders);
                if (pr->error_code == KIQ_ERR_NONE && appended)
                    appended[nappended++] = kiq_purgatory_key(topic->name, strlen(topic->name), pr->index);
                if (waits && pr->error_code == KIQ_ERR_NONE && required >= 0) {
                    atomic_fetch_add(&topic->refs, 1);
                    waits[nwaits++] = (produce_wait_t){topic, index, required, epoch, pr, false};
                }
            }
            any_error |= pr->error_code != KIQ_ERR_NONE;
        }
        kiq_topic_unref(topic);
    }
    /* Waiting followers and (alone in the ISR: committed) consumers, tried
     * in this thread (no lock held here: one wake-up fewer), once every
     * partition of the request is in: a fetch of several of them then
     * takes them all in one answer rather than the first alone. */
    for (int i = 0; i < nappended; i++) kiq_purgatory_notify_here(b->purgatory, appended[i]);
    out->node_endpoints_n = leaders.n;
    out->node_endpoints = kiq_arena_calloc(&r->arena, (size_t)(leaders.n ? leaders.n : 1), sizeof *out->node_endpoints);
    for (int i = 0; i < leaders.n; i++) {
        kiq_produce_response_node_endpoints_init(&out->node_endpoints[i]);
        out->node_endpoints[i].node_id = leaders.nodes[i].id;
        out->node_endpoints[i].host = KIQ_STR(leaders.nodes[i].host);
        out->node_endpoints[i].port = leaders.nodes[i].port;
    }
    if (nwaits > 0) {
        if (produce_settle(b, waits, nwaits, false)) {
            produce_release(waits, nwaits);
            answered(b, r, out, req->acks);
            return KIQ_HANDLER_RESPOND;
        }
        produce_op_t *op = kiq_arena_alloc(&r->arena, sizeof *op);
        op->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)(req->timeout_ms > 0 ? req->timeout_ms : 0) * 1000000;
        op->op.kind = KIQ_DELAYED_PRODUCE;
        op->op.try_complete = produce_try_complete;
        uint64_t *keys = kiq_arena_calloc(&r->arena, (size_t)nwaits, sizeof *keys);
        for (int i = 0; i < nwaits; i++)
            keys[i] = kiq_purgatory_key(waits[i].topic->name, strlen(waits[i].topic->name), waits[i].partition);
        op->op.keys = keys;
        op->op.nkeys = nwaits;
        op->b = b;
        op->r = r;
        op->resp = out;
        op->waits = waits;
        op->nwaits = nwaits;
        kiq_api_handled(b, r); /* r is the purgatory's from the park on */
        /* no lock held here: its first try runs in this thread, without
         * waking the purgatory's for it */
        kiq_purgatory_park_here(b->purgatory, &op->op);
        return KIQ_HANDLER_PARKED;
    }
    answered(b, r, out, req->acks);
    if (req->acks == 0) {
        /* No response with acks=0; an error closes the connection so the
         * client notices (Kafka does the same). */
        return any_error ? KIQ_HANDLER_CLOSE : KIQ_HANDLER_NO_RESPONSE;
    }
    return KIQ_HANDLER_RESPOND;
}

/* A produce whose transactional records wait for their coordinators'
 * answers; lives in the request's arena. */
typedef struct txn_check_op {
    kiq_delayed_op_t op; /* first: the purgatory hands this pointer back */
    kiq_broker_t *b;
    kiq_request_t *r;
    const kiq_produce_request_t *req;
    kiq_produce_response_t *out;
    txn_check_t *checks;
    int n;
} txn_check_op_t;

static bool txn_check_try_complete(kiq_delayed_op_t *op, bool expired)
{
    txn_check_op_t *t = (txn_check_op_t *)op;
    bool all = true;
    for (int i = 0; i < t->n; i++) {
        txn_check_t *c = &t->checks[i];
        if (!c->asking) continue;
        if (kiq_txn_check_partition(t->b->txns, t->req->transactional_id, c->producer_id, c->producer_epoch, c->topic,
                                    c->partition, c->add, c->guard, &c->err) == 0) {
            if (!expired) {
                all = false;
                continue;
            }
            c->err = KIQ_ERR_REQUEST_TIMED_OUT; /* no answer in time */
        }
        txn_check_answered(t->b, t->r, t->req->transactional_id, c);
    }
    if (!all) return false;
    kiq_api_finish(t->r, t->out, produce_all(t->b, t->r, t->req, t->out, t->checks));
    return true;
}

int kiq_api_produce_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_produce_request_t *req = request;
    int n = 0;
    for (int32_t i = 0; i < req->topic_data_n; i++)
        n += req->topic_data[i].partition_data_n > 0 ? req->topic_data[i].partition_data_n : 0;
    txn_check_t *checks = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *checks);
    /* as Kafka: WRITE on the transactional id for the whole request, then
     * on each topic */
    bool txn_allowed = !req->transactional_id.p ||
                       kiq_api_allowed(b, r, KIQ_OP_WRITE, KIQ_RES_TRANSACTIONAL_ID, req->transactional_id);
    for (int32_t i = 0, k = 0; i < req->topic_data_n; i++) {
        int16_t denied = !txn_allowed ? KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                         : !kiq_api_allowed(b, r, KIQ_OP_WRITE, KIQ_RES_TOPIC, req->topic_data[i].name)
                             ? KIQ_ERR_TOPIC_AUTHORIZATION_FAILED
                             : 0;
        for (int32_t j = 0; j < req->topic_data[i].partition_data_n; j++) checks[k++].denied = denied;
    }
    int asking = 0;
    if (req->transactional_id.p && (req->acks == 0 || req->acks == 1 || req->acks == -1)) {
        int k = 0;
        for (int32_t i = 0; i < req->topic_data_n; i++)
            for (int32_t j = 0; j < req->topic_data[i].partition_data_n; j++, k++) {
                if (checks[k].denied) continue;
                txn_check_begin(b, r, req->transactional_id, req->topic_data[i].name,
                                &req->topic_data[i].partition_data[j], &checks[k]);
                asking += checks[k].asking;
            }
    }
    if (asking == 0) return produce_all(b, r, req, response, checks);
    txn_check_op_t *t = kiq_arena_alloc(&r->arena, sizeof *t);
    /* the producer's request.timeout.ms is well above this; the answer
     * takes one round trip */
    t->op.deadline_ns = kiq_clock_mono_ns() + (int64_t)TXN_CHECK_TIMEOUT_MS * 1000000;
    t->op.kind = KIQ_DELAYED_PRODUCE;
    t->op.try_complete = txn_check_try_complete;
    uint64_t *keys = kiq_arena_calloc(&r->arena, (size_t)asking + 1, sizeof *keys);
    int nkeys = 0;
    bool adding = false;
    for (int i = 0; i < n; i++)
        if (checks[i].asking) {
            keys[nkeys++] = kiq_purgatory_key(checks[i].topic, strlen(checks[i].topic), checks[i].partition);
            adding |= checks[i].add;
        }
    /* an add by the coordinator here is answered once its state is replicated */
    if (adding)
        keys[nkeys++] = kiq_purgatory_key(KIQ_TXN_TOPIC, strlen(KIQ_TXN_TOPIC),
                                          kiq_txn_coordinator_partition_of(b->txns, req->transactional_id));
    t->op.keys = keys;
    t->op.nkeys = nkeys;
    t->b = b;
    t->r = r;
    t->req = req;
    t->out = response;
    t->checks = checks;
    t->n = n;
    kiq_api_handled(b, r); /* r is the purgatory's from the park on */
    kiq_purgatory_park(b->purgatory, &t->op);
    return KIQ_HANDLER_PARKED;
}
