-- ShareAcknowledge (79): a share group member acknowledges records it was
-- delivered, without fetching (KIP-932): accept, release (for redelivery)
-- or reject, per offset range. Same share session as ShareFetch. v1 only
-- (v2's renewing goes with share.version 2, not served).

return {
  key = 79, name = "ShareAcknowledge",
  versions = "1",
  flexible = "0+",
  request = {
    { "group_id", "string", null = "0+", default = "null" },
    { "member_id", "string", null = "0+" },
    { "share_session_epoch", "int32" },
    { "topics", "[]", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "acknowledgement_batches", "[]", fields = {
                { "first_offset", "int64" },
                { "last_offset", "int64" },
                { "acknowledge_types", "[]int8" },
            } },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "responses", "[]", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", null = "0+", default = "null" },
            { "current_leader", "struct", fields = {
                { "leader_id", "int32" },
                { "leader_epoch", "int32" },
            } },
        } },
    } },
    { "node_endpoints", "[]", fields = {
        { "node_id", "int32" },
        { "host", "string" },
        { "port", "int32" },
        { "rack", "string", null = "0+", default = "null" },
    } },
  },
}
