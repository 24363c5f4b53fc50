-- Key of a consumer group member's subscription record (version 5).
return {
  name = "ConsumerGroupMemberMetadataKey",
  versions = "5",
  fields = {
    { "group_id", "string" },
    { "member_id", "string" },
  },
}
