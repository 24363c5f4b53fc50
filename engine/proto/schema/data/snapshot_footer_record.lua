-- Value of KRaft control record type 4 (SNAPSHOT_FOOTER): the last record
-- of a metadata snapshot, marking it complete (KIP-630). Its version is
-- its own first field; no int16 version precedes it.
return {
  name = "SnapshotFooterRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "version", "int16" },
  },
}
