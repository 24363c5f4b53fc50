-- Value of a committed offset in __consumer_offsets. Version 1 alone keeps
-- an explicit expiry; version 3 adds the leader epoch of the committed record.
return {
  name = "OffsetCommitValue",
  versions = "0-3",
  fields = {
    { "offset", "int64" },
    { "leader_epoch", "int32", v = "3+", default = -1 },
    { "metadata", "string" },
    { "commit_timestamp", "int64" },
    { "expire_timestamp", "int64", v = "1", default = -1 },
  },
}
