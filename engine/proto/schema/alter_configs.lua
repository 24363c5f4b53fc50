-- AlterConfigs (33): 0-2, the whole range; v2 is flexible.

return {
  key = 33, name = "AlterConfigs",
  versions = "0-2",
  flexible = "2+",
  request = {
    { "resources", "[]", fields = {
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "configs", "[]", fields = {
            { "name", "string" },
            { "value", "string", null = "0+" },
        } },
    } },
    { "validate_only", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "responses", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", null = "0+" },
        { "resource_type", "int8" },
        { "resource_name", "string" },
    } },
  },
}
