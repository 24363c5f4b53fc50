-- RemoveRaftVoter (81): 0. An admin (kafka-metadata-quorum
-- remove-controller) asks the KRaft leader to drop a voter, named by id and
-- directory id, from the voter set (KIP-853). Flexible from v0.

return {
  key = 81, name = "RemoveRaftVoter",
  versions = "0",
  flexible = "0+",
  request = {
    { "cluster_id", "string", null = "0+" },
    { "voter_id", "int32" },
    { "voter_directory_id", "uuid" },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+" },
  },
}
