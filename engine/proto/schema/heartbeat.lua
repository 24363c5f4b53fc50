-- Heartbeat (12): 0-4, the whole range; v4 is flexible.

return {
  key = 12, name = "Heartbeat",
  versions = "0-4",
  flexible = "4+",
  request = {
    { "group_id", "string" },
    { "generation_id", "int32" },
    { "member_id", "string" },
    { "group_instance_id", "string", v = "3+", null = "3+", default = "null" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "error_code", "int16" },
  },
}
