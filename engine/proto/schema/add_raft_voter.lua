-- AddRaftVoter (80): 0. An admin (kafka-metadata-quorum add-controller)
-- asks the KRaft leader to make an observing controller a voter, naming it
-- by id and directory id with its listeners (KIP-853). The leader answers
-- once the new voter set is committed or the timeout passes. Flexible
-- from v0.

return {
  key = 80, name = "AddRaftVoter",
  versions = "0",
  flexible = "0+",
  request = {
    { "cluster_id", "string", null = "0+" },
    { "timeout_ms", "int32" },
    { "voter_id", "int32" },
    { "voter_directory_id", "uuid" },
    { "listeners", "[]", fields = {
        { "name", "string" },
        { "host", "string" },
        { "port", "uint16" },
    } },
  },
  response = {
    { "throttle_time_ms", "int32" },
    { "error_code", "int16" },
    { "error_message", "string", null = "0+" },
  },
}
