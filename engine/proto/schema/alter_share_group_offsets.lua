-- AlterShareGroupOffsets (91): sets an empty share group's start offset on
-- partitions (KIP-932, kafka-share-groups --reset-offsets); what was in
-- flight there is forgotten.

return {
  key = 91, name = "AlterShareGroupOffsets",
  versions = "0",
  flexible = "0+",
  request = {
    { "group_id", "string" },
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "start_offset", "int64" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "responses", "[]", fields = {
        { "topic_name", "string" },
        { "topic_id", "uuid" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", null = "0+", default = "null" },
        } },
    } },
  },
}
