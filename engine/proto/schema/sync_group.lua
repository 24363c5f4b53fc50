-- SyncGroup (14): 0-5, the whole range; v4+ is flexible.

return {
  key = 14, name = "SyncGroup",
  versions = "0-5",
  flexible = "4+",
  request = {
    { "group_id", "string" },
    { "generation_id", "int32" },
    { "member_id", "string" },
    { "group_instance_id", "string", v = "3+", null = "3+", default = "null" },
    { "protocol_type", "string", v = "5+", null = "5+", default = "null" },
    { "protocol_name", "string", v = "5+", null = "5+", default = "null" },
    { "assignments", "[]", fields = {
        { "member_id", "string" },
        { "assignment", "bytes" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "error_code", "int16" },
    { "protocol_type", "string", v = "5+", null = "5+", default = "null" },
    { "protocol_name", "string", v = "5+", null = "5+", default = "null" },
    { "assignment", "bytes" },
  },
}
