-- UpdateRaftVoter (82): 0. A KRaft voter tells the leader its current
-- listeners and the kraft.version range it supports, after starting up
-- with new ones (KIP-853); the leader writes them to the voter set. The
-- response names the current leader when the request went elsewhere.
-- Between controllers only, never advertised to clients. Flexible from v0.

return {
  key = 82, name = "UpdateRaftVoter",
  versions = "0",
  flexible = "0+",
  request = {
    { "cluster_id", "string", null = "0+" },
    { "current_leader_epoch", "int32" }, -- -1 when unknown
    { "voter_id", "int32" },
    { "voter_directory_id", "uuid" },
    { "listeners", "[]", fields = {
        { "name", "string" },
        { "host", "string" },
        { "port", "uint16" },
    } },
    { "kraft_version_feature", "struct", fields = {
        { "min_supported_version", "int16" },
        { "max_supported_version", "int16" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "current_leader", "struct", tag = 0, tagged = "0+", fields = {
        { "leader_id", "int32", default = -1 },
        { "leader_epoch", "int32", default = -1 },
        { "host", "string" },
        { "port", "int32" }, -- int32 here, unlike the listeners' uint16
    } },
  },
}
