/* CreateTopics: this broker is the controller, so it creates topics itself.
 * Partition count and replication factor follow Kafka's rules and
 * defaults; the topic's configs are checked (INVALID_CONFIG naming the bad
 * one) and kept, and v5+ answers with the effective configs. */
#include <stdio.h>

#include "api/api.h"
#include "config/topic_config.h"
#include "core/error.h"
#include "server/log_retention.h"

static int16_t check_topic(kiq_broker_t *b, const kiq_create_topics_request_topics_t *t,
                           int32_t *partitions, int16_t *rf, kiq_topic_configs_t *cfg)
{
    *partitions = t->num_partitions;
    *rf = t->replication_factor;
    if (t->assignments_n > 0) {
        if (t->num_partitions != -1 || t->replication_factor != -1) {
            kiq_error_set("Both numPartitions or replicationFactor and replicasAssignments were set. "
                          "Both cannot be used at the same time.");
            return KIQ_ERR_INVALID_REQUEST;
        }
        *partitions = t->assignments_n;
        *rf = (int16_t)t->assignments[0].broker_ids_n;
        for (int32_t i = 0; i < t->assignments_n; i++) {
            const kiq_create_topics_request_topics_assignments_t *a = &t->assignments[i];
            if (a->partition_index != i || a->broker_ids_n != *rf) {
                kiq_error_set("partition assignments must cover partitions 0..%d with %d replicas each",
                              t->assignments_n - 1, *rf);
                return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
            }
            for (int32_t j = 0; j < a->broker_ids_n; j++)
                if (a->broker_ids[j] != b->node_id) {
                    kiq_error_set("Unknown broker %d in the replica assignment", a->broker_ids[j]);
                    return KIQ_ERR_INVALID_REPLICA_ASSIGNMENT;
                }
        }
    }
    if (*partitions == -1) *partitions = (int32_t)kiq_config_int(b->config, KIQ_CFG_NUM_PARTITIONS);
    if (*rf == -1) *rf = (int16_t)kiq_config_int(b->config, KIQ_CFG_DEFAULT_REPLICATION_FACTOR);
    if (*partitions <= 0) {
        kiq_error_set("Number of partitions must be larger than 0.");
        return KIQ_ERR_INVALID_PARTITIONS;
    }
    if (*rf <= 0) {
        kiq_error_set("Replication factor must be larger than 0.");
        return KIQ_ERR_INVALID_REPLICATION_FACTOR;
    }
    if (*rf > 1) {
        kiq_error_set("Replication factor: %d larger than available brokers: 1.", *rf);
        return KIQ_ERR_INVALID_REPLICATION_FACTOR;
    }
    for (int32_t i = 0; i < t->configs_n; i++) {
        kiq_str_t name = t->configs[i].name, value = t->configs[i].value;
        int err = kiq_topic_configs_set(cfg, name.p, name.len, value.p, value.p ? value.len : -1);
        if (err) return (int16_t)err;
    }
    return KIQ_ERR_NONE;
}

/* v5+: every topic config with its value and where it comes from. */
static void list_configs(kiq_broker_t *b, kiq_request_t *r, const kiq_topic_configs_t *cfg,
                         kiq_create_topics_response_topics_t *tr)
{
    tr->configs = kiq_arena_calloc(&r->arena, (size_t)kiq_topic_config_count, sizeof *tr->configs);
    tr->configs_n = kiq_topic_config_count;
    for (int i = 0; i < kiq_topic_config_count; i++) {
        kiq_create_topics_response_topics_configs_t *c = &tr->configs[i];
        kiq_create_topics_response_topics_configs_init(c);
        char buf[32];
        int source;
        const char *value = kiq_topic_config_effective(b->config, cfg, i, buf, sizeof buf, &source);
        c->name = kiq_api_str(r, kiq_topic_config_defs[i].name);
        c->value = kiq_api_str(r, value);
        c->config_source = (int8_t)source;
    }
}

int kiq_api_create_topics_handle(kiq_broker_t *b, kiq_request_t *r, const void *request,
                                 void *response)
{
    const kiq_create_topics_request_t *req = request;
    kiq_create_topics_response_t *out = response;
    int32_t n = req->topics_n > 0 ? req->topics_n : 0;
    out->topics_n = n;
    out->topics = kiq_arena_calloc(&r->arena, (size_t)n, sizeof *out->topics);
    for (int32_t i = 0; i < n; i++) {
        const kiq_create_topics_request_topics_t *t = &req->topics[i];
        kiq_create_topics_response_topics_t *tr = &out->topics[i];
        kiq_create_topics_response_topics_init(tr);
        tr->name = t->name;
        int32_t partitions;
        int16_t rf;
        kiq_topic_configs_t cfg = {0};
        kiq_error_clear();
        int16_t err = check_topic(b, t, &partitions, &rf, &cfg);
        for (int32_t j = 0; j < i && !err; j++)
            if (req->topics[j].name.len == t->name.len && t->name.p &&
                memcmp(req->topics[j].name.p, t->name.p, (size_t)t->name.len) == 0) {
                kiq_error_set("Create topics request from client contains a duplicate topic");
                err = KIQ_ERR_INVALID_REQUEST;
            }
        if (!err)
            err = (int16_t)kiq_topics_create_with_configs(b->topics, t->name, partitions, rf, &cfg,
                                                          req->validate_only);
        tr->error_code = err;
        if (err) {
            tr->error_message = kiq_api_error_message(r);
            kiq_topic_configs_clear(&cfg);
            continue;
        }
        tr->num_partitions = partitions;
        tr->replication_factor = rf;
        if (r->header.api_version >= 5) list_configs(b, r, &cfg, tr);
        kiq_topic_configs_clear(&cfg);
        kiq_topic_t *topic = req->validate_only ? NULL : kiq_topics_get(b->topics, t->name);
        if (topic) kiq_log_retention_apply_topic(topic, b->config);
        if (topic) {
            tr->topic_id = topic->id;
            kiq_topic_unref(topic);
        }
    }
    return KIQ_HANDLER_RESPOND;
}
