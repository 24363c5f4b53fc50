-- JoinGroup (11): 0-9. librdkafka before 2.11 turns its group consumer on
-- only with v0 in range; v5 adds static membership; v6+ is flexible; v8
-- carries the member's reason for joining; v9 tells a leader when it may
-- skip the assignment.

return {
  key = 11, name = "JoinGroup",
  versions = "0-9",
  flexible = "6+",
  request = {
    { "group_id", "string" },
    { "session_timeout_ms", "int32" },
    { "rebalance_timeout_ms", "int32", v = "1+", default = -1 },
    { "member_id", "string" },
    { "group_instance_id", "string", v = "5+", null = "5+", default = "null" },
    { "protocol_type", "string" },
    { "protocols", "[]", fields = {
        { "name", "string" },
        { "metadata", "bytes" },
    } },
    { "reason", "string", v = "8+", null = "8+", default = "null" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "2+" },
    { "error_code", "int16" },
    { "generation_id", "int32", default = -1 },
    { "protocol_type", "string", v = "7+", null = "7+", default = "null" },
    { "protocol_name", "string", null = "7+" },
    { "leader", "string" },
    { "skip_assignment", "bool", v = "9+" },
    { "member_id", "string" },
    { "members", "[]", fields = {
        { "member_id", "string" },
        { "group_instance_id", "string", v = "5+", null = "5+", default = "null" },
        { "metadata", "bytes" },
    } },
  },
}
