-- Value of a member's subscription record (key version 5): who it is and
-- what it subscribes to; a tombstone: the member left.
return {
  name = "ConsumerGroupMemberMetadataValue",
  versions = "0",
  flexible = "0+",
  fields = {
    { "instance_id", "string", null = "0+" },
    { "rack_id", "string", null = "0+" },
    { "client_id", "string" },
    { "client_host", "string" },
    { "subscribed_topic_names", "[]string" },
    { "subscribed_topic_regex", "string", null = "0+" },
    { "rebalance_timeout_ms", "int32", default = -1 },
    { "server_assignor", "string", null = "0+" },
  },
}
