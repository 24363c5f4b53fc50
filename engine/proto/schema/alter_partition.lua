-- AlterPartition (56): 0-2. A partition leader asks the controller to
-- shrink or expand the ISR; the controller answers with the state it
-- committed. Broker to controller only, not advertised to clients. Flexible
-- from v0; v1 adds the leader recovery state, v2 names topics by id. v3
-- (ISR members with broker epochs) is left out.

return {
  key = 56, name = "AlterPartition",
  versions = "0-2",
  flexible = "0+",
  request = {
    { "broker_id", "int32" },
    { "broker_epoch", "int64", default = -1 },
    { "topics", "[]", fields = {
        { "topic_name", "string", v = "0-1" },
        { "topic_id", "uuid", v = "2+" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "leader_epoch", "int32" },
            { "new_isr", "[]int32" },
            { "leader_recovery_state", "int8", v = "1+" },
            { "partition_epoch", "int32" }, -- the epoch the leader last saw; stale → rejected
        } },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "topics", "[]", fields = {
        { "topic_name", "string", v = "0-1" },
        { "topic_id", "uuid", v = "2+" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "leader_id", "int32" },
            { "leader_epoch", "int32" },
            { "isr", "[]int32" },
            { "leader_recovery_state", "int8", v = "1+" },
            { "partition_epoch", "int32" },
        } },
    } },
  },
}
