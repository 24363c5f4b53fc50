-- UpdateMetadata (6): 0-7. The controller pushes every broker the cluster's
-- live brokers and partition leadership, from which the broker answers
-- Metadata. Broker to broker only, not advertised to clients. v1 lists
-- endpoints per broker, v5 groups partitions by topic, v6 is flexible, v7
-- adds topic ids. v8 (KRaft controller flag, tagged type) is left out.

return {
  key = 6, name = "UpdateMetadata",
  versions = "0-7",
  flexible = "6+",
  request = {
    { "controller_id", "int32" },
    { "controller_epoch", "int32" },
    { "broker_epoch", "int64", v = "5+", default = -1 },
    -- v0-4: a flat list, each partition naming its topic.
    { "ungrouped_partition_states", "[]", v = "0-4", fields = {
        { "topic_name", "string", v = "0-4" },
        { "partition_index", "int32" },
        { "controller_epoch", "int32" },
        { "leader", "int32" },
        { "leader_epoch", "int32" },
        { "isr", "[]int32" },
        { "partition_epoch", "int32" }, -- Kafka's ZkVersion
        { "replicas", "[]int32" },
        { "offline_replicas", "[]int32", v = "4+" },
    } },
    { "topic_states", "[]", v = "5+", fields = {
        { "topic_name", "string" },
        { "topic_id", "uuid", v = "7+" },
        { "partition_states", "[]", fields = {
            { "partition_index", "int32" },
            { "controller_epoch", "int32" },
            { "leader", "int32" },
            { "leader_epoch", "int32" },
            { "isr", "[]int32" },
            { "partition_epoch", "int32" },
            { "replicas", "[]int32" },
            { "offline_replicas", "[]int32" },
        } },
    } },
    { "live_brokers", "[]", fields = {
        { "id", "int32" },
        -- v0 has one plaintext host and port per broker.
        { "v0_host", "string", v = "0" },
        { "v0_port", "int32", v = "0" },
        { "endpoints", "[]", v = "1+", fields = {
            { "port", "int32" },
            { "host", "string" },
            { "listener", "string", v = "3+" },
            { "security_protocol", "int16" }, -- 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL
        } },
        { "rack", "string", v = "2+", null = "2+", default = "null" },
    } },
    -- KafkaIQ's own, tagged (any other reader skips it): the dynamic
    -- configs the controller keeps, for the broker it is sent to: the
    -- cluster-wide broker defaults (resource ""), its own (its id) and
    -- every topic's. The whole set each time, so a lost round is repaired.
    { "kafkaiq_configs", "[]", v = "6+", tag = 10000, tagged = "6+", fields = {
        { "resource_type", "int8" }, -- 2 topic, 4 broker
        { "resource_name", "string" },
        { "name", "string" },
        { "value", "string" },
    } },
    -- KafkaIQ's own, tagged: the finalized feature levels (FeatureLevelRecord,
    -- KIP-584) and the metadata offset of the last change to them, which
    -- every broker's ApiVersions answers as FinalizedFeaturesEpoch.
    { "kafkaiq_features", "[]", v = "6+", tag = 10001, tagged = "6+", fields = {
        { "name", "string" },
        { "level", "int16" },
    } },
    { "kafkaiq_features_epoch", "int64", v = "6+", tag = 10002, tagged = "6+", default = -1 },
    -- KafkaIQ's own, tagged: the SCRAM credentials of the metadata log
    -- (UserScramCredentialRecord's fields), so a broker that is no voter
    -- authenticates SCRAM users as the controllers do. The whole set each time.
    { "kafkaiq_scram_credentials", "[]", v = "6+", tag = 10003, tagged = "6+", fields = {
        { "name", "string" },
        { "mechanism", "int8" },
        { "salt", "bytes" },
        { "stored_key", "bytes" },
        { "server_key", "bytes" },
        { "iterations", "int32" },
    } },
    -- KafkaIQ's own, tagged: the ACL bindings of the metadata log
    -- (AccessControlEntryRecord's fields), so every broker authorizes as
    -- the controllers do. The whole set each time.
    { "kafkaiq_acls", "[]", v = "6+", tag = 10004, tagged = "6+", fields = {
        { "id", "uuid" },
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "pattern_type", "int8" },
        { "principal", "string" },
        { "host", "string" },
        { "operation", "int8" },
        { "permission_type", "int8" },
    } },
    -- KafkaIQ's own, tagged: the delegation tokens of the metadata log, what
    -- a broker needs to authenticate SCRAM by token (the HMAC it computes
    -- from delegation.token.secret.key, the same on every node). The whole
    -- set each time.
    { "kafkaiq_delegation_tokens", "[]", v = "6+", tag = 10005, tagged = "6+", fields = {
        { "token_id", "string" },
        { "owner", "string" },
        { "expiry_timestamp_ms", "int64" },
    } },
    -- KafkaIQ's own, tagged: the client quotas of the metadata log, one
    -- entry per entity and key (a part's null name: its default), so every
    -- broker throttles as the controllers' image says. The whole set each time.
    { "kafkaiq_client_quotas", "[]", v = "6+", tag = 10006, tagged = "6+", fields = {
        { "has_user", "bool" },
        { "user", "string", null = "6+" },
        { "has_client_id", "bool" },
        { "client_id", "string", null = "6+" },
        { "key", "string" },
        { "value", "float64" },
    } },
  },
  response = {
    { "error_code", "int16" },
  },
}
