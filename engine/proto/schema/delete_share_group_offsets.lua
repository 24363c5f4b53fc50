-- DeleteShareGroupOffsets (92): forgets an empty share group's state of
-- whole topics (KIP-932, kafka-share-groups --delete-offsets); the group
-- starts there again as share.auto.offset.reset says.

return {
  key = 92, name = "DeleteShareGroupOffsets",
  versions = "0",
  flexible = "0+",
  request = {
    { "group_id", "string" },
    { "topics", "[]", fields = {
        { "topic_name", "string" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+", default = "null" },
    { "responses", "[]", fields = {
        { "topic_name", "string" },
        { "topic_id", "uuid" },
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
    } },
  },
}
