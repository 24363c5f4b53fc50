-- Key of a consumer group's target assignment epoch record (version 6).
return {
  name = "ConsumerGroupTargetAssignmentMetadataKey",
  versions = "6",
  fields = {
    { "group_id", "string" },
  },
}
