-- DeleteGroups (42): 0-2, the whole range; v2 is flexible.

return {
  key = 42, name = "DeleteGroups",
  versions = "0-2",
  flexible = "2+",
  request = {
    { "groups_names", "[]string" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "results", "[]", fields = {
        { "group_id", "string" },
        { "error_code", "int16" },
    } },
  },
}
