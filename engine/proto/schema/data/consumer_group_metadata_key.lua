-- Key of a consumer group's (KIP-848) epoch record in __consumer_offsets:
-- version 3, a record type of its own beside offsets (0-1) and classic
-- groups (2).
return {
  name = "ConsumerGroupMetadataKey",
  versions = "3",
  fields = {
    { "group_id", "string" },
  },
}
