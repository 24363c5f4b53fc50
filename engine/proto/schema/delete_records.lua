-- DeleteRecords (21): 0-2, the whole range; v2 is flexible.

return {
  key = 21, name = "DeleteRecords",
  versions = "0-2",
  flexible = "2+",
  request = {
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "offset", "int64" },
        } },
    } },
    { "timeout_ms", "int32" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "topics", "[]", fields = {
        { "name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "low_watermark", "int64" },
            { "error_code", "int16" },
        } },
    } },
  },
}
