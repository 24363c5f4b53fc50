-- Key of a group's metadata in __consumer_offsets: version 2 tells it apart
-- from offset keys (versions 0-1), which share the topic.
return {
  name = "GroupMetadataKey",
  versions = "2",
  fields = {
    { "group", "string" },
  },
}
