-- EndTxn (26): a transactional producer commits or aborts its transaction;
-- the coordinator writes PrepareCommit/PrepareAbort, answers, then has the
-- markers written. v2 adds PRODUCER_FENCED; v3+ is flexible; v4 adds
-- TRANSACTION_ABORTABLE. (v5, Kafka 4.0's transaction version 2, bumps the
-- epoch per transaction and is not served.)

return {
  key = 26, name = "EndTxn",
  versions = "0-4",
  flexible = "3+",
  request = {
    { "transactional_id", "string" },
    { "producer_id", "int64" },
    { "producer_epoch", "int16" },
    { "committed", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
  },
}
