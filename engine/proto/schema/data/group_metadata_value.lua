-- Value of a group's metadata in __consumer_offsets: the generation and its
-- members with their subscriptions and assignments.
return {
  name = "GroupMetadataValue",
  versions = "0-3",
  fields = {
    { "protocol_type", "string" },
    { "generation", "int32" },
    { "protocol", "string", null = "0+" },
    { "leader", "string", null = "0+" },
    { "current_state_timestamp", "int64", v = "2+", default = -1 },
    { "members", "[]", fields = {
        { "member_id", "string" },
        { "group_instance_id", "string", v = "3+", null = "3+", default = "null" },
        { "client_id", "string" },
        { "client_host", "string" },
        { "rebalance_timeout", "int32", v = "1+", default = 0 },
        { "session_timeout", "int32" },
        { "subscription", "bytes" },
        { "assignment", "bytes" },
    } },
  },
}
