-- Value of a share-partition's snapshot (KIP-932): its start offset and the
-- state of each in-flight record in runs (0 Available, 2 Acknowledged, 4
-- Archived; an acquired record is stored Available with its delivery
-- count), as Kafka 4.4's share coordinator writes it.
return {
  name = "ShareSnapshotValue",
  versions = "0",
  flexible = "0+",
  fields = {
    { "snapshot_epoch", "int32" },
    { "state_epoch", "int32" },
    { "leader_epoch", "int32" },
    { "start_offset", "int64" },
    { "create_timestamp", "int64" },
    { "write_timestamp", "int64" },
    { "state_batches", "[]", fields = {
        { "first_offset", "int64" },
        { "last_offset", "int64" },
        { "delivery_state", "int8" },
        { "delivery_count", "int16" },
    } },
    { "delivery_complete_count", "int32", tag = 0, tagged = "0+" },
  },
}
