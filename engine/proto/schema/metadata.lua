-- Metadata (3): brokers, topics, partitions and leaders. The full 0-13 range:
-- kafka-python probes with v0 to guess the broker version, and v10+ carries
-- topic ids. v9 and later are flexible; v13 adds a top-level error code
-- (KIP-1102's REBOOTSTRAP_REQUIRED; 0 here).

return {
  key = 3, name = "Metadata",
  versions = "0-13",
  flexible = "9+",
  request = {
    -- Null (v1+) asks for all topics; in v0 an empty list does.
    { "topics", "[]", null = "1+", fields = {
        { "topic_id", "uuid", v = "10+" },
        { "name", "string", null = "10+" },
    } },
    { "allow_auto_topic_creation", "bool", v = "4+", default = true },
    { "include_cluster_authorized_operations", "bool", v = "8-10" },
    { "include_topic_authorized_operations", "bool", v = "8+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "3+" },
    { "brokers", "[]", fields = {
        { "node_id", "int32" },
        { "host", "string" },
        { "port", "int32" },
        { "rack", "string", v = "1+", null = "1+", default = "null" },
    } },
    { "cluster_id", "string", v = "2+", null = "2+", default = "null" },
    { "controller_id", "int32", v = "1+", default = -1 },
    { "topics", "[]", fields = {
        { "error_code", "int16" },
        { "name", "string", null = "12+" },
        { "topic_id", "uuid", v = "10+" },
        { "is_internal", "bool", v = "1+" },
        { "partitions", "[]", fields = {
            { "error_code", "int16" },
            { "partition_index", "int32" },
            { "leader_id", "int32" },
            { "leader_epoch", "int32", v = "7+", default = -1 },
            { "replica_nodes", "[]int32" },
            { "isr_nodes", "[]int32" },
            { "offline_replicas", "[]int32", v = "5+" },
        } },
        { "topic_authorized_operations", "int32", v = "8+", default = -2147483648 },
    } },
    { "cluster_authorized_operations", "int32", v = "8-10", default = -2147483648 },
    { "error_code", "int16", v = "13+" },
  },
}
