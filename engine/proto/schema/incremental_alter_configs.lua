-- IncrementalAlterConfigs (44): 0-1, the whole range; v1 is flexible.

return {
  key = 44, name = "IncrementalAlterConfigs",
  versions = "0-1",
  flexible = "1+",
  request = {
    { "resources", "[]", fields = {
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "configs", "[]", fields = {
            { "name", "string" },
            { "config_operation", "int8" },
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
