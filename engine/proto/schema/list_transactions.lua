-- ListTransactions (66): the transactional ids this broker coordinates
-- (kafka-transactions.sh list; the admin client asks every broker), by
-- state and producer id, and from v1 only those running longer than
-- duration_filter ms. Flexible from v0.

return {
  key = 66, name = "ListTransactions",
  versions = "0-1",
  flexible = "0+",
  request = {
    { "state_filters", "[]string" },
    { "producer_id_filters", "[]int64" },
    { "duration_filter", "int64", v = "1+", default = -1 },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "unknown_state_filters", "[]string" },
    { "transaction_states", "[]", fields = {
        { "transactional_id", "string" },
        { "producer_id", "int64" },
        { "transaction_state", "string" },
    } },
  },
}
