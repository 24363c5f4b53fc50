-- The "consumer" protocol's member metadata (JoinGroup protocols[].metadata),
-- after its int16 version: what a member subscribes to and already owns.
return {
  name = "ConsumerProtocolSubscription",
  versions = "0-1",
  fields = {
    { "topics", "[]string" },
    { "user_data", "bytes", null = "0+", default = "null" },
    { "owned_partitions", "[]", v = "1+", fields = {
        { "topic", "string" },
        { "partitions", "[]int32" },
    } },
  },
}
