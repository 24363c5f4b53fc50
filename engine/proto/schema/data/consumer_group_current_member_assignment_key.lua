-- Key of one member's current assignment record (version 8).
return {
  name = "ConsumerGroupCurrentMemberAssignmentKey",
  versions = "8",
  fields = {
    { "group_id", "string" },
    { "member_id", "string" },
  },
}
