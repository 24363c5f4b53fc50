-- CreatePartitions (37): grows topics to a new partition count, the new
-- partitions' replicas placed by the controller or given by the client.
-- v2+ is flexible; v1 and v3 change nothing on the wire.

return {
  key = 37, name = "CreatePartitions",
  versions = "0-3",
  flexible = "2+",
  request = {
    { "topics", "[]", fields = {
        { "name", "string" },
        { "count", "int32" },
        -- one entry per new partition; null lets the controller place them
        { "assignments", "[]", null = "0+", fields = {
            { "broker_ids", "[]int32" },
        } },
    } },
    { "timeout_ms", "int32" },
    { "validate_only", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "results", "[]", fields = {
        { "name", "string" },
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
    } },
  },
}
