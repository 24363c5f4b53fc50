-- DeleteAcls (31): every ACL binding matching each filter is removed; one
-- result per filter listing what it removed. Kafka 4.0 serves v1+.
return {
  key = 31, name = "DeleteAcls",
  versions = "1-3",
  flexible = "2+",
  request = {
    { "filters", "[]", fields = {
        { "resource_type_filter", "int8" },
        { "resource_name_filter", "string", null = "0+" },
        { "pattern_type_filter", "int8", default = 3 },
        { "principal_filter", "string", null = "0+" },
        { "host_filter", "string", null = "0+" },
        { "operation", "int8" },
        { "permission_type", "int8" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "filter_results", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
        { "matching_acls", "[]", fields = {
            { "error_code", "int16" },
            { "error_message", "string", null = "0+", default = "null" },
            { "resource_type", "int8" },
            { "resource_name", "string" },
            { "pattern_type", "int8", default = 3 },
            { "principal", "string" },
            { "host", "string" },
            { "operation", "int8" },
            { "permission_type", "int8" },
        } },
    } },
  },
}
