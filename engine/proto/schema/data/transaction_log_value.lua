-- Value of a record in __transaction_state (after its int16 version): a
-- transactional id's producer, epoch, timeout, state (0 Empty, 1 Ongoing,
-- 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit, 5 CompleteAbort,
-- 6 Dead, 7 PrepareEpochFence) and the partitions of its transaction (null
-- when Empty). Version 1 is flexible with the previous and next producer
-- ids and the client's transaction version tagged.
return {
  name = "TransactionLogValue",
  versions = "0-1",
  flexible = "1+",
  fields = {
    { "producer_id", "int64" },
    { "previous_producer_id", "int64", v = "1+", default = -1, tag = 0, tagged = "1+" },
    { "next_producer_id", "int64", v = "1+", default = -1, tag = 1, tagged = "1+" },
    { "producer_epoch", "int16" },
    { "next_producer_epoch", "int16", v = "1+", default = -1, tag = 3, tagged = "1+" },
    { "transaction_timeout_ms", "int32" },
    { "transaction_status", "int8" },
    { "transaction_partitions", "[]", null = "0+", fields = {
        { "topic", "string" },
        { "partition_ids", "[]int32" },
    } },
    { "transaction_last_update_timestamp_ms", "int64" },
    { "transaction_start_timestamp_ms", "int64" },
    { "client_transaction_version", "int16", v = "1+", default = 0, tag = 2, tagged = "1+" },
  },
}
