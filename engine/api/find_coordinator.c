/* FindCoordinator for groups (key type 0) and transactional ids (1).
 * Standalone, this broker coordinates every one (it leads every partition
 * of __consumer_offsets and __transaction_state, created here on first use
 * as Kafka does). In cluster mode the coordinator is the leader of the
 * key's partition of that topic, as this broker's metadata shows it; the
 * topic is created through the controller on first use, the request parked
 * until this broker's metadata has it (api/topic_orders.h). v4 asks for
 * several keys at once; v6 knows share groups' key type 2
 * ("group:topicId:partition"): the share coordinator Kafka's brokers and
 * tools ask for is the leader of the key's __share_group_state partition,
 * where this broker's partition leaders write the state
 * (share/share_state.h). */
#include <inttypes.h>
#include <stdio.h>

#include "api/topic_orders.h"
#include "api/authorize.h"
#include "controller/metadata_cache.h"
#include "core/coordinator_key.h"
#include "core/error.h"
#include "core/uuid.h"
#include "group/group_coordinator.h"
#include "group/offsets_topic.h"
#include "server/controller_link.h"
#include "share/share_state.h"
#include "api/share_state_topic.h"
#include "txn/txn_coordinator.h"

enum { KEY_TYPE_GROUP = 0, KEY_TYPE_TRANSACTION = 1, KEY_TYPE_SHARE = 2 };

/* How long a FindCoordinator that created a coordinator's topic waits for
 * it to reach this broker's metadata before answering "not yet". */
#define TOPIC_WAIT_MS 2000

typedef struct coordinator {
    int32_t node_id;
    kiq_str_t host;
    int32_t port;
} coordinator_t;

/* A coordinator's topic as Kafka makes it. */
typedef struct coordinator_topic {
    const char *name;
    enum kiq_config_id partitions, replication_factor, segment_bytes;
    enum kiq_config_id min_isr; /* KIQ_CFG__COUNT: none of its own */
} coordinator_topic_t;

static const coordinator_topic_t offsets_topic = {KIQ_OFFSETS_TOPIC, KIQ_CFG_OFFSETS_TOPIC_NUM_PARTITIONS,
                                                  KIQ_CFG_OFFSETS_TOPIC_REPLICATION_FACTOR,
                                                  KIQ_CFG_OFFSETS_TOPIC_SEGMENT_BYTES, KIQ_CFG__COUNT};
static const coordinator_topic_t txn_topic = {KIQ_TXN_TOPIC, KIQ_CFG_TRANSACTION_STATE_LOG_NUM_PARTITIONS,
                                              KIQ_CFG_TRANSACTION_STATE_LOG_REPLICATION_FACTOR,
                                              KIQ_CFG_TRANSACTION_STATE_LOG_SEGMENT_BYTES,
                                              KIQ_CFG_TRANSACTION_STATE_LOG_MIN_ISR};

static int16_t check_key_type(int16_t version, int8_t key_type, kiq_str_t *message)
{
    if (key_type == KEY_TYPE_SHARE && version >= 6) return KIQ_ERR_NONE;
    if (key_type != KEY_TYPE_GROUP && key_type != KEY_TYPE_TRANSACTION) {
        *message = KIQ_STR("unknown key type");
        return KIQ_ERR_INVALID_REQUEST;
    }
    return KIQ_ERR_NONE;
}

/* The leader of key's partition of topic. */
static int16_t cluster_lookup(kiq_broker_t *b, kiq_request_t *r, const char *topic, kiq_str_t key, coordinator_t *c,
                              kiq_str_t *message)
{
    int32_t n = kiq_metadata_cache_partition_count(b->metadata, topic, strlen(topic));
    if (n <= 0) {
        if (!message->p) *message = kiq_request_str(r, "the coordinator's topic is being created");
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    *message = KIQ_STR_NULL;
    int32_t partition = kiq_coordinator_partition(key.p ? key.p : "", key.p ? (size_t)key.len : 0, n);
    kiq_cached_partition_t p;
    char host[256];
    int port;
    if (!kiq_metadata_cache_partition(b->metadata, topic, strlen(topic), partition, &p) || p.leader < 0 ||
        !kiq_metadata_cache_broker(b->metadata, p.leader, NULL, host, sizeof host, &port)) {
        char why[96];
        snprintf(why, sizeof why, "%s-%d has no leader", topic, partition);
        *message = kiq_request_str(r, why);
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    *c = (coordinator_t){p.leader, kiq_request_str(r, host), port};
    return KIQ_ERR_NONE;
}

/* A share coordinator key as Kafka's SharePartitionKey has it: a group,
 * a topic id and a partition, joined by ':'. */
static bool share_key_valid(kiq_str_t key)
{
    const char *p = key.p, *end = key.p + (key.len > 0 ? key.len : 0);
    const char *c1 = p ? memchr(p, ':', (size_t)(end - p)) : NULL;
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    if (!c1 || c1 == p || !c2 || c2 - c1 - 1 != 22 || c2 + 1 == end || end - c2 - 1 > 10) return false;
    char id[23];
    memcpy(id, c1 + 1, 22);
    id[22] = 0;
    kiq_uuid_t u;
    if (kiq_uuid_from_base64(id, &u) != 0) return false;
    for (const char *q = c2 + 1; q < end; q++)
        if (*q < '0' || *q > '9') return false;
    return true;
}

/* Key type 2: the leader of the key's __share_group_state partition, as
 * Kafka's share coordinator is (Kafka asks brokers for CLUSTER_ACTION). */
static int16_t share_lookup(kiq_broker_t *b, kiq_request_t *r, kiq_str_t key, coordinator_t *c, kiq_str_t *message)
{
    if (!kiq_api_cluster_allowed(b, r, KIQ_OP_CLUSTER_ACTION)) {
        *message = KIQ_STR_NULL;
        return KIQ_ERR_CLUSTER_AUTHORIZATION_FAILED;
    }
    if (!share_key_valid(key)) {
        *message = KIQ_STR("a share coordinator key is groupId:topicId:partition");
        return KIQ_ERR_INVALID_REQUEST;
    }
    *message = KIQ_STR_NULL;
    if (!b->cluster) {
        *c = (coordinator_t){b->node_id, kiq_request_str(r, b->advertised_host), b->advertised_port};
        return KIQ_ERR_NONE;
    }
    /* the topic comes on a share group's first use; asking makes it come */
    if (kiq_metadata_cache_partition_count(b->metadata, KIQ_SHARE_STATE_TOPIC, strlen(KIQ_SHARE_STATE_TOPIC)) <= 0)
        kiq_api_share_state_topic_ensure(b);
    return cluster_lookup(b, r, KIQ_SHARE_STATE_TOPIC, key, c, message);
}

/* Each key's coordinator; why: the reason the coordinator's topic could
 * not be created, for keys that find no coordinator (null: none). */
static int16_t lookup(kiq_broker_t *b, kiq_request_t *r, int8_t key_type, kiq_str_t key, kiq_str_t why,
                      coordinator_t *c, kiq_str_t *message)
{
    int16_t err = check_key_type(r->header.api_version, key_type, message);
    if (err) return err;
    if (key_type == KEY_TYPE_SHARE) return share_lookup(b, r, key, c, message);
    bool txn = key_type == KEY_TYPE_TRANSACTION;
    if (txn && (!key.p || key.len == 0)) {
        *message = KIQ_STR("a transactional id is required");
        return KIQ_ERR_INVALID_REQUEST;
    }
    /* as Kafka: DESCRIBE on the group or transactional id */
    if (!kiq_api_allowed(b, r, KIQ_OP_DESCRIBE, txn ? KIQ_RES_TRANSACTIONAL_ID : KIQ_RES_GROUP, key)) {
        *message = KIQ_STR_NULL;
        return txn ? KIQ_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED : KIQ_ERR_GROUP_AUTHORIZATION_FAILED;
    }
    *message = why;
    if (b->cluster) return cluster_lookup(b, r, txn ? KIQ_TXN_TOPIC : KIQ_OFFSETS_TOPIC, key, c, message);
    err = (int16_t)(txn ? kiq_txn_coordinator_ensure_topic(b->txns) : kiq_group_coordinator_ensure_topic(b->groups));
    if (err) {
        *message = kiq_request_error_message(r);
        return KIQ_ERR_COORDINATOR_NOT_AVAILABLE;
    }
    *c = (coordinator_t){b->node_id, kiq_request_str(r, b->advertised_host), b->advertised_port};
    return KIQ_ERR_NONE;
}

static void answer_all(kiq_broker_t *b, kiq_request_t *r, kiq_find_coordinator_response_t *out, kiq_str_t why)
{
    const kiq_find_coordinator_request_t *req = r->body;
    coordinator_t c;
    if (r->header.api_version < 4) {
        out->error_code = lookup(b, r, req->key_type, req->key, why, &c, &out->error_message);
        out->node_id = out->error_code ? -1 : c.node_id;
        out->host = out->error_code ? KIQ_STR("") : c.host;
        out->port = out->error_code ? -1 : c.port;
        return;
    }
    out->coordinators_n = req->coordinator_keys_n > 0 ? req->coordinator_keys_n : 0;
    out->coordinators = kiq_arena_calloc(&r->arena, (size_t)(out->coordinators_n ? out->coordinators_n : 1),
                                         sizeof *out->coordinators);
    for (int32_t i = 0; i < out->coordinators_n; i++) {
        kiq_find_coordinator_response_coordinators_t *e = &out->coordinators[i];
        kiq_find_coordinator_response_coordinators_init(e);
        e->key = req->coordinator_keys[i];
        e->error_code = lookup(b, r, req->key_type, e->key, why, &c, &e->error_message);
        e->node_id = e->error_code ? -1 : c.node_id;
        e->host = e->error_code ? KIQ_STR("") : c.host;
        e->port = e->error_code ? -1 : c.port;
    }
}

/* Once the controller decided on the coordinator's topic (ctx its
 * configs) and this broker's metadata shows it, or time is up. */
static void created(kiq_api_topic_orders_t *t)
{
    kiq_topic_configs_clear(t->ctx);
    const kiq_topic_order_t *o = &t->orders[0];
    bool failed = o->error && o->error != KIQ_ERR_TOPIC_ALREADY_EXISTS;
    answer_all(t->b, t->r, t->resp,
               failed ? (o->message.p ? o->message : KIQ_STR("cannot create the coordinator's topic")) : KIQ_STR_NULL);
}

/* Cluster mode, the coordinator's topic not known here: asks the
 * controller for it (its configured partitions and as many replicas as
 * asked for but no more than there are live brokers: Kafka refuses until
 * there are enough, and a one-broker cluster would then never get a
 * coordinator; compacted; min.insync.replicas at most its replicas), the
 * request parked until this broker's metadata has it. */
static int create_then_answer(kiq_broker_t *b, kiq_request_t *r, const coordinator_topic_t *ct,
                              kiq_find_coordinator_response_t *out)
{
    int live = kiq_metadata_cache_broker_count(b->metadata);
    int64_t rf = kiq_config_int(b->config, ct->replication_factor);
    if (rf > live) rf = live;
    if (rf < 1) {
        answer_all(b, r, out, KIQ_STR("no live brokers known yet"));
        return KIQ_HANDLER_RESPOND;
    }
    kiq_topic_configs_t *cfg = kiq_arena_calloc(&r->arena, 1, sizeof *cfg);
    char seg[32], isr[32];
    snprintf(seg, sizeof seg, "%" PRId64, kiq_config_int(b->config, ct->segment_bytes));
    int64_t min_isr = ct->min_isr == KIQ_CFG__COUNT ? -1 : kiq_config_int(b->config, ct->min_isr);
    snprintf(isr, sizeof isr, "%" PRId64, min_isr > rf ? rf : min_isr);
    if (kiq_topic_configs_set(cfg, "cleanup.policy", 14, "compact", 7) != 0 ||
        kiq_topic_configs_set(cfg, "segment.bytes", 13, seg, (int)strlen(seg)) != 0 ||
        (min_isr > 0 && kiq_topic_configs_set(cfg, "min.insync.replicas", 19, isr, (int)strlen(isr)) != 0)) {
        kiq_topic_configs_clear(cfg);
        answer_all(b, r, out, KIQ_STR("out of memory"));
        return KIQ_HANDLER_RESPOND;
    }
    kiq_api_topic_orders_t *t = kiq_api_topic_orders_new(b, r, out, 1, TOPIC_WAIT_MS);
    t->wait = true;
    t->shown = kiq_api_topic_led_here;
    t->fill = created;
    t->ctx = cfg;
    *kiq_api_topic_orders_add(t, 0) = (kiq_topic_order_t){.name = KIQ_STR(ct->name),
                                                          .partitions = (int32_t)kiq_config_int(b->config, ct->partitions),
                                                          .replication_factor = (int16_t)rf,
                                                          .configs = cfg};
    kiq_api_handled(b, r); /* r is the link's from here on */
    kiq_controller_link_create_topics(b, t->orders, 1, false, TOPIC_WAIT_MS, &r->arena, kiq_api_topic_orders_decided,
                                      t);
    return KIQ_HANDLER_PARKED;
}

int kiq_api_find_coordinator_handle(kiq_broker_t *b, kiq_request_t *r, const void *request, void *response)
{
    const kiq_find_coordinator_request_t *req = request;
    kiq_find_coordinator_response_t *out = response;
    bool any = r->header.api_version < 4 || req->coordinator_keys_n > 0;
    bool known_type = req->key_type == KEY_TYPE_GROUP || req->key_type == KEY_TYPE_TRANSACTION;
    if (b->cluster && any && known_type) {
        const coordinator_topic_t *ct = req->key_type == KEY_TYPE_TRANSACTION ? &txn_topic : &offsets_topic;
        if (kiq_metadata_cache_partition_count(b->metadata, ct->name, strlen(ct->name)) < 0)
            return create_then_answer(b, r, ct, out);
    }
    answer_all(b, r, out, KIQ_STR_NULL);
    return KIQ_HANDLER_RESPOND;
}
