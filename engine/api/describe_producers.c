/* DescribeProducers: the idempotent producers a partition's leader keeps
 * state for (producer id, epoch, its last batch's sequence and timestamp),
 * the coordinator epoch of its last transaction marker and where its open
 * transaction starts (-1: none), which is how Kafka's admin tools find a
 * hanging transaction. */
#include "api/api.h"
#include "api/authorize.h"
#include "replica/leader.h"

static void describe_partition(kiq_request_t *r, kiq_topic_t *topic, int32_t index,
                               kiq_describe_producers_response_topics_partitions_t *out)
{
    out->partition_index = index;
    kiq_partition_t *part;
    kiq_partition_log_t *log;
    if ((out->error_code = kiq_replica_led_partition(topic, index, -1, &part, &log)) != 0) return;
    kiq_producer_entry_t *es;
    size_t n = kiq_partition_log_producers(log, &r->arena, &es);
    out->active_producers_n = (int32_t)n;
    out->active_producers = kiq_arena_calloc(&r->arena, n ? n : 1, sizeof *out->active_producers);
    for (size_t i = 0; i < n; i++) {
        kiq_describe_producers_response_topics_partitions_active_producers_t *o = &out->active_producers[i];
        kiq_describe_producers_response_topics_partitions_active_producers_init(o);
        o->producer_id = es[i].producer_id;
        o->producer_epoch = es[i].epoch;
        o->coordinator_epoch = es[i].coordinator_epoch;
        o->current_txn_start_offset = es[i].txn_first_offset;
        if (es[i].nbatches > 0) {
            const kiq_producer_batch_t *last = &es[i].batches[es[i].nbatches - 1];
            o->last_sequence = last->last_seq;
            o->last_timestamp = last->timestamp;
        }
    }
}

int kiq_api_describe_producers_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_describe_producers_request_t *req = request;
    kiq_describe_producers_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    out->topics_n = n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)(n ? n : 1), sizeof *out->topics);
    for (int32_t i = 0; i < n; i++) {
        const kiq_describe_producers_request_topics_t *t = &req->topics[i];
        kiq_describe_producers_response_topics_t *tr = &out->topics[i];
        kiq_describe_producers_response_topics_init(tr);
        tr->name = t->name;
        int32_t np = t->partition_indexes_n > 0 ? t->partition_indexes_n : 0;
        tr->partitions_n = np;
        tr->partitions = kiq_arena_calloc(&r->arena, (size_t)(np ? np : 1), sizeof *tr->partitions);
        kiq_topic_t *topic = kiq_topics_get(b->topics, t->name);
        /* as Kafka: READ on the topic */
        bool allowed = kiq_api_allowed(b, r, KIQ_OP_READ, KIQ_RES_TOPIC, t->name);
        for (int32_t j = 0; j < np; j++) {
            kiq_describe_producers_response_topics_partitions_init(&tr->partitions[j]);
            if (allowed) {
                describe_partition(r, topic, t->partition_indexes[j], &tr->partitions[j]);
                continue;
            }
            tr->partitions[j].partition_index = t->partition_indexes[j];
            tr->partitions[j].error_code = KIQ_ERR_TOPIC_AUTHORIZATION_FAILED;
        }
        kiq_topic_unref(topic);
    }
    return KIQ_HANDLER_RESPOND;
}
