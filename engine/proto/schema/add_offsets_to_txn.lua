-- AddOffsetsToTxn (25): a transactional producer is about to commit a
-- group's offsets in its transaction (send_offsets_to_transaction): the
-- group's __consumer_offsets partition joins the transaction. v2 adds
-- PRODUCER_FENCED; v3+ is flexible; v4 adds TRANSACTION_ABORTABLE.

return {
  key = 25, name = "AddOffsetsToTxn",
  versions = "0-4",
  flexible = "3+",
  request = {
    { "transactional_id", "string" },
    { "producer_id", "int64" },
    { "producer_epoch", "int16" },
    { "group_id", "string" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
  },
}
