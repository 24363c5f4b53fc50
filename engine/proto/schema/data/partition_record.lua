-- KRaft metadata record type 3 (__cluster_metadata): one partition's whole
-- state. Version 1 adds each replica's log directory, version 2 the
-- eligible leader replicas (KIP-966).
return {
  name = "PartitionRecord",
  versions = "0-2",
  flexible = "0+",
  fields = {
    { "partition_id", "int32", default = -1 },
    { "topic_id", "uuid" },
    { "replicas", "[]int32" },
    { "isr", "[]int32" },
    { "removing_replicas", "[]int32" },
    { "adding_replicas", "[]int32" },
    { "leader", "int32", default = -1 },
    { "leader_recovery_state", "int8", tag = 0, tagged = "0+" },
    { "leader_epoch", "int32", default = -1 },
    { "partition_epoch", "int32", default = -1 },
    { "directories", "[]uuid", v = "1+" },
    { "eligible_leader_replicas", "[]int32", v = "2+", null = "2+", default = "null", tag = 1, tagged = "2+" },
    { "last_known_elr", "[]int32", v = "2+", null = "2+", default = "null", tag = 2, tagged = "2+" },
  },
}
