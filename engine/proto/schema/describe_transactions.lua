-- DescribeTransactions (65): the coordinator's view of transactional ids
-- (kafka-transactions.sh describe): state, timeout, start, producer and
-- the partitions of the ongoing transaction. Flexible from v0.

return {
  key = 65, name = "DescribeTransactions",
  versions = "0",
  flexible = "0+",
  request = {
    { "transactional_ids", "[]string" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "transaction_states", "[]", fields = {
        { "error_code", "int16" },
        { "transactional_id", "string" },
        { "transaction_state", "string" },
        { "transaction_timeout_ms", "int32" },
        { "transaction_start_time_ms", "int64" },
        { "producer_id", "int64" },
        { "producer_epoch", "int16" },
        { "topics", "[]", fields = {
            { "topic", "string" },
            { "partitions", "[]int32" },
        } },
    } },
  },
}
