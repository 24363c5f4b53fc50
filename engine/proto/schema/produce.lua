-- Produce (0): 3-11. librdkafka enables RecordBatch v2 only when v3 is in
-- range (older versions carry the legacy message sets, which are not
-- stored); v9 is the first flexible version. v10 adds the new leader's
-- whereabouts to NOT_LEADER_OR_FOLLOWER answers (KIP-951); v11 only says
-- the client understands TRANSACTION_ABORTABLE; v12 is v11 whose
-- transactional records add their partition to the transaction (KIP-890
-- part 2, transactions v2) instead of needing AddPartitionsToTxn first.
-- Advertised from 0 (as
-- Kafka 4.0 does), served from 3: see api/api_table.c.

return {
  key = 0, name = "Produce",
  versions = "3-12",
  flexible = "9+",
  request = {
    { "transactional_id", "string", v = "3+", null = "3+", default = "null" },
    { "acks", "int16" },
    { "timeout_ms", "int32" },
    { "topic_data", "[]", fields = {
        { "name", "string" },
        { "partition_data", "[]", fields = {
            { "index", "int32" },
            { "records", "records", null = "0+" }, -- RecordBatch v2 bytes
        } },
    } },
  },
  response = {
    { "responses", "[]", fields = {
        { "name", "string" },
        { "partition_responses", "[]", fields = {
            { "index", "int32" },
            { "error_code", "int16" },
            { "base_offset", "int64" },
            { "log_append_time_ms", "int64", v = "2+", default = -1 },
            { "log_start_offset", "int64", v = "5+", default = -1 },
            { "record_errors", "[]", v = "8+", fields = {
                { "batch_index", "int32", v = "8+" },
                { "batch_index_error_message", "string", v = "8+", null = "8+", default = "null" },
            } },
            { "error_message", "string", v = "8+", null = "8+", default = "null" },
            { "current_leader", "struct", v = "10+", tag = 0, tagged = "10+", fields = {
                { "leader_id", "int32", v = "10+", default = -1 },
                { "leader_epoch", "int32", v = "10+", default = -1 },
            } },
        } },
    } },
    { "throttle_time_ms", "int32", v = "1+" },
    -- the leaders named in current_leader, so the client need not ask Metadata
    { "node_endpoints", "[]", v = "10+", tag = 0, tagged = "10+", fields = {
        { "node_id", "int32", v = "10+" },
        { "host", "string", v = "10+" },
        { "port", "int32", v = "10+" },
        { "rack", "string", v = "10+", null = "10+", default = "null" },
    } },
  },
}
