/* The API surface, one row per API: what each listener serves, at which
 * versions, with which handler. ApiVersions walks it, admission checks
 * against it, dispatch calls from it. Versions come from the API's schema
 * (engine/proto/schema) unless a row narrows them:
 *
 * - min: the lowest version served and advertised, where Kafka 4.0 dropped
 *   older ones (KIP-896) that no client's feature detection needs (those
 *   stay: librdkafka before 2.11 turns its group consumer on only with
 *   JoinGroup/SyncGroup/Heartbeat/LeaveGroup/FindCoordinator v0 in range,
 *   idempotence only with InitProducerId v0, timestamps with ListOffsets v1,
 *   commits with OffsetCommit 1-2 and OffsetFetch 1);
 * - advertised_min: lower still in ApiVersions only. librdkafka before
 *   2.11.1 compresses a batch only if the broker's Produce range starts at
 *   0, so Produce is advertised from 0 as Kafka 4.0 does (KAFKA-18659) and
 *   v0-2 requests are refused like any unsupported version.
 *
 * Immutable; read by any thread. */
#include "api/api.h"
#include "core/say.h"

enum { DATA = 1 << KIQ_LISTENER_DATA, CONTROL = 1 << KIQ_LISTENER_CONTROL, BOTH = DATA | CONTROL };

/* min / advertised_min: -1 for the schema's. */
static const kiq_api_row_t rows[] = {
    {KIQ_API_PRODUCE, -1, 0, DATA, kiq_api_produce_handle},
    {KIQ_API_FETCH, -1, -1, DATA, kiq_api_fetch_handle},
    {KIQ_API_LIST_OFFSETS, -1, -1, DATA, kiq_api_list_offsets_handle},
    {KIQ_API_METADATA, -1, -1, BOTH, kiq_api_metadata_handle},
    {KIQ_API_OFFSET_COMMIT, 2, -1, DATA, kiq_api_offset_commit_handle},
    {KIQ_API_OFFSET_FETCH, 1, -1, DATA, kiq_api_offset_fetch_handle},
    {KIQ_API_FIND_COORDINATOR, -1, -1, DATA, kiq_api_find_coordinator_handle},
    {KIQ_API_JOIN_GROUP, -1, -1, DATA, kiq_api_join_group_handle},
    {KIQ_API_HEARTBEAT, -1, -1, DATA, kiq_api_heartbeat_handle},
    {KIQ_API_LEAVE_GROUP, -1, -1, DATA, kiq_api_leave_group_handle},
    {KIQ_API_SYNC_GROUP, -1, -1, DATA, kiq_api_sync_group_handle},
    {KIQ_API_DESCRIBE_GROUPS, -1, -1, DATA, kiq_api_describe_groups_handle},
    {KIQ_API_LIST_GROUPS, -1, -1, DATA, kiq_api_list_groups_handle},
    {KIQ_API_API_VERSIONS, -1, -1, BOTH, kiq_api_versions_handle},
    /* forwarded by the other brokers to the one hosting the controller */
    {KIQ_API_CREATE_TOPICS, 2, -1, BOTH, kiq_api_create_topics_handle},
    {KIQ_API_DELETE_TOPICS, 1, -1, BOTH, kiq_api_delete_topics_handle},
    {KIQ_API_DELETE_RECORDS, -1, -1, DATA, kiq_api_delete_records_handle},
    {KIQ_API_INIT_PRODUCER_ID, -1, -1, DATA, kiq_api_init_producer_id_handle},
    {KIQ_API_OFFSET_FOR_LEADER_EPOCH, 2, -1, DATA, kiq_api_offset_for_leader_epoch_handle},
    /* the replicas ask the controller for a new topic's configs */
    {KIQ_API_DESCRIBE_CONFIGS, 1, -1, BOTH, kiq_api_describe_configs_handle},
    {KIQ_API_ALTER_CONFIGS, -1, -1, BOTH, kiq_api_alter_configs_handle},
    {KIQ_API_DESCRIBE_LOG_DIRS, 1, -1, DATA, kiq_api_describe_log_dirs_handle},
    {KIQ_API_CREATE_PARTITIONS, -1, -1, BOTH, kiq_api_create_partitions_handle},
    {KIQ_API_DELETE_GROUPS, -1, -1, DATA, kiq_api_delete_groups_handle},
    {KIQ_API_ELECT_LEADERS, -1, -1, BOTH, kiq_api_elect_leaders_handle},
    {KIQ_API_INCREMENTAL_ALTER_CONFIGS, -1, -1, BOTH, kiq_api_incremental_alter_configs_handle},
    {KIQ_API_OFFSET_DELETE, -1, -1, DATA, kiq_api_offset_delete_handle},
    {KIQ_API_DESCRIBE_CLUSTER, -1, -1, DATA, kiq_api_describe_cluster_handle},
    {KIQ_API_DESCRIBE_PRODUCERS, -1, -1, DATA, kiq_api_describe_producers_handle},
    {KIQ_API_CONSUMER_GROUP_DESCRIBE, -1, -1, DATA, kiq_api_consumer_group_describe_handle},
    {KIQ_API_GET_TELEMETRY_SUBSCRIPTIONS, -1, -1, DATA, kiq_api_get_telemetry_subscriptions_handle},
    {KIQ_API_PUSH_TELEMETRY, -1, -1, DATA, kiq_api_push_telemetry_handle},
    {KIQ_API_DESCRIBE_TOPIC_PARTITIONS, -1, -1, DATA, kiq_api_describe_topic_partitions_handle},
    /* the controller's, on the control plane of the broker hosting it */
    {KIQ_API_BROKER_REGISTRATION, -1, -1, CONTROL, kiq_api_broker_registration_handle},
    {KIQ_API_BROKER_HEARTBEAT, -1, -1, CONTROL, kiq_api_broker_heartbeat_handle},
    {KIQ_API_ALTER_PARTITION, -1, -1, CONTROL, kiq_api_alter_partition_handle},
    /* the controller's pushes to every broker */
    {KIQ_API_UPDATE_METADATA, -1, -1, CONTROL, kiq_api_update_metadata_handle},
    {KIQ_API_LEADER_AND_ISR, -1, -1, CONTROL, kiq_api_leader_and_isr_handle},
    {KIQ_API_STOP_REPLICA, -1, -1, CONTROL, kiq_api_stop_replica_handle},
};

const kiq_api_row_t *kiq_api_row(int16_t api_key, int listener)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].key == api_key) return rows[i].planes & (1 << listener) ? &rows[i] : NULL;
    return NULL;
}

int16_t kiq_api_row_min(const kiq_api_row_t *row, const kiq_api_codec_t *c)
{
    return row->min >= 0 ? row->min : c->min_version;
}

int16_t kiq_api_row_advertised_min(const kiq_api_row_t *row, const kiq_api_codec_t *c)
{
    return row->advertised_min >= 0 ? row->advertised_min : kiq_api_row_min(row, c);
}

bool kiq_api_row_serves(const kiq_api_row_t *row, const kiq_api_codec_t *c, int16_t version)
{
    return version >= kiq_api_row_min(row, c) && version <= c->max_version;
}

/* Processor thread: refuse what Kafka refuses before queueing. */
static int admit(kiq_request_t *r)
{
    const kiq_api_codec_t *c = kiq_api_codec(r->header.api_key);
    const kiq_api_row_t *row = c ? kiq_api_row(r->header.api_key, r->listener) : NULL;
    if (!row) {
        KIQ_WARN("connection %s: unknown api key %d (version %d, correlation id %d); closing",
                 r->peer, r->header.api_key, r->header.api_version, r->header.correlation_id);
        return -1;
    }
    int16_t v = r->header.api_version;
    if (!kiq_api_row_serves(row, c, v) && c->key != KIQ_API_API_VERSIONS) {
        KIQ_WARN("connection %s: unsupported %s version %d (supported %d-%d); closing", r->peer,
                 c->name, v, kiq_api_row_min(row, c), c->max_version);
        return -1;
    }
    r->codec = c;
    return 0;
}


static const kiq_broker_surface_t surface = {admit, kiq_api_handle};

/* A broker is the machinery of server/ serving this table. */
kiq_broker_t *kiq_broker_new(const kiq_config_t *config) { return kiq_broker_create(config, &surface); }
