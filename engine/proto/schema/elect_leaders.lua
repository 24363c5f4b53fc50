-- ElectLeaders (43): asks the controller to elect partitions' leaders, the
-- preferred replica (type 0; v0 knows no other) or, when no in-sync
-- replica is left, any live one (type 1, unclean). A null list means every
-- partition. v1 adds a top-level error code; v2 is flexible.

return {
  key = 43, name = "ElectLeaders",
  versions = "0-2",
  flexible = "2+",
  request = {
    { "election_type", "int8", v = "1+" },
    { "topic_partitions", "[]", null = "0+", fields = {
        { "topic", "string" },
        { "partitions", "[]int32" },
    } },
    { "timeout_ms", "int32", default = 60000 },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16", v = "1+" },
    { "replica_election_results", "[]", fields = {
        { "topic", "string" },
        { "partition_result", "[]", fields = {
            { "partition_id", "int32" },
            { "error_code", "int16" },
            { "error_message", "string", null = "0+" },
        } },
    } },
  },
}
