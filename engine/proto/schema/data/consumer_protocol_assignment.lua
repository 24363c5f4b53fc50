-- The "consumer" protocol's assignment (SyncGroup assignments[].assignment),
-- after its int16 version.
return {
  name = "ConsumerProtocolAssignment",
  versions = "0-1",
  fields = {
    { "assigned_partitions", "[]", fields = {
        { "topic", "string" },
        { "partitions", "[]int32" },
    } },
    { "user_data", "bytes", null = "0+", default = "null" },
  },
}
