-- DescribeGroups (15): 0-6; v5 is flexible; v6 answers an unknown group
-- with GROUP_ID_NOT_FOUND and a message.

return {
  key = 15, name = "DescribeGroups",
  versions = "0-6",
  flexible = "5+",
  request = {
    { "groups", "[]string" },
    { "include_authorized_operations", "bool", v = "3+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "groups", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", v = "6+", null = "6+", default = "null" },
        { "group_id", "string" },
        { "group_state", "string" },
        { "protocol_type", "string" },
        { "protocol_data", "string" },
        { "members", "[]", fields = {
            { "member_id", "string" },
            { "group_instance_id", "string", v = "4+", null = "4+", default = "null" },
            { "client_id", "string" },
            { "client_host", "string" },
            { "member_metadata", "bytes" },
            { "member_assignment", "bytes" },
        } },
        { "authorized_operations", "int32", v = "3+", default = -2147483648 },
    } },
  },
}
