-- TxnOffsetCommit (28): a transactional producer commits a group's offsets
-- inside its transaction (send_offsets_to_transaction); they stay pending
-- until the transaction's marker reaches the group's __consumer_offsets
-- partition. v2 adds the committed leader epoch; v3+ is flexible and
-- carries the group member (KIP-447), checked like OffsetCommit's; v4 only
-- adds TRANSACTION_ABORTABLE; v5 (transactions v2) adds the group's
-- partition to the transaction itself, with no AddOffsetsToTxn before.

return {
  key = 28, name = "TxnOffsetCommit",
  versions = "0-5",
  flexible = "3+",
  request = {
    { "transactional_id", "string" },
    { "group_id", "string" },
    { "producer_id", "int64" },
    { "producer_epoch", "int16" },
    { "generation_id", "int32", v = "3+", default = -1 },
    { "member_id", "string", v = "3+", default = "" },
    { "group_instance_id", "string", v = "3+", null = "3+", default = "null" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "committed_offset", "int64" },
            { "committed_leader_epoch", "int32", v = "2+", default = -1 },
            { "committed_metadata", "string", null = "0+" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
        } },
    } },
  },
}
