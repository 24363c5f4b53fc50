-- ConsumerGroupHeartbeat (68): the new consumer protocol's one RPC (KIP-848):
-- a member joins (epoch 0), heartbeats with its epoch and what it owns, and
-- leaves (-1; -2 for a static member coming back). v1 (Kafka 4.0) adds the
-- regex subscription and wants a member id the client made (KIP-1082).
-- Fields a member sends null are unchanged since its last heartbeat.

return {
  key = 68, name = "ConsumerGroupHeartbeat",
  versions = "0-1",
  flexible = "0+",
  request = {
    { "group_id", "string" },
    { "member_id", "string" },
    { "member_epoch", "int32" },
    { "instance_id", "string", null = "0+", default = "null" },
    { "rack_id", "string", null = "0+", default = "null" },
    { "rebalance_timeout_ms", "int32", default = -1 },
    { "subscribed_topic_names", "[]string", null = "0+", default = "null" },
    { "subscribed_topic_regex", "string", v = "1+", null = "1+", default = "null" },
    { "server_assignor", "string", null = "0+", default = "null" },
    { "topic_partitions", "[]", null = "0+", default = "null", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]int32" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "member_id", "string", null = "0+", default = "null" },
    { "member_epoch", "int32" },
    { "heartbeat_interval_ms", "int32" },
    { "assignment", "struct", null = "0+", default = "null", fields = {
        { "topic_partitions", "[]", fields = {
            { "topic_id", "uuid" },
            { "partitions", "[]int32" },
        } },
    } },
  },
}
