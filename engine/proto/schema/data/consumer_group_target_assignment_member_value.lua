-- Value of a member's target assignment record (key version 7): the
-- partitions the assignor gave it, by topic id.
return {
  name = "ConsumerGroupTargetAssignmentMemberValue",
  versions = "0",
  flexible = "0+",
  fields = {
    { "topic_partitions", "[]", fields = {
        { "topic_id", "uuid" },
        { "partitions", "[]int32" },
    } },
  },
}
