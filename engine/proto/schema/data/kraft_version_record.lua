-- Value of KRaft control record type 5 (KRAFT_VERSION): the kraft.version
-- feature level the quorum runs at (KIP-853). Its version is its own first
-- field; no int16 version precedes it.
return {
  name = "KRaftVersionRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "version", "int16" },
    { "kraft_version", "int16" },
  },
}
