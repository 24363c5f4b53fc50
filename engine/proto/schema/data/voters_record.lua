-- Value of KRaft control record type 6 (KRAFT_VOTERS): the whole voter set
-- of the controller quorum from this offset on, each voter with its
-- endpoints and the kraft.version range it supports (KIP-853). Its version
-- is its own first field; no int16 version precedes it.
return {
  name = "VotersRecord",
  versions = "0",
  flexible = "0+",
  fields = {
    { "version", "int16" },
    { "voters", "[]", fields = {
        { "voter_id", "int32" },
        { "voter_directory_id", "uuid" },
        { "endpoints", "[]", fields = {
            { "name", "string" }, -- listener name
            { "host", "string" },
            { "port", "uint16" },
        } },
        { "kraft_version_feature", "struct", fields = {
            { "min_supported_version", "int16" },
            { "max_supported_version", "int16" },
        } },
    } },
  },
}
