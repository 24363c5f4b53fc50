-- DescribeProducers (61): the producers with state on a partition (its
-- leader answers), for finding hanging transactions (KIP-664).

return {
  key = 61, name = "DescribeProducers",
  versions = "0",
  flexible = "0+",
  request = {
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partition_indexes", "[]int32" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", null = "0+", default = "null" },
            { "active_producers", "[]", fields = {
                { "producer_id", "int64" },
                { "producer_epoch", "int32" },
                { "last_sequence", "int32", default = -1 },
                { "last_timestamp", "int64", default = -1 },
                { "coordinator_epoch", "int32" },
                { "current_txn_start_offset", "int64", default = -1 },
            } },
        } },
    } },
  },
}
