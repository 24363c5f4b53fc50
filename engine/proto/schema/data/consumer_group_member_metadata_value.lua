-- Value of a member's subscription record (key version 5): who it is and
-- what it subscribes to, and for a classic member its JoinGroup protocols;
-- a tombstone: the member left.
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
    -- a member of the classic protocol in a consumer group (a mixed group)
    { "classic_member_metadata", "struct", null = "0+", default = "null", tag = 0, tagged = "0+", fields = {
        { "session_timeout_ms", "int32" },
        { "supported_protocols", "[]", fields = {
            { "name", "string" },
            { "metadata", "bytes" },
        } },
    } },
  },
}
