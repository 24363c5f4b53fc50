-- OffsetCommit (8): 0-10, served from 2 (Kafka 4.0's floor; librdkafka
-- 2.0-2.11 need v1 or v2 in range). v8 is flexible; v9 is the first the
-- new consumer protocol may use, and answers an unknown group that names
-- a generation with GROUP_ID_NOT_FOUND; v10 names topics by id only.

return {
  key = 8, name = "OffsetCommit",
  versions = "0-10",
  flexible = "8+",
  request = {
    { "group_id", "string" },
    { "generation_id_or_member_epoch", "int32", v = "1+", default = -1 },
    { "member_id", "string", v = "1+" },
    { "group_instance_id", "string", v = "7+", null = "7+", default = "null" },
    { "retention_time_ms", "int64", v = "2-4", default = -1 }, -- -1: broker default
    { "topics", "[]", fields = {
        { "name", "string", v = "0-9" },
        { "topic_id", "uuid", v = "10+" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "committed_offset", "int64" },
            { "committed_leader_epoch", "int32", v = "6+", default = -1 },
            { "commit_timestamp", "int64", v = "1", default = -1 },
            { "committed_metadata", "string", null = "0+" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32", v = "3+" },
    { "topics", "[]", fields = {
        { "name", "string", v = "0-9" },
        { "topic_id", "uuid", v = "10+" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
        } },
    } },
  },
}
