-- Value of KRaft control record type 3 (SNAPSHOT_HEADER): the first record
-- of a metadata snapshot (KIP-630). Its version is its own first field; no
-- int16 version precedes it.
return {
  name = "SnapshotHeaderRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "version", "int16" },
    -- append time of the last log record the snapshot contains
    { "last_contained_log_timestamp", "int64" },
  },
}
