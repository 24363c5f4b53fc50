/* DeleteRecords: moves a partition's log start offset up (the records
 * below become unreadable at once; whole segments below it are deleted)
 * and answers the new low watermark. Only the leader does, and not past
 * the high watermark; followers follow the new start with their next
 * fetch. */
#include "api/api.h"
#include "api/authorize.h"
#include "core/error.h"
#include "core/say.h"
#include "replica/leader.h"

/* Kafka's "up to the high watermark" sentinel. */
#define TO_HIGH_WATERMARK (-1)

static void delete_partition(kiq_topic_t *topic, const kiq_delete_records_request_topics_partitions_t *in,
                             kiq_delete_records_response_topics_partitions_t *out, bool *moved)
{
    out->partition_index = in->partition_index;
    out->low_watermark = -1;
    kiq_partition_t *part;
    kiq_partition_log_t *log;
    if ((out->error_code = kiq_replica_led_partition(topic, in->partition_index, -1, &part, &log)) != 0) return;
    int64_t hw = kiq_partition_log_high_watermark(log);
    int64_t offset = in->offset == TO_HIGH_WATERMARK ? hw : in->offset;
    if (offset < 0 || offset > hw) {
        out->error_code = KIQ_ERR_OFFSET_OUT_OF_RANGE;
        return;
    }
    int64_t before = kiq_partition_log_start_offset(log);
    int rc = kiq_partition_log_advance_start(log, offset);
    if (rc == KIQ_LOG_OUT_OF_RANGE) {
        out->error_code = KIQ_ERR_OFFSET_OUT_OF_RANGE;
        return;
    }
    if (rc != 0) {
        KIQ_ERROR("DeleteRecords %s-%d: %s", topic->name, in->partition_index, kiq_error_get());
        out->error_code = KIQ_ERR_KAFKA_STORAGE_ERROR;
        return;
    }
    out->low_watermark = kiq_partition_log_start_offset(log);
    if (out->low_watermark != before) *moved = true;
}

int kiq_api_delete_records_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_delete_records_request_t *req = request;
    kiq_delete_records_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    bool moved = false;
    out->topics_n = n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->topics);
    for (int32_t i = 0; i < n; i++) {
        const kiq_delete_records_request_topics_t *t = &req->topics[i];
        kiq_delete_records_response_topics_t *tr = &out->topics[i];
        kiq_delete_records_response_topics_init(tr);
        tr->name = t->name;
        int32_t np = t->partitions_n > 0 ? t->partitions_n : 0;
        tr->partitions_n = np;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)np, sizeof *tr->partitions);
        kiq_topic_t *topic = kiq_topics_get(b->topics, t->name);
        /* as Kafka: DELETE on the topic */
        bool allowed = kiq_api_allowed(b, r, KIQ_OP_DELETE, KIQ_RES_TOPIC, t->name);
        for (int32_t j = 0; j < np; j++) {
            kiq_delete_records_response_topics_partitions_init(&tr->partitions[j]);
            if (allowed) {
                delete_partition(topic, &t->partitions[j], &tr->partitions[j], &moved);
                continue;
            }
            tr->partitions[j].partition_index = t->partitions[j].partition_index;
            tr->partitions[j].low_watermark = -1;
            tr->partitions[j].error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
        kiq_topic_unref(topic);
    }
    /* the new start must survive a restart */
    if (moved && kiq_topics_checkpoint_log_start(b->topics) != 0)
        KIQ_WARN("DeleteRecords: cannot save the log start offsets: %s", kiq_error_get());
    return KIQ_HANDLER_RESPOND;
}
