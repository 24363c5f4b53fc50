-- KRaft metadata record type 5 (__cluster_metadata): a change to a
-- partition. Every changed field is tagged and left out when unchanged:
-- null arrays, leader -2 (-1 means no leader now) and recovery state -1
-- mean "as before". Applying one bumps the partition epoch, and the leader
-- epoch too when the leader field is present.
return {
  name = "PartitionChangeRecord",
  versions = "0-2",
  flexible = "0+",
  fields = {
    { "partition_id", "int32", default = -1 },
    { "topic_id", "uuid" },
    { "isr", "[]int32", null = "0+", default = "null", tag = 0, tagged = "0+" },
    { "leader", "int32", default = -2, tag = 1, tagged = "0+" },
    { "replicas", "[]int32", null = "0+", default = "null", tag = 2, tagged = "0+" },
    { "removing_replicas", "[]int32", null = "0+", default = "null", tag = 3, tagged = "0+" },
    { "adding_replicas", "[]int32", null = "0+", default = "null", tag = 4, tagged = "0+" },
    { "leader_recovery_state", "int8", default = -1, tag = 5, tagged = "0+" },
    { "directories", "[]uuid", v = "1+", null = "1+", default = "null", tag = 8, tagged = "1+" },
    { "eligible_leader_replicas", "[]int32", v = "2+", null = "2+", default = "null", tag = 6, tagged = "2+" },
    { "last_known_elr", "[]int32", v = "2+", null = "2+", default = "null", tag = 7, tagged = "2+" },
  },
}
