-- FindCoordinator (10): 0-6. Group consumers in librdkafka need v0; v4
-- looks up several keys at once and answers with a list; v5 and v6 only
-- add error codes (v6: share groups, key type 2).

return {
  key = 10, name = "FindCoordinator",
  versions = "0-6",
  flexible = "3+",
  request = {
    { "key", "string", v = "0-3" },
    { "key_type", "int8", v = "1+" },
    { "coordinator_keys", "[]string", v = "4+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "1+" },
    { "error_code", "int16", v = "0-3" },
    { "error_message", "string", v = "1-3", null = "1-3" },
    { "node_id", "int32", v = "0-3" },
    { "host", "string", v = "0-3" },
    { "port", "int32", v = "0-3" },
    { "coordinators", "[]", v = "4+", fields = {
        { "key", "string", v = "4+" },
        { "node_id", "int32", v = "4+" },
        { "host", "string", v = "4+" },
        { "port", "int32", v = "4+" },
        { "error_code", "int16", v = "4+" },
        { "error_message", "string", v = "4+", null = "4+" },
    } },
  },
}
