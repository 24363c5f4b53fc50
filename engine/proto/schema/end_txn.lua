-- EndTxn (26): a transactional producer commits or aborts its transaction;
-- the coordinator writes PrepareCommit/PrepareAbort, answers, then has the
-- markers written. v2 adds PRODUCER_FENCED; v3+ is flexible; v4 adds
-- TRANSACTION_ABORTABLE. v5 is transactions v2 (KIP-890 part 2): the
-- coordinator bumps the producer's epoch at every end (a new producer id
-- when the epoch runs out) and answers with the id and epoch to go on with.

return {
  key = 26, name = "EndTxn",
  versions = "0-5",
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
    { "producer_id", "int64", v = "5+", default = -1 },
    { "producer_epoch", "int16", v = "5+", default = -1 },
  },
}
