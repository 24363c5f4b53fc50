-- DescribeTopicPartitions (75): topics and their partitions, paged by a
-- cursor (KIP-966) for clusters with very many partitions. An empty topic
-- list asks for all. Flexible from v0.

return {
  key = 75, name = "DescribeTopicPartitions",
  versions = "0",
  flexible = "0+",
  request = {
    { "topics", "[]", fields = {
        { "name", "string" },
    } },
    { "response_partition_limit", "int32", default = 2000 },
    { "cursor", "struct", null = "0+", default = "null", fields = {
        { "topic_name", "string" },
        { "partition_index", "int32" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "topics", "[]", fields = {
        { "error_code", "int16" },
        { "name", "string", null = "0+" },
        { "topic_id", "uuid" },
        { "is_internal", "bool" },
        { "partitions", "[]", fields = {
            { "error_code", "int16" },
            { "partition_index", "int32" },
            { "leader_id", "int32" },
            { "leader_epoch", "int32", default = -1 },
            { "replica_nodes", "[]int32" },
            { "isr_nodes", "[]int32" },
            -- KIP-966's eligible leader replicas: there are none here, and the
            -- handler sends empty lists as Kafka does (nullable by the schema only)
            { "eligible_leader_replicas", "[]int32", null = "0+", default = "null" },
            { "last_known_elr", "[]int32", null = "0+", default = "null" },
            { "offline_replicas", "[]int32" },
        } },
        { "topic_authorized_operations", "int32", default = -2147483648 },
    } },
    -- where the next page starts; null when this one ends the listing
    { "next_cursor", "struct", null = "0+", default = "null", fields = {
        { "topic_name", "string" },
        { "partition_index", "int32" },
    } },
  },
}
