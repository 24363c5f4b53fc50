-- DescribeShareGroupOffsets (90): each share group's start offset (SPSO)
-- per partition (KIP-932), the share group's "committed offset"; v1 adds
-- the lag (KIP-1226). topics null: every partition the group has state of.

return {
  key = 90, name = "DescribeShareGroupOffsets",
  versions = "0-1",
  flexible = "0+",
  request = {
    { "groups", "[]", fields = {
        { "group_id", "string" },
        { "topics", "[]", null = "0+", fields = {
            { "topic_name", "string" },
            { "partitions", "[]int32" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "groups", "[]", fields = {
        { "group_id", "string" },
        { "topics", "[]", fields = {
            { "topic_name", "string" },
            { "topic_id", "uuid" },
            { "partitions", "[]", fields = {
                { "partition_index", "int32" },
                { "start_offset", "int64" },
                { "leader_epoch", "int32" },
                { "lag", "int64", v = "1+", default = -1 },
                { "error_code", "int16" },
                { "error_message", "string", null = "0+", default = "null" },
            } },
        } },
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
    } },
  },
}
