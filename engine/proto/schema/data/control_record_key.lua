-- Key of a control record (after its int16 version, 0): its type, 0 ABORT
-- and 1 COMMIT for transaction markers (2.. are KRaft's own).
return {
  name = "ControlRecordKey",
  versions = "0",
  fields = {
    { "type", "int16" },
  },
}
