-- Key of one member's target assignment record (version 7).
return {
  name = "ConsumerGroupTargetAssignmentMemberKey",
  versions = "7",
  fields = {
    { "group_id", "string" },
    { "member_id", "string" },
  },
}
