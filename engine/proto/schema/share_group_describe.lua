-- ShareGroupDescribe (77): describes share groups (KIP-932); a group of
-- another type is GROUP_ID_NOT_FOUND, as Kafka answers.

return {
  key = 77, name = "ShareGroupDescribe",
  versions = "1",
  flexible = "0+",
  request = {
    { "group_ids", "[]string" },
    { "include_authorized_operations", "bool" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "groups", "[]", fields = {
        { "error_code", "int16" },
        { "error_message", "string", null = "0+", default = "null" },
        { "group_id", "string" },
        { "group_state", "string" },
        { "group_epoch", "int32" },
        { "assignment_epoch", "int32" },
        { "assignor_name", "string" },
        { "members", "[]", fields = {
            { "member_id", "string" },
            { "rack_id", "string", null = "0+", default = "null" },
            { "member_epoch", "int32" },
            { "client_id", "string" },
            { "client_host", "string" },
            { "subscribed_topic_names", "[]string" },
            { "assignment", "struct", fields = {
                { "topic_partitions", "[]", fields = {
                    { "topic_id", "uuid" },
                    { "topic_name", "string" },
                    { "partitions", "[]int32" },
                } },
            } },
        } },
        { "authorized_operations", "int32", default = -2147483648 },
    } },
  },
}
