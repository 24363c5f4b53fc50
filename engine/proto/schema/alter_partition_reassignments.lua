-- AlterPartitionReassignments (45): moves partitions to new replica sets
-- (KIP-455; kafka-reassign-partitions --execute and --cancel). A null
-- replica list cancels the partition's reassignment in progress. v1 adds
-- allow_replication_factor_change (KIP-860): false refuses a target whose
-- size differs from the current replica set's. Brokers forward it to the
-- controller; flexible from v0.

return {
  key = 45, name = "AlterPartitionReassignments",
  versions = "0-1",
  flexible = "0+",
  request = {
    { "timeout_ms", "int32", default = 60000 },
    { "allow_replication_factor_change", "bool", v = "1+", default = true },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "replicas", "[]int32", null = "0+", default = "null" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "allow_replication_factor_change", "bool", v = "1+", default = true },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "responses", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", null = "0+", default = "null" },
        } },
    } },
  },
}
