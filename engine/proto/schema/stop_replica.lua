-- StopReplica (5): 0-3. The controller tells a broker to stop replicating
-- partitions (and maybe delete them): reassignment away, topic deletion.
-- Broker to broker only, not advertised to clients. v1 groups partitions by
-- topic and adds the broker epoch, v2 is flexible, v3 moves the delete flag
-- into each partition beside its leader epoch. v4 (KRaft controller flag) is
-- left out.

return {
  key = 5, name = "StopReplica",
  versions = "0-3",
  flexible = "2+",
  request = {
    { "controller_id", "int32" },
    { "controller_epoch", "int32" },
    { "broker_epoch", "int64", v = "1+", default = -1 },
    { "delete_partitions", "bool", v = "0-2" },
    { "ungrouped_partitions", "[]", v = "0", fields = {
        { "topic_name", "string" },
        { "partition_index", "int32" },
    } },
    { "topics", "[]", v = "1-2", fields = {
        { "name", "string" },
        { "partition_indexes", "[]int32" },
    } },
    { "topic_states", "[]", v = "3+", fields = {
        { "topic_name", "string" },
        { "partition_states", "[]", fields = {
            { "partition_index", "int32" },
            { "leader_epoch", "int32", default = -1 }, -- -1: no epoch check
            { "delete_partition", "bool" },
        } },
    } },
  },
  response = {
    { "error_code", "int16" },
    { "partition_errors", "[]", fields = {
        { "topic_name", "string" },
        { "partition_index", "int32" },
        { "error_code", "int16" },
    } },
  },
}
