-- OffsetDelete (47): only v0 exists, and it is not flexible.

return {
  key = 47, name = "OffsetDelete",
  versions = "0",
  flexible = "none",
  request = {
    { "group_id", "string" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
        } },
    } },
  },
  response = {
    { "error_code", "int16" },
    { "throttle_time_ms", "int32" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
        } },
    } },
  },
}
