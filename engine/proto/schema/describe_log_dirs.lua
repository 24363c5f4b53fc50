-- DescribeLogDirs (35): each log directory, its partitions and their sizes.
-- Served from v1 (Kafka 4.0's floor); v2+ is flexible, v3 adds a top-level
-- error code, v4 the volume's total and usable bytes.

return {
  key = 35, name = "DescribeLogDirs",
  versions = "0-4",
  flexible = "2+",
  request = {
    { "topics", "[]", null = "0+", fields = { -- null: every partition
        { "topic", "string" },
        { "partitions", "[]int32" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16", v = "3+" },
    { "results", "[]", fields = {
        { "error_code", "int16" },
        { "log_dir", "string" },
        { "topics", "[]", fields = {
            { "name", "string" },
            { "partitions", "[]", fields = {
                { "partition_index", "int32" },
                { "partition_size", "int64" },
                { "offset_lag", "int64" },    -- log end minus high watermark
                { "is_future_key", "bool" },  -- a copy being moved here
            } },
        } },
        { "total_bytes", "int64", v = "4+", default = -1 },
        { "usable_bytes", "int64", v = "4+", default = -1 },
    } },
  },
}
