-- OffsetForLeaderEpoch (23): 0-4. Consumers use it to detect log truncation
-- after a leader change; followers send it with their replica_id (v3+).
-- v4 is flexible.

return {
  key = 23, name = "OffsetForLeaderEpoch",
  versions = "0-4",
  flexible = "4+",
  request = {
    { "replica_id", "int32", v = "3+", default = -2 }, -- follower id; -1 consumer, -2 debug consumer
    { "topics", "[]", fields = {
        { "topic", "string" },
        { "partitions", "[]", fields = {
            { "partition", "int32" },
            { "current_leader_epoch", "int32", v = "2+", default = -1 },
            { "leader_epoch", "int32" },
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32", v = "2+" },
    { "topics", "[]", fields = {
        { "topic", "string" },
        { "partitions", "[]", fields = {
            { "error_code", "int16" },
            { "partition", "int32" },
            { "leader_epoch", "int32", v = "1+", default = -1 },
            { "end_offset", "int64", default = -1 },
        } },
    } },
  },
}
