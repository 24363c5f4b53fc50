/* FindCoordinator. Standalone, this broker coordinates every group (it
 * leads every partition of __consumer_offsets, created here on first use
 * as Kafka does). In cluster mode a group's coordinator is the leader of
 * its __consumer_offsets partition, as this broker's metadata shows it;
 * the topic is created through the controller on first use.
 * Transactions are not supported: their coordinator is never available.
 * v4 asks for several keys at once; v6 knows share groups (none here). */
#include <stdio.h>

#include "api/api.h"
#include "core/error.h"
#include "group/group.h"
#include "group/group_coordinator.h"
#include "group/offsets_topic.h"
#include "server/controller_link.h"
#include "controller/metadata_cache.h"

enum { KEY_TYPE_GROUP = 0, KEY_TYPE_TRANSACTION = 1, KEY_TYPE_SHARE = 2 };

/* How long a FindCoordinator that created __consumer_offsets waits for it
 * to reach this broker's metadata before answering "not yet". */
#define OFFSETS_TOPIC_WAIT_MS 2000

typedef struct coordinator {
    int32_t node_id;
    kiq_str_t host;
    int32_t port;
} coordinator_t;

static int16_t check_key_type(int16_t version, int8_t key_type, kiq_str_t *message)
{
    if (key_type == KEY_TYPE_TRANSACTION) {
        *message = KIQ_STR("transactions are not supported by this broker");
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    /* share groups (KIP-932) from v6: there is no share coordinator */
    if (key_type == KEY_TYPE_SHARE && version >= 6) {
        *message = KIQ_STR("share groups are not supported by this broker");
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    if (key_type != KEY_TYPE_GROUP) {
        *message = KIQ_STR("unknown key type");
        return KIQ_ERR_INVALID_REQUEST;
    }
    return KIQ_ERR_NONE;
}

/* Cluster mode: __consumer_offsets with offsets.topic.num.partitions and
 * as many replicas as offsets.topic.replication.factor asks for but no
 * more than there are live brokers (Kafka refuses until there are enough;
 * a one-broker cluster then never gets a coordinator). Its partition
 * count, or -1 with the reason in message. */
static int32_t cluster_offsets_topic(kiq_broker_t *b, kiq_request_t *r, kiq_str_t *message)
{
    int32_t n = kiq_metadata_cache_partition_count(b->metadata, KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC));
    if (n >= 0) return n;
    int live = kiq_metadata_cache_broker_count(b->metadata);
    int64_t rf = kiq_config_int(b->config, KIQ_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR);
    if (rf > live) rf = live;
    if (rf < 1) {
        *message = KIQ_STR("no live brokers known yet");
        return -1;
    }
    kiq_topic_order_t o = {.name = KIQ_STR(KIQ_OFFSETS_TOPIC),
                           .partitions = (int32_t)kiq_config_int(b->config, KIQ_CFG_OFFSETS_TOPIC_NUM_PARTITIONS),
                           .replication_factor = (int16_t)rf};
    kiq_controller_link_create_topics(b, &o, 1, false, OFFSETS_TOPIC_WAIT_MS, &r->arena);
    if (o.error && o.error != KIQ_ERR_TOPIC_ALREADY_EXISTS) {
        *message = o.message.p ? o.message : KIQ_STR("cannot create " KIQ_OFFSETS_TOPIC);
        return -1;
    }
    kiq_metadata_cache_wait_topic(b->metadata, KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC), true,
                                  OFFSETS_TOPIC_WAIT_MS);
    n = kiq_metadata_cache_partition_count(b->metadata, KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC));
    if (n < 0) *message = KIQ_STR(KIQ_OFFSETS_TOPIC " is being created");
    return n;
}

static int16_t cluster_lookup(kiq_broker_t *b, kiq_request_t *r, kiq_str_t key, coordinator_t *c,
                              kiq_str_t *message)
{
    int32_t n = cluster_offsets_topic(b, r, message);
    if (n <= 0) return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    int32_t partition = kiq_group_partition_for(key.p ? key.p : "", key.p ? (size_t)key.len : 0, n);
    kiq_cached_partition_t p;
    char host[256];
    int port;
    if (!kiq_metadata_cache_partition(b->metadata, KIQ_OFFSETS_TOPIC, strlen(KIQ_OFFSETS_TOPIC), partition, &p) ||
        p.leader < 0 || !kiq_metadata_cache_broker(b->metadata, p.leader, NULL, host, sizeof host, &port)) {
        char why[96];
        snprintf(why, sizeof why, KIQ_OFFSETS_TOPIC "-%d has no leader", partition);
        *message = kiq_request_str(r, why);
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    *c = (coordinator_t){p.leader, kiq_request_str(r, host), port};
    return KIQ_ERR_NONE;
}

static int16_t lookup(kiq_broker_t *b, kiq_request_t *r, int8_t key_type, kiq_str_t key, coordinator_t *c,
                      kiq_str_t *message)
{
    int16_t err = check_key_type(r->header.api_version, key_type, message);
    if (err) return err;
    if (b->cluster) return cluster_lookup(b, r, key, c, message);
    err = (int16_t)kiq_group_coordinator_ensure_topic(b->groups);
    if (err) {
        *message = kiq_request_error_message(r);
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    *c = (coordinator_t){b->node_id, kiq_request_str(r, b->advertised_host), b->advertised_port};
    return KIQ_ERR_NONE;
}

int kiq_api_find_coordinator_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_find_coordinator_request_t *req = request;
    kiq_find_coordinator_response_t *out = response;
    coordinator_t c;
    if (r->header.api_version < 4) {
        out->error_code = lookup(b, r, req->key_type, req->key, &c, &out->error_message);
        out->node_id = out->error_code ? -1 : c.node_id;
        out->host = out->error_code ? KIQ_STR("") : c.host;
        out->port = out->error_code ? -1 : c.port;
        return KIQ_HANDLER_RESPOND;
    }
    out->coordinators_n = req->coordinator_keys_n > 0 ? req->coordinator_keys_n : 0;
    out->coordinators = kiq_arena_calloc(&r->arena, (size_t)(out->coordinators_n ? out->coordinators_n : 1),
                                         sizeof *out->coordinators);
    for (int32_t i = 0; i < out->coordinators_n; i++) {
        kiq_find_coordinator_response_coordinators_t *e = &out->coordinators[i];
        kiq_find_coordinator_response_coordinators_init(e);
        e->key = req->coordinator_keys[i];
        e->error_code = lookup(b, r, req->key_type, e->key, &c, &e->error_message);
        e->node_id = e->error_code ? -1 : c.node_id;
        e->host = e->error_code ? KIQ_STR("") : c.host;
        e->port = e->error_code ? -1 : c.port;
    }
    return KIQ_HANDLER_RESPOND;
}
