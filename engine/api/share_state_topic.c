/* __share_group_state in a cluster; see share_state_topic.h. */
#include "api/share_state_topic.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/metadata_cache.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/say.h"
#include "server/controller_link.h"
#include "txn/broker_peers.h"

#define CREATE_TIMEOUT_MS 10000
#define WRITE_TIMEOUT_MS 10000

/* One ask for the topic, alive until the controller decided. */
typedef struct create {
    kiq_broker_t *b;
    kiq_arena_t arena;
    kiq_topic_configs_t cfg;
    kiq_topic_order_t order;
} create_t;

static void created(void *ctx)
{
    create_t *c = ctx;
    if (c->order.error && c->order.error != KIQ_ERR_TOPIC_ALREADY_EXISTS)
        KIQ_WARN_LIMITED("cannot create " KIQ_SHARE_STATE_TOPIC ": %s (share state stays in memory until it is)",
                         kiq_error_name(c->order.error));
    atomic_store(&c->b->share_state_asked, false);
    kiq_topic_configs_clear(&c->cfg);
    kiq_arena_reset(&c->arena);
    free(c);
}

void kiq_api_share_state_topic_ensure(kiq_broker_t *b)
{
    if (!b->cluster ||
        kiq_metadata_cache_partition_count(b->metadata, KIQ_SHARE_STATE_TOPIC, strlen(KIQ_SHARE_STATE_TOPIC)) >= 0)
        return;
    int live = kiq_metadata_cache_broker_count(b->metadata);
    int64_t rf = kiq_config_int(b->config, KIQ_CFG_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR);
    if (rf > live) rf = live;
    if (rf < 1 || atomic_exchange(&b->share_state_asked, true)) return;
    create_t *c = calloc(1, sizeof *c);
    if (!c) {
        atomic_store(&b->share_state_asked, false);
        return;
    }
    c->b = b;
    kiq_arena_init(&c->arena);
    char seg[32], isr[32];
    snprintf(seg, sizeof seg, "%" PRId64, kiq_config_int(b->config, KIQ_CFG_SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES));
    int64_t min_isr = kiq_config_int(b->config, KIQ_CFG_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR);
    snprintf(isr, sizeof isr, "%" PRId64, min_isr > rf ? rf : min_isr);
    if (kiq_topic_configs_set(&c->cfg, "cleanup.policy", 14, "compact", 7) != 0 ||
        kiq_topic_configs_set(&c->cfg, "segment.bytes", 13, seg, (int)strlen(seg)) != 0 ||
        kiq_topic_configs_set(&c->cfg, "min.insync.replicas", 19, isr, (int)strlen(isr)) != 0) {
        c->order.error = KIQ_ERR_UNKNOWN_SERVER_ERROR;
        created(c);
        return;
    }
    c->order = (kiq_topic_order_t){
        .name = KIQ_STR(KIQ_SHARE_STATE_TOPIC),
        .partitions = (int32_t)kiq_config_int(b->config, KIQ_CFG_SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS),
        .replication_factor = (int16_t)rf,
        .configs = &c->cfg};
    kiq_controller_link_create_topics(b, &c->order, 1, false, CREATE_TIMEOUT_MS, &c->arena, created, c);
}

/* One snapshot on its way to the leader of its partition. */
typedef struct write {
    kiq_peer_call_t call; /* first: the callback's pointer is the write's */
    kiq_arena_t arena;
    kiq_wr_t batch;
    kiq_produce_request_t req;
    kiq_produce_request_topic_data_t topic;
    kiq_produce_request_topic_data_partition_data_t part;
    kiq_produce_response_t resp;
    int32_t leader, index;
} write_t;

static void written(kiq_peer_call_t *call, int rc)
{
    write_t *w = (write_t *)call;
    int16_t err = 0;
    if (rc == 0 && w->resp.responses_n > 0 && w->resp.responses[0].partition_responses_n > 0)
        err = w->resp.responses[0].partition_responses[0].error_code;
    /* lost: the next change of the share-partition writes all of it again */
    if (rc != 0 || err)
        KIQ_WARN_LIMITED(KIQ_SHARE_STATE_TOPIC "-%d: a snapshot not written at broker %d: %s", w->index, w->leader,
                         rc != 0 ? call->error : kiq_error_name(err));
    kiq_wr_free(&w->batch);
    kiq_arena_reset(&w->arena);
    free(w);
}

static int remote(void *ctx, int32_t index, kiq_wr_t *batch)
{
    kiq_broker_t *b = ctx;
    kiq_cached_partition_t cp;
    kiq_peer_channel_t *line = NULL;
    if (!b->share_peers ||
        !kiq_metadata_cache_partition(b->metadata, KIQ_SHARE_STATE_TOPIC, strlen(KIQ_SHARE_STATE_TOPIC), index, &cp) ||
        cp.leader < 0 || cp.leader == b->node_id || !(line = kiq_broker_peers_line(b->share_peers, cp.leader))) {
        kiq_wr_free(batch);
        return kiq_error_set(KIQ_SHARE_STATE_TOPIC "-%d has no leader to write to", index);
    }
    write_t *w = calloc(1, sizeof *w);
    if (!w) {
        kiq_wr_free(batch);
        return kiq_error_set("out of memory");
    }
    w->batch = *batch;
    w->leader = cp.leader;
    w->index = index;
    kiq_arena_init(&w->arena);
    kiq_produce_request_init(&w->req);
    kiq_produce_request_topic_data_init(&w->topic);
    kiq_produce_request_topic_data_partition_data_init(&w->part);
    w->part.index = index;
    w->part.records = (kiq_bytes_t){w->batch.buf, (int32_t)w->batch.len};
    w->topic.name = KIQ_STR(KIQ_SHARE_STATE_TOPIC);
    w->topic.partition_data_n = 1;
    w->topic.partition_data = &w->part;
    w->req.acks = -1; /* on every in-sync replica: a new leader of the data partition reads its own */
    w->req.timeout_ms = WRITE_TIMEOUT_MS;
    w->req.topic_data_n = 1;
    w->req.topic_data = &w->topic;
    kiq_produce_response_init(&w->resp);
    w->call = (kiq_peer_call_t){.api_key = KIQ_API_PRODUCE, .version = -1, .request = &w->req, .arena = &w->arena,
                                .response = &w->resp, .done = written, .deadline_ns = kiq_clock_mono_ns() +
                                (int64_t)WRITE_TIMEOUT_MS * 1000000};
    kiq_peer_channel_submit(line, &w->call);
    return 0;
}

void kiq_api_share_state_ctx(kiq_broker_t *b, kiq_share_state_ctx_t *out)
{
    *out = (kiq_share_state_ctx_t){.topics = b->topics, .config = b->config, .cluster = b->cluster,
                                   .remote = b->cluster ? remote : NULL, .remote_ctx = b};
}
