-- ConsumerGroupDescribe (69): describes groups of the new consumer protocol
-- (KIP-848); a classic group is answered GROUP_ID_NOT_FOUND, as Kafka
-- answers, and librdkafka 2.4+ then falls back to DescribeGroups. v1 (Kafka
-- 4.0) adds each member's type (KIP-1099).

return {
  key = 69, name = "ConsumerGroupDescribe",
  versions = "0-1",
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
            { "instance_id", "string", null = "0+", default = "null" },
            { "rack_id", "string", null = "0+", default = "null" },
            { "member_epoch", "int32" },
            { "client_id", "string" },
            { "client_host", "string" },
            { "subscribed_topic_names", "[]string" },
            { "subscribed_topic_regex", "string", null = "0+", default = "null" },
            { "assignment", "struct", fields = {
                { "topic_partitions", "[]", fields = {
                    { "topic_id", "uuid" },
                    { "topic_name", "string" },
                    { "partitions", "[]int32" },
                } },
            } },
            { "target_assignment", "struct", fields = {
                { "topic_partitions", "[]", fields = {
                    { "topic_id", "uuid" },
                    { "topic_name", "string" },
                    { "partitions", "[]int32" },
                } },
            } },
            { "member_type", "int8", v = "1+", default = -1 }, -- 1: consumer protocol
        } },
        { "authorized_operations", "int32", default = -2147483648 },
    } },
  },
}
