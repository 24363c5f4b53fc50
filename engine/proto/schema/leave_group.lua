-- LeaveGroup (13): 0-5. v3 leaves several members at once (static members);
-- v4 is flexible; v5 adds each member's reason for leaving.

return {
  key = 13, name = "LeaveGroup",
  versions = "0-5",
  flexible = "4+",
  request = {
    { "group_id", "string" },
    { "member_id", "string", v = "0-2" },
    { "members", "[]", v = "3+", fields = {
        { "member_id", "string", v = "3+" },
        { "group_instance_id", "string", v = "3+", null = "3+", default = "null" },
        { "reason", "string", v = "5+", null = "5+", default = "null" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "error_code", "int16" },
    { "members", "[]", v = "3+", fields = {
        { "member_id", "string", v = "3+" },
        { "group_instance_id", "string", v = "3+", null = "3+" },
        { "error_code", "int16", v = "3+" },
    } },
  },
}
