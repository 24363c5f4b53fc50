-- ListPartitionReassignments (46): the reassignments in progress (KIP-455;
-- kafka-reassign-partitions --verify and --list): each partition's replica
-- set with the replicas being added and removed. A null topic list asks
-- for every partition; only partitions being reassigned are answered.
-- Brokers forward it to the controller; flexible from v0.

return {
  key = 46, name = "ListPartitionReassignments",
  versions = "0",
  flexible = "0+",
  request = {
    { "timeout_ms", "int32", default = 60000 },
    { "topics", "[]", null = "0+", default = "null", fields = {
        { "name", "string" },
        { "partition_indexes", "[]int32" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "replicas", "[]int32" },
            { "adding_replicas", "[]int32" },
            { "removing_replicas", "[]int32" },
        } },
    } },
  },
}
