-- Value of the target assignment epoch record (key version 6): the group
-- epoch the members' target assignments (version 7) were computed for.
return {
  name = "ConsumerGroupTargetAssignmentMetadataValue",
  versions = "0",
  flexible = "0+",
  fields = {
    { "assignment_epoch", "int32" },
  },
}
