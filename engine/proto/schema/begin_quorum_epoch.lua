-- BeginQuorumEpoch (53): 0-1. A newly elected KRaft leader tells the
-- quorum's voters of its epoch (KIP-595), so they stop their elections and
-- fetch from it. v1 is flexible, names the receiving voter by id and
-- directory id and carries the leader's endpoints (KIP-853). Between
-- controllers only, never advertised to clients.

return {
  key = 53, name = "BeginQuorumEpoch",
  versions = "0-1",
  flexible = "1+",
  request = {
    { "cluster_id", "string", null = "0+", default = "null" },
    { "voter_id", "int32", v = "1+", default = -1 }, -- the voter told
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "voter_directory_id", "uuid", v = "1+" },
            { "leader_id", "int32" }, -- the new leader
            { "leader_epoch", "int32" },
        } },
    } },
    { "leader_endpoints", "[]", v = "1+", fields = {
        { "name", "string" }, -- listener name
        { "host", "string" },
        { "port", "uint16" },
    } },
  },
  response = {
    { "error_code", "int16" },
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "error_code", "int16" },
            { "leader_id", "int32" }, -- -1 when unknown
            { "leader_epoch", "int32" },
        } },
    } },
    -- the leaders named in partitions
    { "node_endpoints", "[]", v = "1+", tag = 0, tagged = "1+", fields = {
        { "node_id", "int32" },
        { "host", "string" },
        { "port", "uint16" },
    } },
  },
}
