-- Value of KRaft control record type 2 (LEADER_CHANGE): the first record a
-- new leader of the metadata log writes in its epoch, naming the voters and
-- those that elected it. Unlike the metadata records no int16 version
-- precedes it: the version is its own first field, and the reader must know
-- which schema version was written (Kafka's control records use a fixed
-- one, 0 as of Kafka 4.0). Version 1 adds the voters' directory ids
-- (KIP-853).

-- One voter of the quorum.
local voter = {
  { "voter_id", "int32" },
  { "voter_directory_id", "uuid", v = "1+" },
}

return {
  name = "LeaderChangeMessage",
  versions = "0-1",
  flexible = "0+",
  fields = {
    { "version", "int16" },
    { "leader_id", "int32" },
    { "voters", "[]", fields = voter }, -- the quorum in this epoch
    { "granting_voters", "[]", fields = voter }, -- those that voted for the leader
  },
}
