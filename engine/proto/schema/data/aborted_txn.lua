-- An entry of a segment's .txnindex (after its int16 version, 0): one
-- aborted transaction, from its producer's first offset in the segment's
-- log to its abort marker, and the last stable offset once it ended.
return {
  name = "AbortedTxn",
  versions = "0",
  fields = {
    { "producer_id", "int64" },
    { "first_offset", "int64" },
    { "last_offset", "int64" },
    { "last_stable_offset", "int64" },
  },
}
