-- DescribeConfigs (32): 0-4, the whole range clients use; v4 is flexible.

return {
  key = 32, name = "DescribeConfigs",
  versions = "0-4",
  flexible = "4+",
  request = {
    { "resources", "[]", fields = {
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "configuration_keys", "[]string", null = "0+" },
    } },
    { "include_synonyms", "bool", v = "1+" },
    { "include_documentation", "bool", v = "3+" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "results", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", null = "0+" },
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "configs", "[]", fields = {
            { "name", "string" },
            { "value", "string", null = "0+" },
            { "read_only", "bool" },
            { "is_default", "bool", v = "0" },
            { "config_source", "int8", v = "1+", default = -1 },
            { "is_sensitive", "bool" },
            { "synonyms", "[]", v = "1+", fields = {
                { "name", "string", v = "1+" },
                { "value", "string", v = "1+", null = "0+" },
                { "source", "int8", v = "1+" },
            } },
            { "config_type", "int8", v = "3+" },
            { "documentation", "string", v = "3+", null = "0+" },
        } },
    } },
  },
}
