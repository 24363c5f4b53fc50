-- Vote (52): 0-2. A KRaft candidate asks the controller quorum's voters
-- for their vote in a new epoch (KIP-595); a voter grants it when the
-- candidate's log is at least as long as its own. v1 names both replicas
-- by id and directory id and answers with the leader's endpoints (KIP-853);
-- v2 adds pre_vote, a trial round that bumps no epoch (KIP-996). Between
-- controllers only, never advertised to clients. Flexible from v0.

return {
  key = 52, name = "Vote",
  versions = "0-2",
  flexible = "0+",
  request = {
    { "cluster_id", "string", null = "0+", default = "null" },
    { "voter_id", "int32", v = "1+", default = -1 }, -- the voter asked
    { "topics", "[]", fields = {
        { "topic_name", "string" },
        { "partitions", "[]", fields = {
            { "partition_index", "int32" },
            { "replica_epoch", "int32" }, -- the candidate's bumped epoch
            { "replica_id", "int32" }, -- the candidate
            { "replica_directory_id", "uuid", v = "1+" },
            { "voter_directory_id", "uuid", v = "1+" },
            { "last_offset_epoch", "int32" }, -- of the candidate's last record
            { "last_offset", "int64" }, -- the candidate's log end offset
            { "pre_vote", "bool", v = "2+" },
        } },
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
            { "vote_granted", "bool" },
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
