-- CreateAcls (30): ACL bindings to add, one result per creation in order.
-- Kafka 4.0 serves v1+ (KIP-896).
return {
  key = 30, name = "CreateAcls",
  versions = "1-3",
  flexible = "2+",
  request = {
    { "creations", "[]", fields = {
        { "resource_type", "int8" },
        { "resource_name", "string" },
        { "resource_pattern_type", "int8", default = 3 },
        { "principal", "string" },
        { "host", "string" },
        { "operation", "int8" },
        { "permission_type", "int8" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "results", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
    } },
  },
}
