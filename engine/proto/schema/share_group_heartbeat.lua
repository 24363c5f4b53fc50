-- ShareGroupHeartbeat (76): a share group's (KIP-932) join, heartbeat and
-- leave in one, like ConsumerGroupHeartbeat but without revocation: in a
-- share group a partition may be assigned to several members at once. v0
-- was Kafka 4.0's early access, removed in 4.1; v1 is the stable one.

local topic_partitions = {
  { "topic_id", "uuid" },
  { "partitions", "[]int32" },
}

return {
  key = 76, name = "ShareGroupHeartbeat",
  versions = "1",
  flexible = "0+",
  request = {
    { "group_id", "string" },
    { "member_id", "string" },
    { "member_epoch", "int32" },
    { "rack_id", "string", null = "0+", default = "null" },
    { "subscribed_topic_names", "[]string", null = "0+", default = "null" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "member_id", "string", null = "0+", default = "null" },
    { "member_epoch", "int32" },
    { "heartbeat_interval_ms", "int32" },
    { "assignment", "struct", null = "0+", default = "null", fields = {
        { "topic_partitions", "[]", fields = topic_partitions },
    } },
  },
}
