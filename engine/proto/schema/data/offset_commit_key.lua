-- Key of a committed offset in __consumer_offsets (record key, after its
-- int16 version). Versions 0 and 1 are the same layout; 2 is a group key.
return {
  name = "OffsetCommitKey",
  versions = "0-1",
  fields = {
    { "group", "string" },
    { "topic", "string" },
    { "partition", "int32" },
  },
}
