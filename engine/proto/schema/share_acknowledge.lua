-- ShareAcknowledge (79): a share group member acknowledges records it was
-- delivered, without fetching (KIP-932): accept, release (for redelivery)
-- or reject, per offset range. Same share session as ShareFetch. v2 (Kafka
-- 4.2, KIP-1222) renews locks (type 4) and answers the lock's duration.

return {
  key = 79, name = "ShareAcknowledge",
  versions = "1-2",
  flexible = "0+",
  request = {
    { "group_id", "string", null = "0+", default = "null" },
    { "member_id", "string", null = "0+" },
    { "share_session_epoch", "int32" },
    { "is_renew_ack", "bool", v = "2+" },
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
    { "acquisition_lock_timeout_ms", "int32", v = "2+" },
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
