-- Key of a record in __transaction_state (after its int16 version, 0): the
-- transactional id the value describes; a null value deletes it.
return {
  name = "TransactionLogKey",
  versions = "0",
  fields = {
    { "transactional_id", "string" },
  },
}
