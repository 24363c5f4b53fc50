-- DescribeQuorum (55): 0-2. The KRaft quorum's state as its leader sees
-- it: leader, epoch, high watermark, and how far each voter and observer
-- has fetched (KIP-595; kafka-metadata-quorum describe). v1 adds each
-- replica's last fetch and caught-up times (KIP-836); v2 adds error
-- messages, replica directory ids and the voters' listeners (KIP-853). The
-- request is the same in every version. Flexible from v0.

-- One replica of the quorum, a voter or an observer.
local replica_state = {
  { "replica_id", "int32" },
  { "replica_directory_id", "uuid", v = "2+" },
  { "log_end_offset", "int64" }, -- -1 when unknown
  { "last_fetch_timestamp", "int64", v = "1+", default = -1 }, -- ms, leader's clock
  { "last_caught_up_timestamp", "int64", v = "1+", default = -1 },
}

return {
  key = 55, name = "DescribeQuorum",
  versions = "0-2",
  flexible = "0+",
  request = {
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
        } },
    } },
  },
  response = {
    { "error_code", "int16" },
    { "error_message", "string", v = "2+", null = "2+" },
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", v = "2+", null = "2+" },
            { "leader_id", "int32" }, -- -1 when unknown
            { "leader_epoch", "int32" },
            { "high_watermark", "int64" },
            { "current_voters", "[]", fields = replica_state },
            { "observers", "[]", fields = replica_state },
        } },
    } },
    { "nodes", "[]", v = "2+", fields = {
        { "node_id", "int32" },
        { "listeners", "[]", fields = {
            { "name", "string" },
            { "host", "string" },
            { "port", "uint16" },
        } },
    } },
  },
}
