-- OffsetFetch (9): 0-10, served from 1 (Kafka 4.0's floor; librdkafka needs
-- v1). v8 fetches for several groups at once; v9 adds the new consumer
-- protocol's member id and epoch; v10 names topics by id only. v6+ is
-- flexible.

return {
  key = 9, name = "OffsetFetch",
  versions = "0-10",
  flexible = "6+",
  request = {
    { "group_id", "string", v = "0-7" },
    { "topics", "[]", v = "0-7", null = "2-7", fields = {
        { "name", "string", v = "0-7" },
        { "partition_indexes", "[]int32", v = "0-7" },
    } },
    { "groups", "[]", v = "8+", fields = {
        { "group_id", "string", v = "8+" },
        -- the new consumer protocol's (KIP-848); ignored for classic groups
        { "member_id", "string", v = "9+", null = "9+", default = "null" },
        { "member_epoch", "int32", v = "9+", default = -1 },
        { "topics", "[]", v = "8+", null = "8+", fields = {
            { "name", "string", v = "8-9" },
            { "topic_id", "uuid", v = "10+" },
            { "partition_indexes", "[]int32", v = "8+" },
        } },
    } },
    { "require_stable", "bool", v = "7+" },
  },
  response = {
    { "throttle_time_ms", "int32", v = "3+" },
    { "topics", "[]", v = "0-7", fields = {
        { "name", "string", v = "0-7" },
        { "partitions", "[]", v = "0-7", fields = {
            { "partition_index", "int32", v = "0-7" },
            { "committed_offset", "int64", v = "0-7" },
            { "committed_leader_epoch", "int32", v = "5-7", default = -1 },
            { "metadata", "string", v = "0-7", null = "0-7" },
            { "error_code", "int16", v = "0-7" },
        } },
    } },
    { "error_code", "int16", v = "2-7" },
    { "groups", "[]", v = "8+", fields = {
        { "group_id", "string", v = "8+" },
        { "topics", "[]", v = "8+", fields = {
            { "name", "string", v = "8-9" },
            { "topic_id", "uuid", v = "10+" },
            { "partitions", "[]", v = "8+", fields = {
                { "partition_index", "int32", v = "8+" },
                { "committed_offset", "int64", v = "8+" },
                { "committed_leader_epoch", "int32", v = "8+", default = -1 },
                { "metadata", "string", v = "8+", null = "8+" },
                { "error_code", "int16", v = "8+" },
            } },
        } },
        { "error_code", "int16", v = "8+" },
    } },
  },
}
