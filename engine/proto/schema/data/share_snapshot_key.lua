-- Key of a share-partition's snapshot in __share_group_state (KIP-932;
-- key version 0, the record type: ShareSnapshot): which group's state of
-- which partition.
return {
  name = "ShareSnapshotKey",
  versions = "0",
  fields = {
    { "group_id", "string" },
    { "topic_id", "uuid" },
    { "partition", "int32" },
  },
}
