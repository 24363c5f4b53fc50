-- EndQuorumEpoch (54): 0-1. A KRaft leader that resigns (shutting down, or
-- no longer a voter) asks the quorum's voters to start an election at once
-- rather than wait out their fetch timeout (KIP-595), listing the voters it
-- would prefer as candidates. v1 is flexible, names those candidates by id
-- and directory id instead of id alone, and carries the leader's endpoints
-- (KIP-853). Between controllers only, never advertised to clients.

return {
  key = 54, name = "EndQuorumEpoch",
  versions = "0-1",
  flexible = "1+",
  request = {
    { "cluster_id", "string", null = "0+", default = "null" },
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "leader_id", "int32" }, -- the leader resigning
            { "leader_epoch", "int32" },
            { "preferred_successors", "[]int32", v = "0" }, -- best first
            { "preferred_candidates", "[]", v = "1+", fields = { -- best first
                { "candidate_id", "int32" },
                { "candidate_directory_id", "uuid" },
            } },
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
