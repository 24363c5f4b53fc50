-- ListGroups (16): 0-5; v4 filters by state, v5 by type ("classic" for
-- every group here). v3+ is flexible.

return {
  key = 16, name = "ListGroups",
  versions = "0-5",
  flexible = "3+",
  request = {
    { "states_filter", "[]string", v = "4+" },
    { "types_filter", "[]string", v = "5+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "error_code", "int16" },
    { "groups", "[]", fields = {
        { "group_id", "string" },
        { "protocol_type", "string" },
        { "group_state", "string", v = "4+" },
        { "group_type", "string", v = "5+" },
    } },
  },
}
