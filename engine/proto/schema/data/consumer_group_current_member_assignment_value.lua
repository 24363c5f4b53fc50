-- Value of a member's current assignment record (key version 8): its
-- epochs, its reconciliation state (1 unrevoked partitions, 2 unreleased
-- partitions, 3 stable) and what it owns and must give up.
local topic_partitions = {
  { "topic_id", "uuid" },
  { "partitions", "[]int32" },
}
return {
  name = "ConsumerGroupCurrentMemberAssignmentValue",
  versions = "0",
  flexible = "0+",
  fields = {
    { "member_epoch", "int32" },
    { "previous_member_epoch", "int32" },
    { "state", "int8" },
    { "assigned_partitions", "[]", fields = topic_partitions },
    { "partitions_pending_revocation", "[]", fields = topic_partitions },
  },
}
