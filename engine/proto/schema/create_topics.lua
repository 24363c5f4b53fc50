-- CreateTopics (19): 0-7; platformatic uses only v7. v5+ is flexible and
-- returns the created topic's configs.

return {
  key = 19, name = "CreateTopics",
  versions = "0-7",
  flexible = "5+",
  request = {
    { "topics", "[]", fields = {
        { "name", "string" },
        { "num_partitions", "int32" }, -- -1: explicit assignments or broker default
        { "replication_factor", "int16" }, -- -1 likewise
        { "assignments", "[]", fields = {
            { "partition_index", "int32" },
            { "broker_ids", "[]int32" },
        } },
        { "configs", "[]", fields = {
            { "name", "string" },
            { "value", "string", null = "0+" },
        } },
    } },
    { "timeout_ms", "int32", default = 60000 },
    { "validate_only", "bool", v = "1+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "2+" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "topic_id", "uuid", v = "7+" },
        { "error_code", "int16" },
        { "error_message", "string", v = "1+", null = "0+" },
        { "topic_config_error_code", "int16", v = "5+", tag = 0, tagged = "5+" },
        { "num_partitions", "int32", v = "5+", default = -1 },
        { "replication_factor", "int16", v = "5+", default = -1 },
        { "configs", "[]", v = "5+", null = "5+", fields = {
            { "name", "string", v = "5+" },
            { "value", "string", v = "5+", null = "5+" },
            { "read_only", "bool", v = "5+" },
            { "config_source", "int8", v = "5+", default = -1 },
            { "is_sensitive", "bool", v = "5+" },
        } },
    } },
  },
}
