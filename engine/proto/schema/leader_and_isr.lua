-- LeaderAndIsr (4): 0-6. The controller tells a broker which partitions it
-- leads or follows, at which leader epoch and with which ISR. Broker to
-- broker only: declared for the controller's client and the control-plane
-- handler, not advertised to clients. v2 groups partitions by topic, v4 is
-- flexible, v5 adds topic ids and the full/incremental type, v6 the leader
-- recovery state. v7 (a KRaft controller flag) is left out.

return {
  key = 4, name = "LeaderAndIsr",
  versions = "0-6",
  flexible = "4+",
  request = {
    { "controller_id", "int32" },
    { "controller_epoch", "int32" },
    { "broker_epoch", "int64", v = "2+", default = -1 },
    { "type", "int8", v = "5+" }, -- 0 incremental, 1 full (every partition the broker hosts)
    -- v0-1: a flat list, each partition naming its topic.
    { "ungrouped_partition_states", "[]", v = "0-1", fields = {
        { "topic_name", "string", v = "0-1" },
        { "partition_index", "int32" },
        { "controller_epoch", "int32" },
        { "leader", "int32" },
        { "leader_epoch", "int32" },
        { "isr", "[]int32" },
        { "partition_epoch", "int32" }, -- Kafka's ZkVersion before 3.x
        { "replicas", "[]int32" },
        { "is_new", "bool", v = "1+" },
    } },
    { "topic_states", "[]", v = "2+", fields = {
        { "topic_name", "string" },
        { "topic_id", "uuid", v = "5+" },
        { "partition_states", "[]", fields = {
            { "partition_index", "int32" },
            { "controller_epoch", "int32" },
            { "leader", "int32" },
            { "leader_epoch", "int32" },
            { "isr", "[]int32" },
            { "partition_epoch", "int32" },
            { "replicas", "[]int32" },
            { "adding_replicas", "[]int32", v = "3+" },
            { "removing_replicas", "[]int32", v = "3+" },
            { "is_new", "bool" }, -- the replica should not have existed on the broker yet
            { "leader_recovery_state", "int8", v = "6+" }, -- 1 after an unclean election
        } },
    } },
    { "live_leaders", "[]", fields = {
        { "broker_id", "int32" },
        { "host_name", "string" },
        { "port", "int32" },
    } },
  },
  response = {
    { "error_code", "int16" },
    { "partition_errors", "[]", v = "0-4", fields = {
        { "topic_name", "string" },
        { "partition_index", "int32" },
        { "error_code", "int16" },
    } },
    -- v5+: errors grouped by topic id.
    { "topics", "[]", v = "5+", fields = {
        { "topic_id", "uuid" },
        { "partition_errors", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
        } },
    } },
  },
}
