-- ListOffsets (2): 1-10. v1 is the first with timestamp lookups (librdkafka
-- needs it); v0's multi-offset form is not supported. v6+ is flexible.
-- Later versions widen the special timestamps: -3 max timestamp (v7), -4
-- earliest local (v8), -5 latest tiered (v9); v10 adds a timeout for
-- tiered storage, which there is none of here.

return {
  key = 2, name = "ListOffsets",
  versions = "1-10",
  flexible = "6+",
  request = {
    { "replica_id", "int32" },
    { "isolation_level", "int8", v = "2+" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "current_leader_epoch", "int32", v = "4+", default = -1 },
            { "timestamp", "int64" },
        } },
    } },
    { "timeout_ms", "int32", v = "10+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "2+" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "timestamp", "int64", v = "1+", default = -1 },
            { "offset", "int64", v = "1+", default = -1 },
            { "leader_epoch", "int32", v = "4+", default = -1 },
        } },
    } },
  },
}
