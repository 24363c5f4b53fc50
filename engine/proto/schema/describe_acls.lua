-- DescribeAcls (29): the ACL bindings matching a filter (resource type,
-- name, pattern type, principal, host, operation, permission; ANY = 1 and
-- null names match everything). Kafka 4.0 serves v1+ (KIP-896).
return {
  key = 29, name = "DescribeAcls",
  versions = "1-3",
  flexible = "2+",
  request = {
    { "resource_type_filter", "int8" },
    { "resource_name_filter", "string", null = "0+" },
    { "pattern_type_filter", "int8", default = 3 },
    { "principal_filter", "string", null = "0+" },
    { "host_filter", "string", null = "0+" },
    { "operation", "int8" },
    { "permission_type", "int8" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "resources", "[]", fields = {
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "pattern_type", "int8", default = 3 },
        { "acls", "[]", fields = {
            { "principal", "string" },
            { "host", "string" },
            { "operation", "int8" },
            { "permission_type", "int8" },
        } },
    } },
  },
}
