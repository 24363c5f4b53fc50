/* ListOffsets: earliest (-2), latest (-1), max timestamp (-3, v7),
 * earliest local (-4, v8: the earliest, as there is no tiered storage),
 * latest tiered (-5, v9: none, offset -1) and the first offset at or after
 * a timestamp; another negative timestamp, or one sent below the version
 * that introduced it, is UNSUPPORTED_VERSION, and a partition named twice
 * INVALID_REQUEST, as in Kafka. Only the leader answers; as
 * consumers read up to the high watermark, latest is the high watermark
 * (the last stable offset for read_committed, v2+) and a timestamp found
 * at or above it is not there yet (-1). A leader
 * new in its term whose high watermark has not reached where the term
 * began answers clients OFFSET_NOT_AVAILABLE for those (Kafka's KIP-207),
 * so the offsets they see never go back across a leader change. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"
#include "core/say.h"
#include "record/batch.h"
#include "replica/leader.h"

enum { LATEST = -1, EARLIEST = -2, MAX_TIMESTAMP = -3, EARLIEST_LOCAL = -4, LATEST_TIERED = -5 };

/* The lowest version a special timestamp may be sent at; -1 for none. */
static int16_t special_since(int64_t ts)
{
    switch (ts) {
    case LATEST:
    case EARLIEST: return 1;
    case MAX_TIMESTAMP: return 7;
    case EARLIEST_LOCAL: return 8;
    case LATEST_TIERED: return 9;
    default: return -1;
    }
}

typedef struct time_search {
    int64_t target;
    int64_t offset, timestamp;
} time_search_t;

static int match_time(const kiq_record_t *rec, void *arg)
{
    time_search_t *ts = arg;
    if (rec->timestamp < ts->target) return 0;
    ts->offset = rec->offset;
    ts->timestamp = rec->timestamp;
    return 1;
}

/* The log finds the first batch whose newest timestamp reaches the target;
 * the answer is the first record in it that does, with its timestamp. */
static int first_record_at(kiq_partition_log_t *log, int64_t batch_offset, int64_t target,
                           kiq_list_offsets_response_topics_partitions_t *out)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    int64_t n = kiq_partition_log_read(log, batch_offset, 1, INT64_MAX, &w);
    time_search_t ts = {target, batch_offset, target};
    int rc = 0;
    if (n < 0 || w.err) {
        rc = n == KIQ_LOG_OUT_OF_RANGE ? 0 : -1; /* removed meanwhile: keep the batch answer */
    } else if (w.len >= KIQ_BATCH_HEADER_SIZE) {
        size_t blen = KIQ_BATCH_LOG_OVERHEAD + kiq_be32(w.buf + KIQ_BATCH_POS_LENGTH);
        if (blen > w.len ||
            kiq_batch_foreach_record(w.buf, blen, KIQ_BATCH_MAX_DECOMPRESSED, match_time, &ts) < 0)
            rc = -1;
    }
    kiq_wr_free(&w);
    out->offset = ts.offset;
    out->timestamp = ts.timestamp;
    return rc;
}

static void list_partition(kiq_topic_t *topic, int16_t v, bool client, bool committed,
                           const kiq_list_offsets_request_topics_partitions_t *in,
                           kiq_list_offsets_response_topics_partitions_t *out)
{
    out->partition_index = in->partition_index;
    if (in->timestamp < 0 && (special_since(in->timestamp) < 0 || v < special_since(in->timestamp))) {
        out->error_code = KIQ_ERR_UNSUPPORTED_VERSION;
        return;
    }
    kiq_partition_t *part;
    kiq_partition_log_t *log;
    if ((out->error_code = kiq_replica_led_partition(topic, in->partition_index, in->current_leader_epoch, &part, &log)) != 0)
        return;
    out->leader_epoch = kiq_partition_replica_leader_epoch(part->replica);
    out->timestamp = -1;
    /* read_committed consumers read up to the last stable offset */
    int64_t hw = committed ? kiq_partition_log_last_stable_offset(log) : kiq_partition_log_high_watermark(log);
    /* a new leader's high watermark may be below the last one's until its
     * followers fetch: a client must not see offsets go back (KIP-207) */
    bool hw_unknown = client && !kiq_partition_replica_hw_known(part->replica, log);
    switch (in->timestamp) {
    case LATEST:
        if (hw_unknown) {
            out->error_code = KIQ_ERR_OFFSET_NOT_AVAILABLE;
            return;
        }
        out->offset = hw;
        break;
    case EARLIEST:
    case EARLIEST_LOCAL: out->offset = kiq_partition_log_start_offset(log); break;
    case LATEST_TIERED:
        out->offset = -1;
        out->leader_epoch = -1;
        break;
    default: {
        int64_t ts = in->timestamp;
        if (ts == MAX_TIMESTAMP) {
            /* the batch holding the newest timestamp, in any segment (the
             * log may roll between counting and listing them) */
            kiq_log_segment_info_t *segs = NULL;
            int cap = 0, n = kiq_partition_log_segments(log, NULL, 0);
            while (n > cap) {
                cap = n;
                kiq_log_segment_info_t *grown = realloc(segs, (size_t)cap * sizeof *segs);
                if (!grown) {
                    free(segs);
                    out->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
                    return;
                }
                segs = grown;
                n = kiq_partition_log_segments(log, segs, cap);
            }
            ts = -1;
            for (int i = 0; i < n; i++)
                if (segs[i].max_timestamp > ts) ts = segs[i].max_timestamp;
            free(segs);
            if (ts < 0) {
                out->offset = -1;
                out->leader_epoch = -1;
                return;
            }
        }
        int64_t offset;
        if (kiq_partition_log_offset_for_time(log, ts, &offset) != 0 ||
            (offset >= 0 && first_record_at(log, offset, ts, out) != 0)) {
            KIQ_ERROR("ListOffsets %s-%d: %s", topic->name, in->partition_index, kiq_error_get());
            out->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
            return;
        }
        if (offset < 0 || out->offset >= hw) {
            /* nothing at or after that time: Kafka's answer names no epoch */
            out->offset = -1;
            out->timestamp = -1;
            out->leader_epoch = -1;
            if (hw_unknown) out->error_code = KIQ_ERR_OFFSET_NOT_AVAILABLE;
        }
    }
    }
}

/* Whether partition j of topic i is named anywhere else in the request. */
static bool duplicate(const kiq_list_offsets_request_t *req, int32_t i, int32_t j)
{
    kiq_str_t name = req->topics[i].name;
    int32_t p = req->topics[i].partitions[j].partition_index;
    for (int32_t a = 0; a < req->topics_n; a++) {
        kiq_str_t other = req->topics[a].name;
        if (!name.p || !other.p || other.len != name.len || memcmp(other.p, name.p, (size_t)name.len) != 0) continue;
        for (int32_t c = 0; c < req->topics[a].partitions_n; c++)
            if ((a != i || c != j) && req->topics[a].partitions[c].partition_index == p) return true;
    }
    return false;
}

int kiq_api_list_offsets_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                void *response)
{
    const kiq_list_offsets_request_t *req = request;
    kiq_list_offsets_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    out->topics_n = n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->topics);
    for (int32_t i = 0; i < n; i++) {
        const kiq_list_offsets_request_topics_t *t = &req->topics[i];
        kiq_list_offsets_response_topics_t *tr = &out->topics[i];
        kiq_list_offsets_response_topics_init(tr);
        tr->name = t->name;
        int32_t np = t->partitions_n > 0 ? t->partitions_n : 0;
        tr->partitions_n = np;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)np, sizeof *tr->partitions);
        kiq_topic_t *topic = kiq_topics_get(b->topics, t->name);
        /* as Kafka: DESCRIBE on the topic */
        bool allowed = kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, KIQ_RES_TOPIC, t->name);
        for (int32_t j = 0; j < np; j++) {
            kiq_list_offsets_response_topics_partitions_t *pr = &tr->partitions[j];
            kiq_list_offsets_response_topics_partitions_init(pr);
            if (!allowed) {
                pr->partition_index = t->partitions[j].partition_index;
                pr->error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
                continue;
            }
            if (duplicate(req, i, j)) {
                pr->partition_index = t->partitions[j].partition_index;
                pr->error_code = KIQ_ERR_INVALID_REQUEST;
                continue;
            }
            list_partition(topic, r->header.api_version, req->replica_id < 0,
                           r->header.api_version >= 2 && req->isolation_level == 1, &t->partitions[j], pr);
        }
        kiq_topic_unref(topic);
    }
    return KIQ_HANDLER_RESPOND;
}
